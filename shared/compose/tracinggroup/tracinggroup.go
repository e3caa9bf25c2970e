// Package tracinggroup composes the "tracing" route group: the
// LangSmith-compatible tracing API (run ingest and queries, projects,
// feedback, threads), its ingest consumer and its sweep.
package tracinggroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/agentplane/agentplane/shared/domains/prompts"
	"github.com/agentplane/agentplane/shared/domains/tracing"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        tracing.Routes.Name,
	Description: tracing.Routes.Description,
	Routes:      tracing.Routes.Specs(),
	Consumes:    []string{tracing.TopicIngest, tracing.TopicProjectEnsure, tracing.TopicProjectRelease, tracing.TopicPurge},
	Publishes:   []string{tracing.TopicIngest, tracing.TopicPurge, datasets.TopicExperiment, billing.TopicUsage},
	Sweeps:      true,
	Uses:        compose.Uses{Indexes: []string{"gsi1", "gsi2", "gsi3", "gsi4", "gsi5"}, Blobs: true},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := tracing.New(tracing.Options{
			Store: p.Store, Blobs: p.Blobs, Queue: p.Queue, Logger: p.Log,
			Workspace: func(ctx context.Context, id string) (tracing.WorkspaceInfo, error) {
				w, err := p.Identity.Workspace(ctx, id)
				if err != nil {
					return tracing.WorkspaceInfo{}, err
				}
				return tracing.WorkspaceInfo{ID: w.ID, OrganizationID: w.OrganizationID, DisplayName: w.DisplayName, CreatedAt: w.CreatedAt,
					Handle: prompts.Handle(w.ID)}, nil
			},
			// What this installation implements beyond runs: the JS SDK
			// needs this flag for createExamples/updateExamples.
			InstanceFlags: map[string]bool{"dataset_examples_multipart_enabled": true},
		})
		if err != nil {
			return nil, err
		}
		h := tracing.NewHandler(svc)
		return &compose.Module{
			Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, tracing.Routes, h, e) },
			Consumers: map[string]compose.Consumer{
				tracing.TopicIngest:         svc.HandleIngest,
				tracing.TopicProjectEnsure:  svc.HandleProjectEnsure,
				tracing.TopicProjectRelease: svc.HandleProjectRelease,
				tracing.TopicPurge:          svc.HandlePurge,
			},
			Sweep: svc.Sweep,
		}, nil
	},
}
