package server

// WIP (lead): replaced by the real queue/workflow/AWS wiring once the
// shared/queue and shared/workflow adapters land. Until then the queue and
// workflows answer errors rather than pretending to work.

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentplane/agentplane/shared/workflow"
)

var errNotWired = errors.New("server: queue and workflows are not wired yet")

func wireLocalQueueAndWorkflows(ctx context.Context, cfg Config, be *backend, log *slog.Logger) error {
	be.send = func(context.Context, []byte) error { return errNotWired }
	be.starter = func(defs []workflow.Definition) (workflow.Starter, error) { return nil, nil }
	return nil
}

func openAWS(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	return nil, errNotWired
}
