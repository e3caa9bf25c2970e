package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/memqueue"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/local"
)

// wireLocalQueueAndWorkflows gives the local process an in-process queue and
// the local workflow runner. The queue is not durable: modules that enqueue
// work re-derive it from the store at start-up, and the runner resumes the
// executions it has persisted.
func wireLocalQueueAndWorkflows(_ context.Context, _ Config, be *backend, log *slog.Logger) error {
	q := memqueue.New(queue.Options{Logger: log, RetryDelay: time.Second})
	be.send = q.Send
	be.consume = func(ctx context.Context, handle func(ctx context.Context, body []byte) error) error {
		return q.Consume(ctx, func(ctx context.Context, m queue.Message) error { return handle(ctx, m.Body) })
	}
	var runner *local.Runner
	be.starter = func(defs []workflow.Definition) (workflow.Starter, error) {
		runner = local.New(be.store, defs...)
		runner.SetLogger(log)
		// Appended after the store, so it closes (stopping executions)
		// before the store does.
		be.closers = append(be.closers, runner.Close)
		return runner, nil
	}
	be.resume = func(ctx context.Context) error {
		if runner == nil {
			return nil
		}
		n, err := runner.Resume(ctx)
		if n > 0 {
			log.Info("resumed unfinished workflow executions", slog.Int("count", n))
		}
		return err
	}
	return nil
}
