package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Purge removes everything a deleted deployment owns — its threads (the
// TopicDeleted event asks the threads domain), build logs, sources and artifacts, revisions, and its
// tracing project when asked — and then the deployment itself. It is the
// TopicDelete consumer; it is idempotent, so a redelivered message is fine.
func (s *Service) Purge(ctx context.Context, id string) error {
	d, _, err := s.loadDeployment(ctx, id)
	if errors.Is(err, ErrDeploymentNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if d.Status != StatusAwaitingDelete {
		return nil
	}
	if err := s.o.Queue.Enqueue(ctx, TopicDeleted, DeletedMessage{DeploymentID: id, WorkspaceID: d.WorkspaceID}); err != nil {
		return fmt.Errorf("announce the deletion of %s: %w", id, err)
	}
	if err := blobs.DeletePrefix(ctx, s.o.Blobs, blobPrefix(id)); err != nil {
		return err
	}
	if d.DeleteTracingProject {
		m := ProjectMessage{WorkspaceID: d.WorkspaceID, Name: d.Name, DeploymentID: d.ID}
		if err := s.o.Queue.Enqueue(ctx, TopicProjectRelease, m); err != nil {
			return fmt.Errorf("ask for the tracing project's deletion: %w", err)
		}
	}
	q := store.Query{PK: depKey(id).PK, SK: store.SKCond{Op: store.SKBeginsWith, A: "rev#"}}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			if err := s.st.Delete(ctx, it.Key, store.Condition{}); err != nil {
				return err
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	if err := s.changed(id, s.st.Delete(ctx, depKey(id), store.Condition{})); err != nil {
		return err
	}
	s.log.Info("deployments: deployment purged", slog.String("deployment_id", id))
	return nil
}

// pendingRevisions calls fn for every unfinished revision.
func (s *Service) pendingRevisions(ctx context.Context, fn func(*revision)) error {
	q := store.Query{Index: idxWork, PK: workBuild}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			var r revision
			if json.Unmarshal(it.Data, &r) == nil {
				fn(&r)
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}

func (s *Service) deletingDeployments(ctx context.Context, fn func(*deployment)) error {
	q := store.Query{Index: idxWork, PK: workDelete}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			var d deployment
			if json.Unmarshal(it.Data, &d) == nil {
				fn(&d)
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}

// Recover enqueues again every unfinished revision and every deletion in
// progress. The local queue is in memory, so after a restart this is what
// puts them back on it; starting a build is idempotent by revision id (an
// execution that exists resumes where it stopped).
func (s *Service) Recover(ctx context.Context) error {
	var errs []error
	n := 0
	err := s.pendingRevisions(ctx, func(r *revision) {
		if err := s.o.Queue.Enqueue(ctx, TopicBuild, BuildMessage{DeploymentID: r.DeploymentID, RevisionID: r.ID}); err != nil {
			errs = append(errs, err)
			return
		}
		n++
	})
	errs = append(errs, err)
	err = s.deletingDeployments(ctx, func(d *deployment) {
		if err := s.o.Queue.Enqueue(ctx, TopicDelete, DeleteMessage{DeploymentID: d.ID}); err != nil {
			errs = append(errs, err)
		}
	})
	errs = append(errs, err)
	if n > 0 {
		s.log.Info("deployments: re-enqueued unfinished revisions", slog.Int("count", n))
	}
	return errors.Join(errs...)
}

// Sweep is the periodic maintenance: a revision without progress for
// StaleAfter ends INTERRUPTED (never stuck), a QUEUED revision older than
// RequeueAfter is enqueued again (its message may have been lost), and so
// is a deletion that has not finished.
func (s *Service) Sweep(ctx context.Context) error {
	now := s.now()
	var errs []error
	err := s.pendingRevisions(ctx, func(r *revision) {
		switch {
		case now.Sub(r.UpdatedAt) > s.o.StaleAfter:
			msg := fmt.Sprintf("No build progress for %s: the revision was interrupted", s.o.StaleAfter)
			if err := s.MarkFailed(ctx, r.DeploymentID, r.ID, RevInterrupted, msg); err != nil {
				errs = append(errs, err)
				return
			}
			_ = s.AppendLog(ctx, r.DeploymentID, r.ID, "Sweep", msg)
		case r.Status == RevQueued && now.Sub(r.CreatedAt) > s.o.RequeueAfter:
			errs = append(errs, s.o.Queue.Enqueue(ctx, TopicBuild, BuildMessage{DeploymentID: r.DeploymentID, RevisionID: r.ID}))
			if r.Trigger == "create" {
				// The project request may have been lost with it.
				if d, _, err := s.loadDeployment(ctx, r.DeploymentID); err == nil {
					s.enqueueProject(ctx, d)
				}
			}
		}
	})
	errs = append(errs, err)
	err = s.deletingDeployments(ctx, func(d *deployment) {
		if d.DeleteRequestedAt != nil && now.Sub(*d.DeleteRequestedAt) > s.o.RequeueAfter {
			errs = append(errs, s.o.Queue.Enqueue(ctx, TopicDelete, DeleteMessage{DeploymentID: d.ID}))
		}
	})
	errs = append(errs, err)
	return errors.Join(errs...)
}
