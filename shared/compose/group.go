// Package compose builds processes from adapters and domain modules, with
// explicit, typed wiring: each route group (one Lambda function in AWS) has
// a package shared/compose/<name>group that declares the group (its routes,
// the queue topics it consumes and publishes, whether it sweeps, what it
// uses) and builds exactly its modules from a Platform. A Lambda main links
// one such package; the local all-in-one server (shared/compose/local) and
// the CDK app read them all through shared/compose/catalog.
package compose

import (
	"context"
	"encoding/json"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Group declares one route group: the unit of deployment.
type Group struct {
	// Name is the group's name: its functions/<name> directory, its route
	// specs' Group and its CDK id stem.
	Name        string
	Description string
	// Routes are the group's routes (the domain's api.Group specs).
	Routes []api.Spec
	// Consumes lists the queue topics the group's consumers handle. In AWS
	// the group has its own queue, and publishers send these topics there.
	Consumes []string
	// Publishes lists the topics the group sends.
	Publishes []string
	// Sweeps says the group has periodic maintenance (a schedule in AWS).
	Sweeps bool
	// Uses is what the group reads and writes (per-function IAM).
	Uses Uses
	// Host is "" for the platform API (one API Gateway REST API per region,
	// the all-in-one server's port). A group with its own host (the tool
	// server, "mcp") is served at its own address: its own API in AWS, its
	// own port locally; it is not mounted on the platform API.
	Host string
	// Build makes the group's modules over p.
	Build func(ctx context.Context, p *Platform) (*Module, error)
}

// Uses lists the resources a group touches beyond the table's base keys.
type Uses struct {
	// Indexes are the table's secondary indexes the group queries.
	Indexes []string
	// Blobs: the group reads or writes the blob bucket.
	Blobs bool
	// Secrets: the group seals or opens secret values (KMS in AWS).
	Secrets bool
	// StartsWorkflows names the workflows the group starts.
	StartsWorkflows []string
	// RunsSteps: the group runs workflow steps (the state machines' tasks).
	RunsSteps bool
}

// Consumer handles one queue message's payload; it must be idempotent.
type Consumer func(ctx context.Context, payload json.RawMessage) error

// Module is a built group.
type Module struct {
	// Mount adds the group's routes behind the edge.
	Mount func(mux *web.Mux, e api.Edge)
	// Consumers handle the topics of Group.Consumes.
	Consumers map[string]Consumer
	// Workflows are the definitions whose steps this module runs.
	Workflows []workflow.Definition
	// Sweep runs one round of periodic maintenance.
	Sweep func(ctx context.Context) error
	// Background loops run in the local process only (each returns when
	// its context ends).
	Background []func(ctx context.Context) error
	// Close releases the module.
	Close func() error
}
