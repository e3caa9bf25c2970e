// Package deployments is the deployment control plane: deployments and
// their revisions, redeploy, listeners (self-hosted compute), repository
// integrations and the push webhook, the tracing project created with each
// deployment, and the API over them (route group "controlplane").
//
// A revision is built by the build workflow (package builds), which reaches
// back here through the build-tracking methods (BuildJob, Advance,
// MarkDeployed, MarkFailed, AppendLog).
//
// Concurrency: every change to a deployment is a versioned conditional
// write, and creating a revision writes the deployment (with the revision
// number and latest_revision_id), the new revision and the superseded one in
// one transaction, retried on conflict. So concurrent PATCHes each create
// exactly one revision and latest_revision_id names the newest.
package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Queue topics this package sends and consumes.
const (
	// TopicBuild carries a BuildMessage; its consumer starts the build
	// workflow with the revision id as execution id.
	TopicBuild = "build"
	// TopicDelete carries a DeleteMessage; its consumer removes everything
	// a deleted deployment owns.
	TopicDelete = "deployment.delete"
	// TopicDeleted carries a DeletedMessage once a deleted deployment is
	// being purged: the domains that keep data per deployment (threads)
	// remove theirs.
	TopicDeleted = "deployment.deleted"
	// TopicProjectEnsure asks the tracing domain for a deployment's
	// project, and TopicProjectRelease for its deletion with the
	// deployment (delete_tracing_project); both carry a ProjectMessage.
	TopicProjectEnsure  = "tracing.project.ensure"
	TopicProjectRelease = "tracing.project.release"
)

// ProjectMessage names a deployment's tracing project.
type ProjectMessage struct {
	WorkspaceID  string `json:"workspace_id"`
	Name         string `json:"name"`
	DeploymentID string `json:"deployment_id"`
}

// DeletedMessage says a deployment is gone.
type DeletedMessage struct {
	DeploymentID string `json:"deployment_id"`
	WorkspaceID  string `json:"workspace_id"`
}

// BuildMessage asks for a revision to be built.
type BuildMessage struct {
	DeploymentID string `json:"deployment_id"`
	RevisionID   string `json:"revision_id"`
}

// DeleteMessage asks for a deleted deployment to be purged.
type DeleteMessage struct {
	DeploymentID string `json:"deployment_id"`
}

// Enqueuer sends background work (SQS in AWS, in-process locally).
type Enqueuer interface {
	Enqueue(ctx context.Context, topic string, payload any) error
}

// Options configure a Service.
type Options struct {
	Store  store.Store
	Blobs  blobs.Bucket
	Queue  Enqueuer
	Keeper secrets.Keeper
	// BaseURL is this installation's public URL; a deployment is served at
	// {BaseURL}/deployments/{id}.
	BaseURL string
	// AllowLocalRepos: the seeded integration may read local repositories
	// (file:// URLs, absolute paths) and loopback or private hosts.
	AllowLocalRepos bool
	// WebhookSecret verifies X-Hub-Signature-256 on push webhooks; empty
	// refuses every webhook.
	WebhookSecret string
	// RepoHost and ExternalContainer say which sources this installation
	// accepts (hosted: repo_host; self-hosted: external_container; the
	// local all-in-one server: both).
	RepoHost          bool
	ExternalContainer bool
	// Listeners allows registering listeners (self-hosted and local).
	Listeners bool
	Logger    *slog.Logger
	// Changes, when set, hears of each deployment write (threads.go).
	Changes Notifier
	// StaleAfter: an unfinished revision without progress for this long is
	// ended INTERRUPTED by Sweep (default 1h).
	StaleAfter time.Duration
	// RequeueAfter: a QUEUED revision older than this is enqueued again by
	// Sweep, in case its message was lost (default 2m; starting a build is
	// idempotent).
	RequeueAfter time.Duration
}

