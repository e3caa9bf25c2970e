package server

import "github.com/agentplane/agentplane/shared/domains/orgaccess"

// The orgaccess group: organization SSO settings, default SSO settings,
// invites, members, SSO sign-in decisions, SCIM tokens and the audit trail.
// Its Service is what the scim module provisions through.
func init() {
	RegisterModule("orgaccess", func(d *Deps) (*Module, error) {
		svc := orgaccess.New(d.Store, d.Identity, orgaccess.Options{
			SelfHosted:           d.Config.SelfHosted,
			SelfHostedJITEnabled: d.Config.SelfHostedJITEnabled,
		})
		return &Module{Group: "orgaccess", Register: orgaccess.NewHandler(svc, nil).Register, Service: svc}, nil
	})
}
