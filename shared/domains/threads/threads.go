// Package threads is the thread API of deployed agent servers: threads,
// their checkpointed state, supersteps and the messages reducer, search and
// count served by store indexes, copy-on-write copies, TTL and its sweeper.
// It speaks the wire format of the LangGraph agent server, so the real
// @langchain/langgraph-sdk works against a deployment URL unmodified.
//
// Checkpoints live in chains (one store partition each). A thread reads a
// lineage of chains: its own head chain, then the chains it was copied
// from, each bounded by the checkpoint id at which the copy was cut. Ids
// grow with time, so a copy is two items whatever the history length, and
// the source may keep writing (to ids above the cut) or be deleted (chains
// are reference counted) without the copy noticing.
package threads

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Target is what the thread API needs to know about a deployment.
type Target struct {
	DeploymentID, WorkspaceID string
	Status                    string
	// ActiveRevisionID is "" while no revision is DEPLOYED.
	ActiveRevisionID string
	// Graphs of the active revision; nil when unknown.
	Graphs []string
	// FailedRevisionID and FailedRevisionStatus name the deployment's
	// latest revision when no revision is active and that one ended
	// without deploying: the thread API then answers 409, not 503.
	FailedRevisionID, FailedRevisionStatus string
}

// ErrDeploymentNotFound is what a Resolver returns for a missing (or
// deleted) deployment.
var ErrDeploymentNotFound = errors.New("threads: deployment not found")

// Resolver looks deployments up (the control plane).
type Resolver interface {
	ThreadTarget(ctx context.Context, deploymentID string) (Target, error)
}

// Enqueuer sends background work (the garbage collection of chains).
type Enqueuer interface {
	Enqueue(ctx context.Context, topic string, payload any) error
}

// TopicGC is the queue topic of chain garbage collection.
const TopicGC = "threads.gc"

// GCMessage asks for the collection of a chain.
type GCMessage struct {
	Chain string `json:"chain"`
}

// Options configure a Service.
type Options struct {
	Store store.Store
	Blobs blobs.Bucket
	// Queue may be nil: collection then waits for Sweep.
	Queue  Enqueuer
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// SweepLimit bounds the threads one Sweep expires (default 1000).
	SweepLimit int
	// RenderCache bounds the bytes of hot-read answers kept in memory
	// (renders.go): 0 means DefaultRenderCache, a negative value none.
	RenderCache int
	// CounterShards is how many items each count is spread over: 0 means
	// DefaultCounterShards. A store that runs one writer at a time (the
	// embedded one) is best with 1: each count then stays in one place,
	// and a commit writes fewer pages. Counts read right whatever the
	// number, also after it changes.
	CounterShards int
}

// DefaultRenderCache is the default budget of kept answers: about 40,000
// threads' GET and state answers of a few hundred bytes each.
const DefaultRenderCache = 32 << 20

// Service implements the thread API.
type Service struct {
	st         store.Store
	blobs      blobs.Bucket
	queue      Enqueuer
	log        *slog.Logger
	now        func() time.Time
	sweepLimit int
	renders    *renders
	// counterShards: Options.CounterShards.
	counterShards int
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Blobs == nil {
		return nil, errors.New("threads: a store and a blob bucket are required")
	}
	s := &Service{st: o.Store, blobs: o.Blobs, queue: o.Queue, log: o.Logger, now: o.Now, sweepLimit: o.SweepLimit}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.sweepLimit <= 0 {
		s.sweepLimit = 1000
	}
	if o.RenderCache == 0 {
		o.RenderCache = DefaultRenderCache
	}
	s.renders = newRenders(o.RenderCache)
	s.counterShards = o.CounterShards
	if s.counterShards <= 0 {
		s.counterShards = DefaultCounterShards
	}
	return s, nil
}

// clock returns now at the microsecond precision timestamps keep.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }
