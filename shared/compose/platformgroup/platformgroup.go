// Package platformgroup composes the "platform" route group: /health and
// the admin API of the identity domain.
package platformgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        identity.Routes.Name,
	Description: identity.Routes.Description,
	Routes:      identity.Routes.Specs(),
	Uses:        compose.Uses{Indexes: []string{identity.OrganizationsIndex}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, identity.Routes, p.Identity, e) }}, nil
	},
}
