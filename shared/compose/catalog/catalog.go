// Package catalog lists every route group. The local all-in-one server
// builds them all; the CDK app, the OpenAPI document and the docs read
// their declarations. Lambda functions never import it: each links only its
// own group's package.
package catalog

import (
	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/billinggroup"
	"github.com/agentplane/agentplane/shared/compose/buildgroup"
	"github.com/agentplane/agentplane/shared/compose/controlplanegroup"
	"github.com/agentplane/agentplane/shared/compose/datasetsgroup"
	"github.com/agentplane/agentplane/shared/compose/mcpgroup"
	"github.com/agentplane/agentplane/shared/compose/orgaccessgroup"
	"github.com/agentplane/agentplane/shared/compose/platformgroup"
	"github.com/agentplane/agentplane/shared/compose/promptsgroup"
	"github.com/agentplane/agentplane/shared/compose/scimgroup"
	"github.com/agentplane/agentplane/shared/compose/threadsgroup"
	"github.com/agentplane/agentplane/shared/compose/tracinggroup"
	"github.com/agentplane/agentplane/shared/compose/uigroup"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/openapi"
)

// Groups returns every group, in build order.
func Groups() []compose.Group {
	return []compose.Group{
		platformgroup.Group,
		controlplanegroup.Group,
		buildgroup.Group,
		threadsgroup.Group,
		orgaccessgroup.Group,
		scimgroup.Group,
		tracinggroup.Group,
		datasetsgroup.Group,
		promptsgroup.Group,
		billinggroup.Group,
		mcpgroup.Group,
		uigroup.Group,
	}
}

// Lookup returns the group with that name.
func Lookup(name string) (compose.Group, bool) {
	for _, g := range Groups() {
		if g.Name == name {
			return g, true
		}
	}
	return compose.Group{}, false
}

// Routes returns every route of the platform API (groups with their own
// host, the tool server, are served elsewhere: see their Group).
func Routes() []api.Spec {
	var out []api.Spec
	for _, g := range Groups() {
		if g.Host == "" {
			out = append(out, g.Routes...)
		}
	}
	return out
}

// Consumer returns the group that consumes topic.
func Consumer(topic string) (compose.Group, bool) {
	for _, g := range Groups() {
		for _, t := range g.Consumes {
			if t == topic {
				return g, true
			}
		}
	}
	return compose.Group{}, false
}

// OpenAPI is the OpenAPI document of every route, from the declarations.
func OpenAPI() ([]byte, error) {
	var tags []openapi.Tag
	for _, g := range Groups() {
		if len(g.Routes) > 0 && g.Host == "" {
			tags = append(tags, openapi.Tag{Name: g.Name, Description: g.Description})
		}
	}
	return openapi.Build(openapi.Info{
		Title: "agentplane",
		// The control plane's interface description carries 0.1.0.
		Version: "0.1.0",
		Description: "The deployment control plane, organization access (SSO, invites, SCIM), the thread API of " +
			"deployed agent servers, the tracing platform (runs, projects, feedback, datasets, prompts) and the " +
			"admin API. Errors are {\"detail\": ...}; validation errors are 422 with loc, msg and type.",
	}, tags, Routes())
}
