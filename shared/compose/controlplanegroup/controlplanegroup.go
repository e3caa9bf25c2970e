// Package controlplanegroup composes the "controlplane" route group: the
// deployments API, the consumers that start builds and purge deleted
// deployments, and the control plane's sweep.
package controlplanegroup

import (
	"os"

	"context"
	"encoding/json"
	"errors"
	"github.com/agentplane/agentplane/shared/kernel/awsenv"
	"log/slog"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        deployments.Routes.Name,
	Description: deployments.Routes.Description,
	Routes:      deployments.Routes.Specs(),
	Consumes:    []string{deployments.TopicBuild, deployments.TopicDelete},
	Publishes: []string{deployments.TopicBuild, deployments.TopicDelete, deployments.TopicDeleted,
		deployments.TopicProjectEnsure, deployments.TopicProjectRelease},
	Sweeps: true,
	Uses: compose.Uses{
		Indexes:         []string{"gsi1", "gsi2", "gsi3"},
		Blobs:           true,
		Secrets:         true,
		StartsWorkflows: []string{builds.WorkflowName},
	},
	Build: build,
}

// NewService builds the control plane's service over p (the build step
// runner needs it too).
func NewService(ctx context.Context, p *compose.Platform) (*deployments.Service, error) {
	keeper, err := p.Keeper(ctx)
	if err != nil {
		return nil, err
	}
	c := p.Config
	local := c.Mode == compose.ModeLocal
	return deployments.New(deployments.Options{
		Store: p.Store, Blobs: p.Blobs, Queue: p.Queue, Keeper: keeper,
		BaseURL:         c.BaseURL,
		AllowLocalRepos: c.AllowLocalRepos,
		WebhookSecret:   c.WebhookSecret,
		// The local all-in-one server stands in for both offerings.
		RepoHost:          local || !c.SelfHosted,
		ExternalContainer: local || c.SelfHosted,
		Listeners:         local || c.SelfHosted,
		Logger:            p.Log,
		Changes:           p.Changes,
	})
}

func build(ctx context.Context, p *compose.Platform) (*compose.Module, error) {
	svc, err := NewService(ctx, p)
	if err != nil {
		return nil, err
	}
	starter := p.Workflows
	if p.Config.Mode == compose.ModeAWS {
		starter = sfnstart.New(sfnstart.NewClient(*p.AWS, awsenv.Endpoint(os.Getenv, "SFN")), p.Config.StateMachines)
	}
	h := deployments.NewHandler(svc)
	m := &compose.Module{
		Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, deployments.Routes, h, e) },
		Consumers: map[string]compose.Consumer{
			deployments.TopicBuild: func(ctx context.Context, raw json.RawMessage) error {
				var m deployments.BuildMessage
				if err := json.Unmarshal(raw, &m); err != nil || m.RevisionID == "" || m.DeploymentID == "" {
					p.Log.Error("controlplane: dropping malformed build message")
					return nil
				}
				// The revision id is the execution id: starting it twice
				// is a no-op, so redelivered messages are harmless.
				err := starter.Start(ctx, builds.WorkflowName, m.RevisionID, builds.Input(m.DeploymentID, m.RevisionID))
				if errors.Is(err, workflow.ErrInvalid) {
					p.Log.Error("controlplane: build cannot start", slog.String("revision_id", m.RevisionID), slog.String("error", err.Error()))
					return nil
				}
				return err
			},
			deployments.TopicDelete: func(ctx context.Context, raw json.RawMessage) error {
				var m deployments.DeleteMessage
				if err := json.Unmarshal(raw, &m); err != nil || m.DeploymentID == "" {
					p.Log.Error("controlplane: dropping malformed delete message")
					return nil
				}
				return svc.Purge(ctx, m.DeploymentID)
			},
		},
		Sweep: svc.Sweep,
	}
	if p.Config.Mode == compose.ModeLocal {
		// The local queue lives in memory: after a restart, put unfinished
		// revisions and deletions back on it.
		m.Background = append(m.Background, svc.Recover)
	}
	return m, nil
}