// Service is the control plane's domain service.
type Service struct {
	o   Options
	st  store.Store
	log *slog.Logger
	now func() time.Time
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil || o.Blobs == nil || o.Queue == nil || o.Keeper == nil {
		return nil, errors.New("deployments: store, blobs, queue and keeper are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = time.Hour
	}
	if o.RequeueAfter <= 0 {
		o.RequeueAfter = 2 * time.Minute
	}
	return &Service{o: o, st: o.Store, log: o.Logger, now: func() time.Time { return time.Now().UTC() }}, nil
}

// Errors of the service.
var (
	// ErrDeploymentNotFound: no such deployment, or it is being deleted.
	ErrDeploymentNotFound = errors.New("deployments: deployment not found")
	// ErrHalted: the revision will not go on building (superseded,
	// finished, or its deployment is gone).
	ErrHalted = errors.New("deployments: revision halted")
	// errContention: too many concurrent changes to one deployment.
	errContention = errors.New("deployments: too much contention")
)

// Key layout in the single table. Prefixes: dep#, depname#, depws#,
// deprevs#, deprepo#, cpwork#, lis#, lisws#, liscompute#, intg#, intgws#,
// tracingproj#.
func depKey(id string) store.Key { return store.Key{PK: "dep#" + id, SK: "#dep"} }
func revKey(dep, rev string) store.Key {
	return store.Key{PK: "dep#" + dep, SK: "rev#" + rev}
}
func nameKey(ws, name string) store.Key {
	return store.Key{PK: "depname#" + ws + "#" + name, SK: "#name"}
}

// Secondary indexes.
const (
	idxList = "gsi1" // deployments by workspace, revisions by deployment, listeners, integrations
	idxWork = "gsi2" // unfinished revisions and deployments being deleted
	idxRepo = "gsi3" // repo_host deployments by repository (webhooks)

	workBuild  = "cpwork#build"
	workDelete = "cpwork#delete"
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain data structs are marshalled
	}
	return b
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func (s *Service) depItem(d *deployment) store.Item {
	idx := map[string]store.IndexKey{
		idxList: {PK: "depws#" + d.WorkspaceID, SK: ts(d.CreatedAt) + "#" + d.ID},
	}
	if d.Status == StatusAwaitingDelete {
		idx[idxWork] = store.IndexKey{PK: workDelete, SK: d.ID}
	} else if d.Source == SourceRepoHost && d.Config.RepoURL != nil {
		idx[idxRepo] = store.IndexKey{PK: "deprepo#" + normalizeRepoURL(*d.Config.RepoURL), SK: d.ID}
	}
	return store.Item{Key: depKey(d.ID), Data: mustJSON(d), Indexes: idx}
}

func revItem(r *revision) store.Item {
	idx := map[string]store.IndexKey{
		idxList: {PK: "deprevs#" + r.DeploymentID, SK: fmt.Sprintf("%012d", r.Seq)},
	}
	if !r.Status.Terminal() {
		idx[idxWork] = store.IndexKey{PK: workBuild, SK: ts(r.CreatedAt) + "#" + r.DeploymentID + "#" + r.ID}
	}
	return store.Item{Key: revKey(r.DeploymentID, r.ID), Data: mustJSON(r), Indexes: idx}
}

// loadDeployment reads a deployment and its version (ErrDeploymentNotFound
// when absent).
func (s *Service) loadDeployment(ctx context.Context, id string) (*deployment, int64, error) {
	it, err := s.st.Get(ctx, depKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, ErrDeploymentNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	var d deployment
	if err := json.Unmarshal(it.Data, &d); err != nil {
		return nil, 0, fmt.Errorf("deployments: decode deployment %s: %w", id, err)
	}
	return &d, it.Version, nil
}

var errRevisionMissing = errors.New("deployments: revision not found")

func (s *Service) loadRevision(ctx context.Context, dep, id string) (*revision, int64, error) {
	it, err := s.st.Get(ctx, revKey(dep, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, errRevisionMissing
	}
	if err != nil {
		return nil, 0, err
	}
	var r revision
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return nil, 0, fmt.Errorf("deployments: decode revision %s: %w", id, err)
	}
	return &r, it.Version, nil
}

// notFound answers the interface's 404 bodies.
func deploymentNotFound(id string) error { return fault.Missing("Deployment ID %s not found.", id) }
func revisionNotFound(id string) error   { return fault.Missing("Revision ID %s not found.", id) }
func listenerNotFound(id string) error   { return fault.Missing("Listener ID %s not found.", id) }

// deploymentFor loads a deployment of workspace ws, answering 404 for a
// missing one and for one of another workspace alike.
func (s *Service) deploymentFor(ctx context.Context, ws, id string) (*deployment, int64, error) {
	d, v, err := s.loadDeployment(ctx, id)
	if errors.Is(err, ErrDeploymentNotFound) || (err == nil && d.WorkspaceID != ws) {
		return nil, 0, deploymentNotFound(id)
	}
	return d, v, err
}

// retry runs attempt until it does not fail with a condition failure, with
// jittered backoff; concurrent writers to one deployment converge quickly.
func retry(ctx context.Context, attempt func() error) error {
	const attempts = 200
	for i := 0; i < attempts; i++ {
		err := attempt()
		if !errors.Is(err, store.ErrConditionFailed) {
			return err
		}
		d := time.Duration(rand.IntN(2+min(i, 20)*2)) * time.Millisecond
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
	return errContention
}

// apiError maps infrastructure errors to the interface's shapes.
func apiError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errContention):
		return fault.Busy(1, "Too many concurrent changes to this deployment, retry")
	case errors.Is(err, store.ErrTooLarge):
		return fault.Oversize("The deployment configuration is too large to store (the limit is %d KB)", store.MaxItemSize/1024)
	}
	return err
}
