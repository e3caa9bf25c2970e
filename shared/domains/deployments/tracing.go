package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// TracingProject is the tracing project created with a deployment, of the
// same name. Only the record exists for now; the tracing API that reads it
// comes later. Key: PK "tracingproj#{workspace}", SK the name.
type TracingProject struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	WorkspaceID string    `json:"workspace_id"`
	CreatedAt   time.Time `json:"created_at"`
	// DeploymentID is the deployment that created or last adopted it.
	DeploymentID string `json:"deployment_id"`
}

func projectKey(ws, name string) store.Key {
	return store.Key{PK: "tracingproj#" + ws, SK: name}
}

// tracingProjectOp returns the transaction operation that gives deployment
// dep a tracing project named name: a new record, or the existing one of
// that name adopted (a versioned write, so a concurrent delete is noticed).
func (s *Service) tracingProjectOp(ctx context.Context, ws, name, dep string, now time.Time) (store.TxOp, string, error) {
	it, err := s.st.Get(ctx, projectKey(ws, name))
	if errors.Is(err, store.ErrNotFound) {
		p := TracingProject{ID: uuid.NewString(), Name: name, WorkspaceID: ws, CreatedAt: now, DeploymentID: dep}
		return store.TxOp{Kind: store.OpPut, Item: store.Item{Key: projectKey(ws, name), Data: mustJSON(p)}, Cond: store.NotExists()}, p.ID, nil
	}
	if err != nil {
		return store.TxOp{}, "", err
	}
	var p TracingProject
	if err := json.Unmarshal(it.Data, &p); err != nil {
		return store.TxOp{}, "", err
	}
	p.DeploymentID = dep
	return store.TxOp{Kind: store.OpPut, Item: store.Item{Key: it.Key, Data: mustJSON(p)}, Cond: store.HasVersion(it.Version)}, p.ID, nil
}

// TracingProject returns the tracing project of that name in workspace ws.
func (s *Service) TracingProject(ctx context.Context, ws, name string) (TracingProject, error) {
	it, err := s.st.Get(ctx, projectKey(ws, name))
	if err != nil {
		return TracingProject{}, err
	}
	var p TracingProject
	err = json.Unmarshal(it.Data, &p)
	return p, err
}

// deleteTracingProject removes the project of a purged deployment, unless
// another deployment has adopted it since.
func (s *Service) deleteTracingProject(ctx context.Context, d *deployment) error {
	it, err := s.st.Get(ctx, projectKey(d.WorkspaceID, d.Name))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var p TracingProject
	if err := json.Unmarshal(it.Data, &p); err != nil || p.DeploymentID != d.ID {
		return nil
	}
	err = s.st.Delete(ctx, it.Key, store.HasVersion(it.Version))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil // adopted meanwhile
	}
	return err
}
