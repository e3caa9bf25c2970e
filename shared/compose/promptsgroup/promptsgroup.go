// Package promptsgroup composes the "prompts" route group: prompt
// repositories and their commits.
package promptsgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/prompts"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        prompts.Routes.Name,
	Description: prompts.Routes.Description,
	Routes:      prompts.Routes.Specs(),
	Sweeps:      true,
	Uses:        compose.Uses{Indexes: []string{"gsi1"}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := prompts.New(prompts.Options{Store: p.Store, Logger: p.Log})
		if err != nil {
			return nil, err
		}
		h := prompts.NewHandler(svc)
		return &compose.Module{
			Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, prompts.Routes, h, e) },
			Sweep: svc.Sweep,
		}, nil
	},
}
