package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// inlineCheckpointMax is the largest encoded checkpoint kept inside its
// store item; larger ones go to blob storage (the store's items stop at
// 400 KB, and the item also carries keys).
const inlineCheckpointMax = 350 * 1024

// chainRecord is the stored chain. Nums["refs"] counts what points at it:
// the thread whose head it is, and every chain whose Parent it is.
type chainRecord struct {
	Deployment string `json:"dep"`
	Parent     string `json:"parent,omitempty"`
	Upto       string `json:"upto,omitempty"`
	// Staging marks a chain written before its thread exists (a create
	// with many supersteps); GC removes it if the create never finished.
	Staging bool `json:"staging,omitempty"`
}

// gcTask asks for a chain's collection once NotBefore has passed.
type gcTask struct {
	NotBefore time.Time `json:"not_before,omitzero"`
}

// storedCheckpoint is a checkpoint item's data: the checkpoint, or where
// its blob is.
type storedCheckpoint struct {
	C    *checkpoint `json:"c,omitempty"`
	Blob string      `json:"b,omitempty"`
	Size int         `json:"n,omitempty"`
}

func chainItem(chain string, rec chainRecord, refs int64) store.Item {
	data, _ := json.Marshal(rec)
	return store.Item{Key: chainKey(chain), Data: data, Nums: map[string]int64{"refs": refs}}
}

func gcItem(chain string, notBefore time.Time) store.Item {
	data, _ := json.Marshal(gcTask{NotBefore: notBefore})
	return store.Item{Key: gcKey(chain), Data: data}
}

func blobKey(dep, chain, id string) string {
	return "threads/" + dep + "/" + chain + "/" + id + ".json"
}

// checkpointPut encodes cp for chain: inline, or written to a blob first
// (the returned key, for cleanup when the write that follows fails).
func (s *Service) checkpointPut(ctx context.Context, dep, chain string, cp *checkpoint) (store.TxOp, string, error) {
	raw, err := json.Marshal(cp)
	if err != nil {
		return store.TxOp{}, "", err
	}
	var sc storedCheckpoint
	var bk string
	if len(raw) > inlineCheckpointMax {
		bk = blobKey(dep, chain, cp.ID)
		if err := blobs.WriteAll(ctx, s.blobs, bk, raw, "application/json"); err != nil {
			return store.TxOp{}, "", fmt.Errorf("threads: write checkpoint blob: %w", err)
		}
		sc = storedCheckpoint{Blob: bk, Size: len(raw)}
	} else {
		sc = storedCheckpoint{C: cp}
	}
	data, err := json.Marshal(sc)
	if err != nil {
		return store.TxOp{}, "", err
	}
	return store.TxOp{Kind: store.OpPut, Item: store.Item{Key: checkpointKey(chain, cp.ID), Data: data}, Cond: store.NotExists()}, bk, nil
}

func (s *Service) dropBlobs(ctx context.Context, keys []string) {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if err := s.blobs.Delete(context.WithoutCancel(ctx), k); err != nil {
			s.log.Warn("threads: could not remove an unused checkpoint blob", "key", k, "error", err.Error())
		}
	}
}

// decodeCheckpoint reads a checkpoint item's data, following a blob.
func (s *Service) decodeCheckpoint(ctx context.Context, data []byte) (*checkpoint, error) {
	return loadCheckpoint[checkpoint](ctx, s, data, decodeJSON)
}

// loadCheckpoint decodes a checkpoint item's data (inline or in its blob)
// into T: the whole checkpoint, or the head the fast reads need.
func loadCheckpoint[T any](ctx context.Context, s *Service, data []byte, decode func([]byte, any) error) (*T, error) {
	var sc struct {
		C    *T     `json:"c"`
		Blob string `json:"b"`
	}
	if err := decode(data, &sc); err != nil {
		return nil, fmt.Errorf("threads: corrupt checkpoint: %w", err)
	}
	if sc.C != nil {
		return sc.C, nil
	}
	if sc.Blob == "" {
		return nil, errors.New("threads: corrupt checkpoint: neither inline nor blob")
	}
	raw, err := blobs.ReadAll(ctx, s.blobs, sc.Blob)
	if err != nil {
		return nil, fmt.Errorf("threads: read checkpoint blob: %w", err)
	}
	var cp T
	if err := decode(raw, &cp); err != nil {
		return nil, fmt.Errorf("threads: corrupt checkpoint blob: %w", err)
	}
	return &cp, nil
}

