// Package server wires adapters and domain modules into an App: the local
// all-in-one HTTP server, or one Lambda function's handler in AWS.
//
// Domain packages plug in through modules: each route group has a file
// wire_<group>.go here that calls RegisterModule in init, so adding a domain
// never edits this file.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Enqueuer sends a message to the background queue (SQS in AWS, in-process
// locally). Consumers are the Module.Consumers of the same topic.
type Enqueuer interface {
	Enqueue(ctx context.Context, topic string, payload any) error
}

// Deps are what modules are built from.
type Deps struct {
	Config   Config
	Store    store.Store
	Blobs    blobs.Bucket
	Identity *identity.Service
	// Queue delivers messages to Module.Consumers (at least once).
	Queue Enqueuer
	// Workflows starts executions of the definitions modules declare.
	Workflows workflow.Starter
	Logger    *slog.Logger
	// Modules lets a module reach another module's exported service
	// (e.g. threads asks the control plane about deployments). It is
	// filled before Start and valid only after New returns.
	Modules *Registry
}

// Module is one domain's contribution to the App.
type Module struct {
	// Group is the shared/routes group whose routes Register adds ("" for a
	// module without routes).
	Group string
	// Register adds the group's routes.
	Register func(mux *web.Mux)
	// Workflows are the definitions this module runs (the local runner
	// executes them; the CDK app turns them into state machines).
	Workflows []workflow.Definition
	// Consumers handle queue messages by topic.
	Consumers map[string]func(ctx context.Context, payload json.RawMessage) error
	// Background loops run in the local process (sweepers); each returns
	// when ctx ends.
	Background []func(ctx context.Context) error
	// Sweep runs one round of periodic maintenance (AWS: the scheduled
	// sweeper function; local: called by a background ticker).
	Sweep func(ctx context.Context) error
	// Service is the module's exported service, reachable by other modules
	// through Deps.Modules.Service(name).
	Service any
	// Close releases the module's resources.
	Close func() error
}

// Factory builds a module.
type Factory func(d *Deps) (*Module, error)

var (
	factoriesMu sync.Mutex
	factories   = map[string]Factory{}
	// order is the registration order by name; dependencies between
	// modules are declared with After.
	after = map[string][]string{}
)

// RegisterModule registers a module factory under name. deps names modules
// that must be built first (their Service is then available).
func RegisterModule(name string, f Factory, deps ...string) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[name]; dup {
		panic("server: duplicate module " + name)
	}
	factories[name] = f
	after[name] = deps
}

// Registry gives modules access to each other's services.
type Registry struct {
	mu       sync.RWMutex
	services map[string]any
}

// Service returns the named module's Service, or nil.
func (r *Registry) Service(name string) any {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.services[name]
}

// buildOrder sorts module names so that each comes after its deps.
func buildOrder() ([]string, error) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("server: module dependency cycle at %s", n)
		case 2:
			return nil
		}
		if _, ok := factories[n]; !ok {
			return fmt.Errorf("server: unknown module %s", n)
		}
		state[n] = 1
		for _, d := range after[n] {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ErrUnknownGroup is returned by GroupHandler for a name no module serves.
var ErrUnknownGroup = errors.New("server: unknown route group")
