// Package scimgroup composes the "scim" route group: SCIM 2.0 at /scim/v2
// over the organization-access service.
package scimgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/orgaccessgroup"
	"github.com/agentplane/agentplane/shared/domains/scim"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        scim.Routes.Name,
	Description: scim.Routes.Description,
	Routes:      scim.Routes.Specs(),
	Uses:        compose.Uses{Indexes: []string{"gsi1", "gsi2"}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		s := scim.New(orgaccessgroup.NewService(p))
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, scim.Routes, s, e) }}, nil
	},
}
