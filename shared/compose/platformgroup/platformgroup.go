// Package platformgroup composes the "platform" route group: /health, the
// admin API of the identity domain, and the interface description.
package platformgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/apidocs"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        identity.Routes.Name,
	Description: identity.Routes.Description,
	Routes:      append(identity.Routes.Specs(), apidocs.Routes.Specs()...),
	Uses:        compose.Uses{Indexes: []string{identity.OrganizationsIndex}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) {
			api.Mount(mux, identity.Routes, p.Identity, e)
			api.Mount(mux, apidocs.Routes, apidocs.Handler{}, e)
		}}, nil
	},
}
