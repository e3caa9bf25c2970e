// Package tracing is the LangSmith-compatible tracing API: run ingest
// (single, batch, multipart and OTLP, all through the queue), run queries
// with the filter language of package fql served by store indexes,
// projects (tracing sessions) with statistics kept incrementally,
// experiments (projects of a dataset), feedback, and the conversation
// threads of a project. The real langsmith SDK traces to it and reads back
// from it unmodified.
//
// Ingest answers once the raw batch is in blob storage and its key on the
// queue; the consumer (HandleIngest) merges creates and updates of each run
// with conditional writes, so a create and an update arriving in any order,
// any number of times, end as one run, and statistics count every change
// exactly once.
package tracing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Topics this domain consumes.
const (
	// TopicIngest carries the blob key of a raw ingest batch (IngestMessage).
	TopicIngest = "tracing.ingest"
	// TopicProjectEnsure asks for a project of a name (ProjectEnsure); the
	// control plane sends it when a deployment is created.
	TopicProjectEnsure = "tracing.project.ensure"
	// TopicPurge asks for the runs of a deleted project to be removed
	// (PurgeMessage).
	TopicPurge = "tracing.project.purge"
	// TopicProjectRelease says a deployment is gone and its project should
	// go with it (ProjectEnsure: the deployment's workspace, name and id);
	// the control plane sends it when a deployment is deleted with
	// delete_tracing_project.
	TopicProjectRelease = "tracing.project.release"
)

// Topics this domain publishes.
const (
	// TopicExperiment reports a project with a reference dataset created
	// or deleted (ExperimentEvent); the datasets domain consumes it.
	TopicExperiment = "tracing.experiment"
	// TopicBillingUsage reports usage (UsageEvent); the billing domain
	// consumes it. One event per new trace, with an idempotency key.
	TopicBillingUsage = "billing.usage"
)

// IngestMessage is the payload of TopicIngest.
type IngestMessage struct {
	Key string `json:"key"`
}

// ProjectEnsure is the payload of TopicProjectEnsure.
type ProjectEnsure struct {
	WorkspaceID  string `json:"workspace_id"`
	Name         string `json:"name"`
	DeploymentID string `json:"deployment_id"`
}

// PurgeMessage is the payload of TopicPurge.
type PurgeMessage struct {
	WorkspaceID string `json:"workspace_id"`
	ProjectID   string `json:"project_id"`
}

// ExperimentEvent is the payload of TopicExperiment.
type ExperimentEvent struct {
	WorkspaceID        string    `json:"workspace_id"`
	ProjectID          string    `json:"project_id"`
	ReferenceDatasetID string    `json:"reference_dataset_id"`
	StartTime          time.Time `json:"start_time"`
	Deleted            bool      `json:"deleted"`
}

// UsageEvent is the payload of TopicBillingUsage.
type UsageEvent struct {
	// ID is the idempotency key: one per trace.
	ID             string    `json:"id"`
	OrganizationID string    `json:"organization_id"`
	WorkspaceID    string    `json:"workspace_id"`
	Metric         string    `json:"metric"`
	Quantity       int64     `json:"quantity"`
	At             time.Time `json:"at"`
}

// Publisher sends queue messages (the composition routes each topic).
type Publisher interface {
	Enqueue(ctx context.Context, topic string, payload any) error
}

// Bucket is the part of blobs.Bucket this domain uses.
type Bucket interface {
	Put(ctx context.Context, key string, r io.Reader, contentType string) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
}

// WorkspaceInfo is what GET /settings tells about a workspace.
type WorkspaceInfo struct {
	ID             string
	OrganizationID string
	DisplayName    string
	CreatedAt      time.Time
	// Handle is the workspace's owner in prompt names (owner/repo),
	// reported as tenant_handle: the SDKs accept a prompt owner equal to
	// it, and the JS SDK creates public prompts only when it is set.
	// Empty reports null.
	Handle string
}

// Options configure a Service.
type Options struct {
	Store store.Store
	Blobs Bucket
	// Queue publishes ingest batches and events. Required: ingest is
	// answered only once a batch is queued.
	Queue Publisher
	// Workspace describes a workspace (identity.Service.Workspace, adapted).
	Workspace func(ctx context.Context, id string) (WorkspaceInfo, error)
	// InstanceFlags are advertised by GET /info; the composition turns on
	// what other domains implement (dataset_examples_multipart_enabled).
	InstanceFlags map[string]bool
	Logger        *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// RetentionDays is the default run retention (400).
	RetentionDays int
	// BatchSizeLimitBytes is advertised as batch_ingest_config.size_limit_bytes
	// (default and maximum 5 MiB: the Lambda payload limit is 6 MB).
	BatchSizeLimitBytes int
	// MaxIngestBytes bounds an ingest request body (default 20 MiB).
	MaxIngestBytes int64
	// Version is GET /info's version (default "0.0.0-agentplane").
	Version string
}

// Service implements the tracing API.
type Service struct {
	st        store.Store
	blobs     Bucket
	queue     Publisher
	workspace func(ctx context.Context, id string) (WorkspaceInfo, error)
	flags     map[string]bool
	log       *slog.Logger
	now       func() time.Time
	retention int
	batchMax  int
	bodyMax   int64
	version   string
	segDays   segmentDayCache
}

// MaxBatchSizeLimitBytes is the most GET /info advertises.
const MaxBatchSizeLimitBytes = 5 << 20

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Blobs == nil || o.Queue == nil || o.Workspace == nil {
		return nil, errors.New("tracing: a store, a blob bucket, a queue publisher and a workspace lookup are required")
	}
	s := &Service{st: o.Store, blobs: o.Blobs, queue: o.Queue, workspace: o.Workspace, log: o.Logger,
		now: o.Now, retention: o.RetentionDays, batchMax: o.BatchSizeLimitBytes, bodyMax: o.MaxIngestBytes, version: o.Version}
	s.flags = make(map[string]bool, len(o.InstanceFlags))
	for k, v := range o.InstanceFlags {
		s.flags[k] = v
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.retention <= 0 {
		s.retention = DefaultRetentionDays
	}
	if s.batchMax <= 0 || s.batchMax > MaxBatchSizeLimitBytes {
		s.batchMax = MaxBatchSizeLimitBytes
	}
	if s.bodyMax <= 0 {
		s.bodyMax = 20 << 20
	}
	if s.version == "" {
		s.version = "0.0.0-agentplane"
	}
	return s, nil
}

// DefaultRetentionDays is how long runs are kept unless a project says
// otherwise.
const DefaultRetentionDays = 400

// clock returns now at the microsecond precision the API keeps.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Errors the service returns (http.go maps them).
var (
	ErrNotFound = errors.New("tracing: not found")
	ErrConflict = errors.New("tracing: conflict")
)
