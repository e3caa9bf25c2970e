package compose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/local"
)

// Process is the modules of some groups built over one Platform: the local
// all-in-one server (every group) or one Lambda function (one group).
type Process struct {
	P         *Platform
	groups    []Group
	mods      []*Module
	defs      []workflow.Definition
	consumers map[string]Consumer
	edge      api.Edge
	resume    func(context.Context) (int, error)
}

// Build builds groups over p, in order. On error the modules built so far
// are closed (p is left open).
func Build(ctx context.Context, p *Platform, groups ...Group) (*Process, error) {
	pr := &Process{P: p, consumers: map[string]Consumer{}, edge: api.Edge{Auth: p.Identity}}
	for _, g := range groups {
		if g.Uses.Blobs && p.Blobs == nil {
			pr.closeModules()
			return nil, fmt.Errorf("compose: group %s uses blobs, but this process has no bucket (AGENTPLANE_BUCKET)", g.Name)
		}
		m, err := g.Build(ctx, p)
		if err != nil {
			pr.closeModules()
			return nil, fmt.Errorf("compose: group %s: %w", g.Name, err)
		}
		pr.groups = append(pr.groups, g)
		pr.mods = append(pr.mods, m)
		for topic, c := range m.Consumers {
			if _, dup := pr.consumers[topic]; dup {
				pr.closeModules()
				return nil, fmt.Errorf("compose: two consumers of topic %s", topic)
			}
			pr.consumers[topic] = c
		}
		pr.defs = append(pr.defs, m.Workflows...)
	}
	if p.starter != nil {
		runner := local.New(p.Store, pr.defs...)
		runner.SetLogger(p.Log)
		// Closed before the store (closers run in reverse).
		p.closers = append(p.closers, runner.Close)
		p.starter.set(runner)
		pr.resume = runner.Resume
	}
	return pr, nil
}

// WrapEdge adds w around every route (after authentication): rate limits,
// region routing.
func (pr *Process) WrapEdge(w func(api.Spec, http.Handler) http.Handler) { pr.edge.Wrap = w }

// Groups returns the groups built.
func (pr *Process) Groups() []Group { return pr.groups }

// Mux returns a mux with every group's routes behind the edge.
func (pr *Process) Mux() *web.Mux {
	mux := web.NewMux()
	for i, m := range pr.mods {
		if m.Mount != nil && pr.groups[i].Host == "" {
			m.Mount(mux, pr.edge)
		}
	}
	return mux
}

// Handler is Mux with the kernel's middleware: request ids and access
// logs, panic recovery, the body limit, and the rate limits (every request
// counted before it is routed, so unknown paths are limited too).
func (pr *Process) Handler() http.Handler {
	var h http.Handler = pr.Mux()
	if pr.P.Limits != nil {
		h = pr.P.Limits.Handler(h)
	}
	return Middleware(h, pr.P.Log)
}

// Middleware wraps h with what every HTTP entry point runs.
func Middleware(h http.Handler, log *slog.Logger) http.Handler {
	return web.Chain(h, web.Observe(log), web.MaxBody(web.MaxBodyBytes))
}

// HandleMessage dispatches one queue message to its topic's consumer.
// Malformed messages and unknown topics can never succeed: they are logged
// and dropped rather than cycled to the dead-letter queue.
func (pr *Process) HandleMessage(ctx context.Context, body []byte) error {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Topic == "" {
		pr.P.Log.Error("dropping malformed queue message", slog.Int("bytes", len(body)))
		return nil
	}
	c, ok := pr.consumers[env.Topic]
	if !ok {
		pr.P.Log.Error("dropping queue message with unknown topic", slog.String("topic", env.Topic))
		return nil
	}
	return c(ctx, env.Payload)
}

// StepPayload is what a state machine's task sends to the step runner.
type StepPayload struct {
	Workflow string         `json:"workflow"`
	Step     string         `json:"step"`
	State    workflow.State `json:"state"`
}

// RunStep runs one workflow step and returns the next state.
func (pr *Process) RunStep(ctx context.Context, payload []byte) ([]byte, error) {
	var sp StepPayload
	if err := json.Unmarshal(payload, &sp); err != nil {
		return nil, fmt.Errorf("compose: step payload: %w", err)
	}
	for _, d := range pr.defs {
		if d.Name != sp.Workflow {
			continue
		}
		st, ok := d.Step(sp.Step)
		if !ok || st.Run == nil {
			return nil, fmt.Errorf("compose: workflow %s has no step %s", sp.Workflow, sp.Step)
		}
		out, err := st.Run(ctx, sp.State)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	return nil, fmt.Errorf("compose: unknown workflow %s", sp.Workflow)
}

// Workflows returns the definitions the modules run.
func (pr *Process) Workflows() []workflow.Definition { return pr.defs }

// Sweep runs every module's periodic maintenance once.
func (pr *Process) Sweep(ctx context.Context) error {
	var errs []error
	for i, m := range pr.mods {
		if m.Sweep != nil {
			if err := m.Sweep(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", pr.groups[i].Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// SweepInterval is how often the local process sweeps.
var SweepInterval = 30 * time.Second

// RunBackground runs the local process's background work until ctx ends:
// the in-process queue consumer, resumption of unfinished workflow
// executions, module loops and the periodic sweep.
func (pr *Process) RunBackground(ctx context.Context) error {
	var wg sync.WaitGroup
	log := pr.P.Log
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				log.Error("background task failed", slog.String("task", name), slog.String("error", err.Error()))
			}
		}()
	}
	if lq := pr.P.local; lq != nil {
		run("queue", func(ctx context.Context) error {
			return lq.q.Consume(ctx, func(ctx context.Context, m queue.Message) error { return pr.HandleMessage(ctx, m.Body) })
		})
	}
	if pr.resume != nil {
		run("workflow-resume", func(ctx context.Context) error {
			n, err := pr.resume(ctx)
			if n > 0 {
				log.Info("resumed unfinished workflow executions", slog.Int("count", n))
			}
			return err
		})
	}
	for i, m := range pr.mods {
		for _, f := range m.Background {
			run(pr.groups[i].Name, f)
		}
	}
	run("sweep", func(ctx context.Context) error {
		t := time.NewTicker(SweepInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				if err := pr.Sweep(ctx); err != nil && ctx.Err() == nil {
					log.Error("sweep failed", slog.String("error", err.Error()))
				}
			}
		}
	})
	<-ctx.Done()
	wg.Wait()
	return nil
}

func (pr *Process) closeModules() error {
	var errs []error
	for i := len(pr.mods) - 1; i >= 0; i-- {
		if c := pr.mods[i].Close; c != nil {
			errs = append(errs, c())
		}
	}
	pr.mods = nil
	return errors.Join(errs...)
}

// Close releases the modules and the platform.
func (pr *Process) Close() error {
	return errors.Join(pr.closeModules(), pr.P.Close())
}
