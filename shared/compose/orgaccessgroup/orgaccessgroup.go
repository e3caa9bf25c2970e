// Package orgaccessgroup composes the "orgaccess" route group:
// organization SSO settings, default SSO settings, invites, members, SSO
// sign-in decisions, SCIM tokens and the audit trail.
package orgaccessgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/orgaccess"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        orgaccess.Routes.Name,
	Description: orgaccess.Routes.Description,
	Routes:      orgaccess.Routes.Specs(),
	Uses:        compose.Uses{Indexes: []string{"gsi1", "gsi2"}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		h := orgaccess.NewHandler(NewService(p), nil)
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, orgaccess.Routes, h, e) }}, nil
	},
}

// NewService builds the organization-access service over p (SCIM
// provisions through it too).
func NewService(p *compose.Platform) *orgaccess.Service {
	return orgaccess.New(p.Store, p.Identity, orgaccess.Options{
		SelfHosted:           p.Config.SelfHosted,
		SelfHostedJITEnabled: p.Config.SelfHostedJITEnabled,
	})
}
