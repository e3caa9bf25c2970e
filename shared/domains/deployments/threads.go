package deployments

import "context"

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
}

// ThreadTarget returns the deployment's thread target, or
// ErrDeploymentNotFound for a missing deployment and for one being deleted
// (AWAITING_DELETE counts as deleted for thread traffic).
func (s *Service) ThreadTarget(ctx context.Context, deploymentID string) (ThreadTarget, error) {
	d, _, err := s.loadDeployment(ctx, deploymentID)
	if err != nil {
		return ThreadTarget{}, err
	}
	if d.Status == StatusAwaitingDelete {
		return ThreadTarget{}, ErrDeploymentNotFound
	}
	t := ThreadTarget{DeploymentID: d.ID, WorkspaceID: d.WorkspaceID, Status: string(d.Status), ActiveRevisionID: d.ActiveRevisionID}
	if d.ActiveRevisionID != "" && d.Source == SourceRepoHost {
		t.Graphs = append([]string{}, d.ActiveGraphs...)
	}
	return t, nil
}

// purgeThreads removes the deployment's threads through the threads module,
// when it is present.
func (s *Service) purgeThreads(ctx context.Context, id string) error {
	p, ok := s.o.Threads().(ThreadPurger)
	if !ok || p == nil {
		return nil
	}
	return p.PurgeDeployment(ctx, id)
}