// levelOf returns the lineage level holding checkpoint id, or -1 when no
// level can (the id is not of this thread).
func levelOf(lineage []segment, id string) int {
	for i := len(lineage) - 1; i >= 0; i-- {
		if i == 0 || id <= lineage[i].Upto {
			return i
		}
	}
	return -1
}

// getCheckpoint reads one checkpoint of thread t: one item (plus its blob
// when large).
func (s *Service) getCheckpoint(ctx context.Context, t *threadRecord, id string) (*checkpoint, error) {
	lvl := levelOf(t.Lineage, id)
	if lvl < 0 || id > t.Latest {
		return nil, store.ErrNotFound
	}
	it, err := s.st.Get(ctx, checkpointKey(t.Lineage[lvl].Chain, id))
	if err != nil {
		return nil, err
	}
	return s.decodeCheckpoint(ctx, it.Data)
}

// latestCheckpoint reads the thread's newest checkpoint (nil before any).
func (s *Service) latestCheckpoint(ctx context.Context, t *threadRecord) (*checkpoint, error) {
	if t.Latest == "" {
		return nil, nil
	}
	it, err := s.st.Get(ctx, checkpointKey(t.Lineage[t.LatestLevel].Chain, t.Latest))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("threads: thread %s lost its latest checkpoint", t.ID)
		}
		return nil, err
	}
	return s.decodeCheckpoint(ctx, it.Data)
}

// history lists the thread's checkpoints newest first, strictly older
// than before when it is set, keeping those whose metadata contains
// filter, up to limit. It reads one query page per lineage level it
// crosses, and items beyond limit only when the filter rejects some.
func (s *Service) history(ctx context.Context, t *threadRecord, before string, limit int, filter map[string]any) ([]*checkpoint, error) {
	if t.Latest == "" || limit <= 0 {
		return nil, nil
	}
	start := t.LatestLevel
	if before != "" {
		lvl := levelOf(t.Lineage, before)
		if lvl < 0 {
			return nil, nil
		}
		if lvl > start {
			start = lvl
		}
	}
	var out []*checkpoint
	for lvl := start; lvl < len(t.Lineage) && len(out) < limit; lvl++ {
		seg := t.Lineage[lvl]
		upper := ""
		if lvl > 0 {
			upper = seg.Upto
		}
		if before != "" && (upper == "" || before <= upper) {
			upper = before
		}
		q := store.Query{PK: "thrc#" + seg.Chain, Desc: true}
		if upper == "" {
			q.SK = store.SKCond{Op: store.SKBeginsWith, A: "cp#"}
		} else {
			q.SK = store.SKCond{Op: store.SKBetween, A: "cp#", B: "cp#" + upper}
		}
		for len(out) < limit {
			q.Limit = limit - len(out) + 1
			page, err := s.st.Query(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				if before != "" && it.SK == "cp#"+before {
					continue
				}
				cp, err := s.decodeCheckpoint(ctx, it.Data)
				if err != nil {
					return nil, err
				}
				if !metadataMatches(t, cp, filter) {
					continue
				}
				out = append(out, cp)
				if len(out) == limit {
					break
				}
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
	}
	return out, nil
}

// metadataMatches applies a history metadata filter to the snapshot
// metadata the thread would show for cp.
func metadataMatches(t *threadRecord, cp *checkpoint, filter map[string]any) bool {
	if len(filter) == 0 {
		return true
	}
	md := snapshotMetadata(t, cp)
	for k, v := range filter {
		got, ok := md[k]
		if !ok || !jsonEqual(got, v) {
			return false
		}
	}
	return true
}

// collect removes a chain nobody references any more: its checkpoints and
// blobs, then the chain itself, releasing its parent in the same
// transaction (so a crash never leaks or double-releases). It is
// idempotent; force ignores a staging chain's grace period.
func (s *Service) collect(ctx context.Context, chain string, force bool) error {
	for chain != "" {
		it, err := s.st.Get(ctx, chainKey(chain))
		if errors.Is(err, store.ErrNotFound) {
			return s.st.Delete(ctx, gcKey(chain), store.Condition{})
		}
		if err != nil {
			return err
		}
		var rec chainRecord
		if len(it.Data) > 0 {
			if err := json.Unmarshal(it.Data, &rec); err != nil {
				return fmt.Errorf("threads: corrupt chain %s: %w", chain, err)
			}
		}
		if rec.Staging && !force {
			task, err := s.st.Get(ctx, gcKey(chain))
			if err == nil {
				var gt gcTask
				_ = json.Unmarshal(task.Data, &gt)
				if s.now().Before(gt.NotBefore) {
					return nil
				}
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			} else {
				// The create finished (it removes the task).
				return nil
			}
		} else if !rec.Staging && it.Nums["refs"] > 0 {
			return s.st.Delete(ctx, gcKey(chain), store.Condition{})
		}
		if err := s.dropCheckpoints(ctx, chain); err != nil {
			return err
		}
		ops := []store.TxOp{
			{Kind: store.OpDelete, Key: chainKey(chain), Cond: store.HasVersion(it.Version)},
			{Kind: store.OpDelete, Key: gcKey(chain)},
		}
		if rec.Parent != "" {
			ops = append(ops,
				store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: chainKey(rec.Parent), Add: map[string]int64{"refs": -1}, Cond: store.Exists()}},
				store.TxOp{Kind: store.OpPut, Item: gcItem(rec.Parent, time.Time{})})
		}
		if err := s.st.Transact(ctx, ops); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				// Someone changed the chain meanwhile (a retry of this
				// task): look again.
				continue
			}
			return err
		}
		chain = rec.Parent
		force = false
	}
	return nil
}

