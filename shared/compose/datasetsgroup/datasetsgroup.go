// Package datasetsgroup composes the "datasets" route group: datasets and
// their versioned examples, and the consumer that keeps each dataset's
// experiment counts from the tracing domain's events.
package datasetsgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        datasets.Routes.Name,
	Description: datasets.Routes.Description,
	Routes:      datasets.Routes.Specs(),
	Consumes:    []string{datasets.TopicExperiment},
	Sweeps:      true,
	Uses:        compose.Uses{Indexes: []string{"gsi1"}},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := datasets.New(datasets.Options{Store: p.Store, Logger: p.Log})
		if err != nil {
			return nil, err
		}
		h := datasets.NewHandler(svc)
		return &compose.Module{
			Mount:     func(mux *web.Mux, e api.Edge) { api.Mount(mux, datasets.Routes, h, e) },
			Consumers: map[string]compose.Consumer{datasets.TopicExperiment: svc.HandleExperiment},
			Sweep:     svc.Sweep,
		}, nil
	},
}
