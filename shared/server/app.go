package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// App is a wired installation.
type App struct {
	cfg     Config
	deps    *Deps
	be      *backend
	order   []string
	modules map[string]*Module
	log     *slog.Logger

	// Bootstrapped is what the first start created (local mode).
	Bootstrapped identity.Bootstrapped
	starter      *lazyStarter
	defs         []workflow.Definition
}

// envelope is the queue message format: a topic routes it to a consumer.
type envelope struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
}

type queueSender struct{ be *backend }

func (q queueSender) Enqueue(ctx context.Context, topic string, payload any) error {
	p, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("server: encode %s message: %w", topic, err)
	}
	body, _ := json.Marshal(envelope{Topic: topic, Payload: p})
	return q.be.send(ctx, body)
}

// lazyStarter lets modules hold a Starter before the runner exists (the
// runner needs every module's definitions).
type lazyStarter struct {
	mu sync.RWMutex
	s  workflow.Starter
}

func (l *lazyStarter) Start(ctx context.Context, wf, id string, in workflow.State) error {
	l.mu.RLock()
	s := l.s
	l.mu.RUnlock()
	if s == nil {
		return errors.New("server: workflows are not ready")
	}
	return s.Start(ctx, wf, id, in)
}

// NewLogger returns the JSON logger at cfg.LogLevel.
func NewLogger(cfg Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// New opens the adapters for cfg.Mode and builds every module.
func New(ctx context.Context, cfg Config) (*App, error) {
	return NewWithLogger(ctx, cfg, NewLogger(cfg))
}

// NewWithLogger is New with a given logger (tests pass a quiet one).
func NewWithLogger(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	be, err := openBackend(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, be: be, modules: map[string]*Module{}, log: log, starter: &lazyStarter{}}
	a.deps = &Deps{
		Config:    cfg,
		Store:     be.store,
		Blobs:     be.blobs,
		Identity:  identity.New(be.store),
		Queue:     queueSender{be: be},
		Workflows: a.starter,
		Logger:    log,
		Modules:   &Registry{services: map[string]any{}},
	}
	if a.order, err = buildOrder(); err != nil {
		be.close()
		return nil, err
	}
	var defs []workflow.Definition
	for _, name := range a.order {
		m, err := factories[name](a.deps)
		if err != nil {
			a.Close()
			return nil, fmt.Errorf("server: module %s: %w", name, err)
		}
		a.modules[name] = m
		a.deps.Modules.mu.Lock()
		a.deps.Modules.services[name] = m.Service
		a.deps.Modules.mu.Unlock()
		defs = append(defs, m.Workflows...)
	}
	s, err := be.starter(defs)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.starter.mu.Lock()
	a.starter.s = s
	a.starter.mu.Unlock()
	a.defs = defs
	return a, nil
}

// Bootstrap runs identity bootstrap (default organization, workspace and
// admin key) and records the result.
func (a *App) Bootstrap(ctx context.Context) (identity.Bootstrapped, error) {
	b, err := a.deps.Identity.Bootstrap(ctx, a.cfg.BootstrapAPIKey)
	a.Bootstrapped = b
	return b, err
}

// Deps exposes the wiring (tests and the tool server use it).
func (a *App) Deps() *Deps { return a.deps }

func (a *App) wrap(mux *web.Mux) http.Handler {
	return web.Chain(mux, web.Observe(a.log), web.MaxBody(web.MaxBodyBytes))
}

// Handler serves every route group (the local all-in-one server).
func (a *App) Handler() http.Handler {
	mux := web.NewMux()
	for _, name := range a.order {
		if m := a.modules[name]; m.Register != nil {
			m.Register(mux)
		}
	}
	return a.wrap(mux)
}

// GroupHandler serves one route group (one Lambda function).
func (a *App) GroupHandler(group string) (http.Handler, error) {
	mux, err := a.groupMux(group)
	if err != nil {
		return nil, err
	}
	return a.wrap(mux), nil
}

// GroupPatterns lists the "METHOD /path" patterns a group's handler serves.
func (a *App) GroupPatterns(group string) ([]string, error) {
	mux, err := a.groupMux(group)
	if err != nil {
		return nil, err
	}
	return mux.Patterns(), nil
}

// Groups lists the route groups the modules serve.
func (a *App) Groups() []string {
	var out []string
	for _, name := range a.order {
		if g := a.modules[name].Group; g != "" {
			out = append(out, g)
		}
	}
	return out
}

func (a *App) groupMux(group string) (*web.Mux, error) {
	mux := web.NewMux()
	found := false
	for _, name := range a.order {
		if m := a.modules[name]; m.Group == group && m.Register != nil {
			m.Register(mux)
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", ErrUnknownGroup, group)
	}
	return mux, nil
}

// HandleQueueMessage dispatches one queue message to its topic's consumer.
func (a *App) HandleQueueMessage(ctx context.Context, body []byte) error {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Topic == "" {
		// A malformed message can never succeed: drop it (logged) rather
		// than let it cycle to the dead-letter queue.
		a.log.Error("dropping malformed queue message", slog.Int("bytes", len(body)))
		return nil
	}
	for _, name := range a.order {
		if c, ok := a.modules[name].Consumers[env.Topic]; ok {
			return c(ctx, env.Payload)
		}
	}
	a.log.Error("dropping queue message with unknown topic", slog.String("topic", env.Topic))
	return nil
}

// stepPayload is what the state machine sends to the build-step function.
type stepPayload struct {
	Workflow string         `json:"workflow"`
	Step     string         `json:"step"`
	State    workflow.State `json:"state"`
}

// RunStep runs one workflow step (the Step Functions task function).
func (a *App) RunStep(ctx context.Context, payload []byte) ([]byte, error) {
	var p stepPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("server: step payload: %w", err)
	}
	for _, d := range a.defs {
		if d.Name != p.Workflow {
			continue
		}
		st, ok := d.Step(p.Step)
		if !ok || st.Run == nil {
			return nil, fmt.Errorf("server: workflow %s has no step %s", p.Workflow, p.Step)
		}
		out, err := st.Run(ctx, p.State)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	}
	return nil, fmt.Errorf("server: unknown workflow %s", p.Workflow)
}

// Workflows returns the definitions of every module.
func (a *App) Workflows() []workflow.Definition { return a.defs }

// Sweep runs every module's periodic maintenance once.
func (a *App) Sweep(ctx context.Context) error {
	var errs []error
	for _, name := range a.order {
		if s := a.modules[name].Sweep; s != nil {
			if err := s(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
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
func (a *App) RunBackground(ctx context.Context) error {
	var wg sync.WaitGroup
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				a.log.Error("background task failed", slog.String("task", name), slog.String("error", err.Error()))
			}
		}()
	}
	if a.be.consume != nil {
		run("queue", func(ctx context.Context) error { return a.be.consume(ctx, a.HandleQueueMessage) })
	}
	if a.be.resume != nil {
		run("workflow-resume", a.be.resume)
	}
	for _, name := range a.order {
		for _, f := range a.modules[name].Background {
			run(name, f)
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
				if err := a.Sweep(ctx); err != nil && ctx.Err() == nil {
					a.log.Error("sweep failed", slog.String("error", err.Error()))
				}
			}
		}
	})
	<-ctx.Done()
	wg.Wait()
	return nil
}

// Close releases modules and adapters.
func (a *App) Close() error {
	var errs []error
	for i := len(a.order) - 1; i >= 0; i-- {
		if m := a.modules[a.order[i]]; m != nil && m.Close != nil {
			errs = append(errs, m.Close())
		}
	}
	errs = append(errs, a.be.close())
	return errors.Join(errs...)
}
