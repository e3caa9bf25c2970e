package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// ThreadTarget is what the thread API of a deployment needs to know about it.
type ThreadTarget struct {
	DeploymentID, WorkspaceID string
	// Status is the deployment status.
	Status string
	// ActiveRevisionID is "" while no revision is DEPLOYED.
	ActiveRevisionID string
	// Graphs are the graph ids of the active revision; nil when unknown
	// (external_container). Shared with the cache: read only.
	Graphs []string
	// FailedRevisionID is set when no revision is active and none is on
	// its way: the latest revision ended without being deployed, with
	// FailedRevisionStatus (BUILD_FAILED, INTERRUPTED, ...). Threads
	// cannot appear until a new revision deploys, so waiting is useless.
	FailedRevisionID, FailedRevisionStatus string
}

// Notifier hears of every write of a deployment record, after it is
// made: the thread-target caches of the process drop that deployment.
type Notifier interface {
	DeploymentChanged(id string)
}

// changed tells the notifier that deployment id was written and returns
// err, so a write site stays one line: return s.changed(id, s.st.Transact(...)).
func (s *Service) changed(id string, err error) error {
	if s.o.Changes != nil {
		s.o.Changes.DeploymentChanged(id)
	}
	return err
}

// Targets reads deployments for the thread API. It needs only the store,
// so the threads function links none of the control plane's machinery.
//
// A Targets made by NewCachedTargets keeps the targets of served
// deployments (a DEPLOYED revision, not being deleted) for a TTL, since
// every thread request needs one. Invalidate drops one at once (the
// process's control plane calls it through its Notifier after each write
// of a deployment); a write made by another process is seen within the
// TTL. Deployments not served yet, missing or deleted ones are never
// cached, so a new deployment or a first DEPLOYED revision shows at once.
type Targets struct {
	st  store.Store
	ttl time.Duration
	now func() time.Time

	mu sync.RWMutex
	// gen counts invalidations: a read that started before one does not
	// cache what it read.
	gen uint64
	m   map[string]cachedTarget
}

type cachedTarget struct {
	t     ThreadTarget
	until time.Time
}

// maxCachedTargets bounds the cache's memory.
const maxCachedTargets = 10000

// NewTargets returns a reader of thread targets over st, without cache.
func NewTargets(st store.Store) *Targets { return &Targets{st: st, now: time.Now} }

// NewCachedTargets returns a reader that caches served targets for ttl
// (0: no cache).
func NewCachedTargets(st store.Store, ttl time.Duration) *Targets {
	return &Targets{st: st, ttl: max(ttl, 0), now: time.Now, m: map[string]cachedTarget{}}
}

// Invalidate drops deployment id from the cache (after a write of it).
func (t *Targets) Invalidate(id string) {
	if t.ttl == 0 {
		return
	}
	t.mu.Lock()
	t.gen++
	delete(t.m, id)
	t.mu.Unlock()
}

// targetFields is the part of the deployment record a target needs:
// decoding only these skips the configuration and history fields.
type targetFields struct {
	ID               string   `json:"id"`
	WorkspaceID      string   `json:"workspace_id"`
	Source           Source   `json:"source"`
	Status           Status   `json:"status"`
	LatestRevisionID string   `json:"latest_revision_id"`
	ActiveRevisionID string   `json:"active_revision_id"`
	ActiveGraphs     []string `json:"active_graphs"`
}

// ThreadTarget returns the deployment's thread target, or
// ErrDeploymentNotFound for a missing deployment and for one being deleted
// (AWAITING_DELETE counts as deleted for thread traffic).
func (t *Targets) ThreadTarget(ctx context.Context, deploymentID string) (ThreadTarget, error) {
	var gen uint64
	if t.ttl > 0 {
		t.mu.RLock()
		c, ok := t.m[deploymentID]
		gen = t.gen
		t.mu.RUnlock()
		if ok && t.now().Before(c.until) {
			return c.t, nil
		}
	}
	out, err := t.read(ctx, deploymentID)
	if err != nil || t.ttl == 0 || out.ActiveRevisionID == "" {
		return out, err
	}
	t.mu.Lock()
	if t.gen == gen {
		if len(t.m) >= maxCachedTargets {
			clear(t.m)
		}
		t.m[deploymentID] = cachedTarget{t: out, until: t.now().Add(t.ttl)}
	}
	t.mu.Unlock()
	return out, nil
}

func (t *Targets) read(ctx context.Context, deploymentID string) (ThreadTarget, error) {
	it, err := t.st.Get(ctx, depKey(deploymentID))
	if errors.Is(err, store.ErrNotFound) {
		return ThreadTarget{}, ErrDeploymentNotFound
	}
	if err != nil {
		return ThreadTarget{}, err
	}
	var d targetFields
	if err := json.Unmarshal(it.Data, &d); err != nil {
		return ThreadTarget{}, fmt.Errorf("deployments: decode deployment %s: %w", deploymentID, err)
	}
	if d.Status == StatusAwaitingDelete {
		return ThreadTarget{}, ErrDeploymentNotFound
	}
	out := ThreadTarget{DeploymentID: d.ID, WorkspaceID: d.WorkspaceID, Status: string(d.Status), ActiveRevisionID: d.ActiveRevisionID}
	if d.ActiveRevisionID != "" && d.Source == SourceRepoHost {
		out.Graphs = append([]string{}, d.ActiveGraphs...)
	}
	if d.ActiveRevisionID == "" && d.LatestRevisionID != "" {
		// One more read, only for deployments nothing serves yet.
		it, err := t.st.Get(ctx, revKey(d.ID, d.LatestRevisionID))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return ThreadTarget{}, err
		}
		var r revision
		if err == nil && json.Unmarshal(it.Data, &r) == nil && r.Status.Terminal() && r.Status != RevDeployed {
			out.FailedRevisionID, out.FailedRevisionStatus = r.ID, string(r.Status)
		}
	}
	return out, nil
}

// ThreadTarget is Targets.ThreadTarget over the service's store.
func (s *Service) ThreadTarget(ctx context.Context, deploymentID string) (ThreadTarget, error) {
	return NewTargets(s.st).ThreadTarget(ctx, deploymentID)
}