// dropCheckpoints deletes every checkpoint item of a chain and its blobs.
func (s *Service) dropCheckpoints(ctx context.Context, chain string) error {
	for {
		page, err := s.st.Query(ctx, store.Query{PK: "thrc#" + chain, SK: store.SKCond{Op: store.SKBeginsWith, A: "cp#"}, Limit: store.MaxTxOps})
		if err != nil {
			return err
		}
		if len(page.Items) == 0 {
			return nil
		}
		ops := make([]store.TxOp, 0, len(page.Items))
		var blobKeys []string
		for _, it := range page.Items {
			var sc storedCheckpoint
			if json.Unmarshal(it.Data, &sc) == nil && sc.Blob != "" {
				blobKeys = append(blobKeys, sc.Blob)
			}
			ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: it.Key})
		}
		for _, b := range blobKeys {
			if err := s.blobs.Delete(ctx, b); err != nil {
				return fmt.Errorf("threads: delete checkpoint blob: %w", err)
			}
		}
		if err := s.st.Transact(ctx, ops); err != nil {
			return err
		}
	}
}

// requestGC asks the queue to collect chain now; the task item already
// written makes Sweep do it when the queue is absent or loses the message.
func (s *Service) requestGC(ctx context.Context, chain string) {
	if s.queue == nil || chain == "" {
		return
	}
	if err := s.queue.Enqueue(context.WithoutCancel(ctx), TopicGC, GCMessage{Chain: chain}); err != nil {
		s.log.Warn("threads: could not enqueue chain collection; the sweeper will do it", "chain", chain, "error", err.Error())
	}
}

// HandleGC is the queue consumer of TopicGC.
func (s *Service) HandleGC(ctx context.Context, raw json.RawMessage) error {
	var m GCMessage
	if err := json.Unmarshal(raw, &m); err != nil || m.Chain == "" {
		s.log.Error("threads: dropping malformed gc message")
		return nil
	}
	return s.collect(ctx, m.Chain, false)
}
