package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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
	// (external_container).
	Graphs []string
	// FailedRevisionID is set when no revision is active and none is on
	// its way: the latest revision ended without being deployed, with
	// FailedRevisionStatus (BUILD_FAILED, INTERRUPTED, ...). Threads
	// cannot appear until a new revision deploys, so waiting is useless.
	FailedRevisionID, FailedRevisionStatus string
}

// Targets reads deployments for the thread API. It needs only the store,
// so the threads function links none of the control plane's machinery.
type Targets struct{ st store.Store }

// NewTargets returns a reader of thread targets over st.
func NewTargets(st store.Store) *Targets { return &Targets{st: st} }

// ThreadTarget returns the deployment's thread target, or
// ErrDeploymentNotFound for a missing deployment and for one being deleted
// (AWAITING_DELETE counts as deleted for thread traffic).
func (t *Targets) ThreadTarget(ctx context.Context, deploymentID string) (ThreadTarget, error) {
	it, err := t.st.Get(ctx, depKey(deploymentID))
	if errors.Is(err, store.ErrNotFound) {
		return ThreadTarget{}, ErrDeploymentNotFound
	}
	if err != nil {
		return ThreadTarget{}, err
	}
	var d deployment
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
