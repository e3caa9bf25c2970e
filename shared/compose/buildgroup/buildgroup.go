// Package buildgroup composes the "build" group: it serves no routes; it
// runs the steps of the revision build workflow (the state machine's tasks
// in AWS, the local runner's steps in the all-in-one server).
package buildgroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/controlplanegroup"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        "build",
	Description: "the steps of the revision build workflow: fetch, validate, build, package, deploy",
	Publishes:   []string{deployments.TopicBuild, deployments.TopicDelete, deployments.TopicDeleted},
	Uses:        compose.Uses{Indexes: []string{"gsi1", "gsi2"}, Blobs: true, Secrets: true, RunsSteps: true},
	Build: func(ctx context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := controlplanegroup.NewService(ctx, p)
		if err != nil {
			return nil, err
		}
		b, err := builds.New(builds.Deps{
			Revisions:     svc,
			Blobs:         p.Blobs,
			DeploymentURL: func(id string) string { return deployments.DeploymentURL(p.Config.BaseURL, id) },
			Logger:        p.Log,
		})
		if err != nil {
			return nil, err
		}
		return &compose.Module{Workflows: []workflow.Definition{b.Definition()}}, nil
	},
}
