package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Sweep is the periodic maintenance: it expires threads whose TTL ran out
// (delete: the thread goes; keep_latest: only its latest checkpoint stays)
// and collects chains nobody references, both bounded per round. Readers
// never wait for it: a thread past its delete TTL is already invisible.
func (s *Service) Sweep(ctx context.Context) error {
	var errs []error
	if err := s.sweepTTL(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.sweepGC(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Service) sweepTTL(ctx context.Context) error {
	budget := s.sweepLimit
	now := s.now()
	for shard := 0; shard < ttlShards && budget > 0; shard++ {
		q := store.Query{Index: "gsi4", PK: fmt.Sprintf("thrttl#%d", shard), SK: store.SKCond{Op: store.SKLess, A: sortTime(now)}, Limit: min(budget, 100)}
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			budget--
			dep, tid := strings.TrimPrefix(it.PK, "thr#"), strings.TrimPrefix(it.SK, "s#")
			if err := s.expire(ctx, dep, tid); err != nil {
				return fmt.Errorf("threads: expire %s: %w", tid, err)
			}
		}
	}
	return nil
}

// expire applies a due TTL to one thread.
func (s *Service) expire(ctx context.Context, dep, tid string) error {
	for attempt := 0; attempt <= retries; attempt++ {
		t, v, err := s.loadAny(ctx, dep, tid)
		if err != nil || t == nil {
			return err
		}
		if t.TTL == nil || s.now().Before(t.TTL.ExpiresAt) {
			return nil // renewed meanwhile
		}
		if t.TTL.Strategy == TTLDelete {
			err = s.remove(ctx, t, v)
		} else {
			err = s.prune(ctx, t, v)
		}
		if !errors.Is(err, errRetry) {
			return err
		}
	}
	return nil
}

// prune keeps only the latest checkpoint of a thread: it moves to a fresh
// head chain and the old lineage is released. The TTL starts over.
func (s *Service) prune(ctx context.Context, t *threadRecord, v int64) error {
	now := s.clock()
	old, nu := *t, *t
	nu.TTL = (&TTLIn{Strategy: t.TTL.Strategy, Minutes: t.TTL.Minutes}).state(now)
	if t.Latest == "" {
		return s.commit(ctx, &old, v, &nu, nil)
	}
	cp, err := s.latestCheckpoint(ctx, t)
	if err != nil {
		return err
	}
	cp.Parent = ""
	chain := newChainID(s.now())
	op, bk, err := s.checkpointPut(ctx, t.Deployment, chain, cp)
	if err != nil {
		return err
	}
	head := t.Lineage[0].Chain
	nu.Lineage = []segment{{Chain: chain}}
	nu.LatestLevel = 0
	extra := []store.TxOp{
		{Kind: store.OpPut, Item: chainItem(chain, chainRecord{Deployment: t.Deployment}, 1), Cond: store.NotExists()},
		op,
		{Kind: store.OpUpdate, Update: store.Update{Key: chainKey(head), Add: map[string]int64{"refs": -1}}},
		{Kind: store.OpPut, Item: gcItem(head, time.Time{})},
	}
	if err := s.commit(ctx, &old, v, &nu, extra); err != nil {
		s.dropBlobs(ctx, []string{bk})
		return err
	}
	s.requestGC(ctx, head)
	return nil
}

// sweepGC collects the chains whose tasks are due (a lost queue message,
// an abandoned staged create).
func (s *Service) sweepGC(ctx context.Context) error {
	q := store.Query{PK: "thrgc", Limit: 100}
	budget := s.sweepLimit
	for budget > 0 {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			budget--
			var task gcTask
			_ = json.Unmarshal(it.Data, &task)
			if s.now().Before(task.NotBefore) {
				continue
			}
			if err := s.collect(ctx, it.SK, false); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
	return nil
}

// PurgeDeployment removes every thread, checkpoint and blob of a
// deployment (the control plane calls it after deleting one).
func (s *Service) PurgeDeployment(ctx context.Context, dep string) error {
	q := store.Query{PK: "thr#" + dep, SK: store.SKCond{Op: store.SKBeginsWith, A: "t#"}, Limit: 100}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			break
		}
		for _, it := range page.Items {
			tid := strings.TrimPrefix(it.SK, "t#")
			if err := s.purgeThread(ctx, dep, tid); err != nil {
				return err
			}
		}
	}
	// Counters (zero by now) and anything a crash left behind.
	for {
		page, err := s.st.Query(ctx, store.Query{PK: counterPK(dep), Limit: store.MaxTxOps})
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			break
		}
		ops := make([]store.TxOp, 0, len(page.Items))
		for _, it := range page.Items {
			ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: it.Key})
		}
		if err := s.st.Transact(ctx, ops); err != nil {
			return err
		}
	}
	return blobs.DeletePrefix(ctx, s.blobs, "threads/"+dep+"/")
}

func (s *Service) purgeThread(ctx context.Context, dep, tid string) error {
	for attempt := 0; attempt <= retries; attempt++ {
		t, v, err := s.loadAny(ctx, dep, tid)
		if err != nil || t == nil {
			return err
		}
		err = s.remove(ctx, t, v)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			return err
		}
		return s.collect(ctx, t.Lineage[0].Chain, false)
	}
	return fmt.Errorf("threads: thread %s kept changing during the purge", tid)
}

// HandleDeploymentDeleted consumes the control plane's deployment-deleted
// event ({"deployment_id": ...}): the deployment's threads go with it.
func (s *Service) HandleDeploymentDeleted(ctx context.Context, raw json.RawMessage) error {
	var m struct {
		DeploymentID string `json:"deployment_id"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.DeploymentID == "" {
		s.log.Error("threads: dropping malformed deployment-deleted message")
		return nil
	}
	return s.PurgeDeployment(ctx, m.DeploymentID)
}
