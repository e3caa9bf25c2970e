package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// HandlePurge is the consumer of TopicPurge: it removes a deleted
// project's runs (with their entries and feedback), thread summaries,
// statistics and blobs, then the project record. It is idempotent and
// resumes where a failed attempt stopped.
func (s *Service) HandlePurge(ctx context.Context, payload json.RawMessage) error {
	var m PurgeMessage
	if err := json.Unmarshal(payload, &m); err != nil || m.WorkspaceID == "" || m.ProjectID == "" {
		s.log.Error("tracing: dropping a malformed purge message", "error", fmt.Sprint(err))
		return nil
	}
	return s.purgeProject(ctx, m.WorkspaceID, m.ProjectID)
}

func (s *Service) purgeProject(ctx context.Context, ws, id string) error {
	p, _, err := s.loadProject(ctx, ws, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !p.Deleted {
		return nil // not deleted (a stale message)
	}
	// Runs, a page at a time: each run with its entries and feedback.
	for {
		page, err := s.st.Query(ctx, store.Query{Index: "gsi1", PK: projectRunsPK(ws, id), Limit: 50})
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			break
		}
		var keys []store.Key
		for _, it := range page.Items {
			keys = append(keys, it.Key)
			var r runRecord
			if json.Unmarshal(it.Data, &r) != nil {
				continue
			}
			keys = append(keys, entryKeys(ws, &r)...)
			for _, f := range r.Feedback {
				keys = append(keys, feedbackKey(ws, f.ID))
			}
		}
		if err := s.deleteKeys(ctx, keys); err != nil {
			return err
		}
	}
	// Thread summaries and project-level feedback.
	for _, q := range []store.Query{
		{PK: "trth#" + ws + "#" + id, Limit: 100},
		{Index: "gsi4", PK: feedbackByProjPK(ws, id), Limit: 100},
	} {
		for {
			page, err := s.st.Query(ctx, q)
			if err != nil {
				return err
			}
			if len(page.Items) == 0 {
				break
			}
			keys := make([]store.Key, len(page.Items))
			for i, it := range page.Items {
				keys[i] = it.Key
			}
			if err := s.deleteKeys(ctx, keys); err != nil {
				return err
			}
		}
	}
	if err := blobs.DeletePrefix(ctx, blobAdapter{s.blobs}, "tracing/runs/"+ws+"/"+id+"/"); err != nil {
		return err
	}
	return s.deleteKeys(ctx, []store.Key{statsKey(ws, id), projectKey(ws, id)})
}

// deleteKeys deletes items, a transaction's worth at a time.
func (s *Service) deleteKeys(ctx context.Context, keys []store.Key) error {
	seen := map[store.Key]bool{}
	var ops []store.TxOp
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		err := s.st.Transact(ctx, ops)
		ops = ops[:0]
		return err
	}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: k})
		if len(ops) == store.MaxTxOps {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
