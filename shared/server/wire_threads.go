package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/domains/threads"
)

// The threads group: the thread API under each deployment URL. It asks the
// control plane about deployments (ThreadTarget) at request time, and the
// control plane calls its PurgeDeployment after deleting a deployment.
// Chains of deleted threads are collected through the queue, and by the
// sweep (which also applies thread TTLs) when a message is lost.
func init() {
	RegisterModule("threads", func(d *Deps) (*Module, error) {
		svc, err := threads.New(threads.Options{Store: d.Store, Blobs: d.Blobs, Queue: d.Queue, Logger: d.Logger})
		if err != nil {
			return nil, err
		}
		res := controlPlaneTargets{reg: d.Modules}
		return &Module{
			Group:     "threads",
			Register:  threads.NewHandler(svc, res, d.Identity).Register,
			Consumers: map[string]func(context.Context, json.RawMessage) error{threads.TopicGC: svc.HandleGC},
			Sweep:     svc.Sweep,
			Service:   svc,
		}, nil
	}, "controlplane")
}

// controlPlaneTargets adapts the control plane's ThreadTarget to the
// threads package's Resolver.
type controlPlaneTargets struct{ reg *Registry }

func (c controlPlaneTargets) ThreadTarget(ctx context.Context, id string) (threads.Target, error) {
	cp, ok := c.reg.Service("controlplane").(*deployments.Service)
	if !ok || cp == nil {
		return threads.Target{}, fmt.Errorf("server: the control plane module is not available")
	}
	t, err := cp.ThreadTarget(ctx, id)
	if errors.Is(err, deployments.ErrDeploymentNotFound) {
		return threads.Target{}, threads.ErrDeploymentNotFound
	}
	if err != nil {
		return threads.Target{}, err
	}
	return threads.Target{DeploymentID: t.DeploymentID, WorkspaceID: t.WorkspaceID, Status: t.Status,
		ActiveRevisionID: t.ActiveRevisionID, Graphs: t.Graphs}, nil
}
