// Package threadsgroup composes the "threads" route group: the thread API
// under each deployment URL, its garbage collection and TTL sweep, and the
// consumer that removes a deleted deployment's threads.
package threadsgroup

import (
	"context"
	"errors"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        threads.Routes.Name,
	Description: threads.Routes.Description,
	Routes:      threads.Routes.Specs(),
	Consumes:    []string{threads.TopicGC, deployments.TopicDeleted},
	Publishes:   []string{threads.TopicGC},
	Sweeps:      true,
	Uses:        compose.Uses{Indexes: []string{"gsi1", "gsi2", "gsi3", "gsi4", "gsi5"}, Blobs: true},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		o := threads.Options{Store: p.Store, Blobs: p.Blobs, Queue: p.Queue, Logger: p.Log}
		if _, embedded := p.Store.(*boltstore.Store); embedded {
			// The embedded store commits one transaction at a time, so
			// spreading counts buys nothing there, and one counter item
			// per count means fewer pages per commit (docs/performance.md).
			// Over DynamoDB (also a local process's, in tests) counts
			// stay spread.
			o.CounterShards = 1
		}
		svc, err := threads.New(o)
		if err != nil {
			return nil, err
		}
		// Every thread request resolves its deployment: served targets
		// are cached, dropped at once when this process's control plane
		// writes the deployment (local server), within the TTL otherwise.
		tg := deployments.NewCachedTargets(p.Store, p.Config.CacheFor())
		p.Changes.OnDeployment(tg.Invalidate)
		h := threads.NewHandler(svc, targets{tg}, p.Identity)
		return &compose.Module{
			Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, threads.Routes, h, e) },
			Consumers: map[string]compose.Consumer{
				threads.TopicGC:          svc.HandleGC,
				deployments.TopicDeleted: svc.HandleDeploymentDeleted,
			},
			Sweep: svc.Sweep,
		}, nil
	},
}

// targets adapts the control plane's deployment reader to the thread
// API's Resolver.
type targets struct{ t *deployments.Targets }

func (t targets) ThreadTarget(ctx context.Context, id string) (threads.Target, error) {
	d, err := t.t.ThreadTarget(ctx, id)
	if errors.Is(err, deployments.ErrDeploymentNotFound) {
		return threads.Target{}, threads.ErrDeploymentNotFound
	}
	if err != nil {
		return threads.Target{}, err
	}
	return threads.Target{DeploymentID: d.DeploymentID, WorkspaceID: d.WorkspaceID, Status: d.Status,
		ActiveRevisionID: d.ActiveRevisionID, Graphs: d.Graphs,
		FailedRevisionID: d.FailedRevisionID, FailedRevisionStatus: d.FailedRevisionStatus}, nil
}
