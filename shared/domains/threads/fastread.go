package threads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// The hot reads (GET a thread, GET its state) answer without decoding the
// stored metadata, values and writes into Go maps and encoding them again:
// those parts were written by json.Marshal (compact, keys sorted, HTML
// escaped), which is exactly what encoding them again would produce, so
// they are copied through as they are. The rest of the record is decoded
// into the few fields the answer needs. The general paths (Get, GetState)
// stay for everything else; tests run both and compare (checkFastReads).

// checkFastReads makes every fast read also render the general way and
// panic on any difference (set by the package's tests).
var checkFastReads bool

// threadHead is the part of a stored thread (threadRecord) a read needs.
type threadHead struct {
	ID             string          `json:"id"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	StateUpdatedAt time.Time       `json:"state_updated_at"`
	Metadata       json.RawMessage `json:"metadata"`
	Status         string          `json:"status"`
	Values         json.RawMessage `json:"values"`
	ValuesLarge    bool            `json:"values_large"`
	Latest         string          `json:"latest"`
	LatestLevel    int             `json:"latest_level"`
	Lineage        []segment       `json:"lineage"`
	TTL            *ttlState       `json:"ttl"`
}

func (t *threadHead) expired(now time.Time) bool {
	d := t.deleteAt()
	return !d.IsZero() && !now.Before(d)
}

// threadItem reads a thread's stored bytes, whatever its TTL.
func (s *Service) threadItem(ctx context.Context, dep, tid string) ([]byte, error) {
	var data []byte
	var err error
	if dg, ok := s.st.(dataGetter); ok {
		data, _, err = dg.GetData(ctx, threadKey(dep, tid))
	} else {
		var it store.Item
		it, err = s.st.Get(ctx, threadKey(dep, tid))
		data = it.Data
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, threadNotFound(tid)
	}
	return data, err
}

// dataGetter is a store that reads an item's data alone, without decoding
// its index keys and counters (boltstore): the hot reads need no more.
type dataGetter interface {
	GetData(ctx context.Context, k store.Key) ([]byte, int64, error)
}

// decodeHead decodes a live thread's head from its stored bytes.
func (s *Service) decodeHead(data []byte, tid string) (*threadHead, error) {
	var t threadHead
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("threads: corrupt thread: %w", err)
	}
	if t.expired(s.now()) {
		return nil, threadNotFound(tid)
	}
	return &t, nil
}

// deleteAt is when a thread's delete TTL makes it absent (zero: never).
func (t *threadHead) deleteAt() time.Time {
	if t.TTL != nil && t.TTL.Strategy == TTLDelete {
		return t.TTL.ExpiresAt
	}
	return time.Time{}
}

// cachedRead answers a hot read from the answer kept for the thread's
// stored bytes, or renders it and keeps it. render returns the answer,
// when the thread will read as absent (its delete TTL), and whether the
// answer may be kept (it came from data alone).
func (s *Service) cachedRead(ctx context.Context, kind byte, dep, tid string, render func(data []byte) (out []byte, expires time.Time, keep bool, err error)) ([]byte, error) {
	data, err := s.threadItem(ctx, dep, tid)
	if err != nil {
		return nil, err
	}
	key := renderID{kind, dep, tid}
	if out, gone, ok := s.renders.get(key, data, s.now()); ok {
		if gone {
			return nil, threadNotFound(tid)
		}
		return out, nil
	}
	out, expires, keep, err := render(data)
	if err != nil {
		return nil, err
	}
	if keep {
		s.renders.put(key, data, out, expires)
	}
	return out, nil
}

var (
	rawEmptyObject = json.RawMessage(`{}`)
	rawNull        = json.RawMessage(`null`)
)

// objectOrEmpty is raw, or {} when absent or null (a nil map).
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || bytes.Equal(raw, rawNull) {
		return rawEmptyObject
	}
	return raw
}

// threadWire is Thread with its maps kept encoded (same fields, same order).
type threadWire struct {
	ThreadID       string          `json:"thread_id"`
	CreatedAt      string          `json:"created_at"`
	UpdatedAt      string          `json:"updated_at"`
	StateUpdatedAt string          `json:"state_updated_at"`
	Metadata       json.RawMessage `json:"metadata"`
	Status         string          `json:"status"`
	Config         json.RawMessage `json:"config"`
	Values         json.RawMessage `json:"values"`
	Interrupts     json.RawMessage `json:"interrupts"`
	TTL            *TTLInfo        `json:"ttl,omitempty"`
}

// GetJSON is Get, encoded: one item read, no map decoded.
func (s *Service) GetJSON(ctx context.Context, dep, tid string, withTTL bool) ([]byte, error) {
	kind := byte(renderThread)
	if withTTL {
		kind = renderThreadTTL
	}
	b, err := s.cachedRead(ctx, kind, dep, tid, func(data []byte) ([]byte, time.Time, bool, error) {
		return s.renderThread(ctx, dep, tid, data, withTTL)
	})
	if err == nil && checkFastReads {
		th, gerr := s.Get(ctx, dep, tid, withTTL)
		mustMatch("GET thread", b, th, gerr)
	}
	return b, err
}

// renderThread is GET thread's answer for the stored bytes data.
func (s *Service) renderThread(ctx context.Context, dep, tid string, data []byte, withTTL bool) ([]byte, time.Time, bool, error) {
	t, err := s.decodeHead(data, tid)
	if err != nil {
		return nil, time.Time{}, false, err
	}
	if t.ValuesLarge && t.Latest != "" {
		// The values live in the latest checkpoint: the general path,
		// which reads the thread again (perhaps newer than data), so its
		// answer is not kept.
		th, err := s.Get(ctx, dep, tid, withTTL)
		if err != nil {
			return nil, time.Time{}, false, err
		}
		b, err := json.Marshal(th)
		return b, time.Time{}, false, err
	}
	out := threadWire{
		ThreadID: t.ID, CreatedAt: apiTime(t.CreatedAt), UpdatedAt: apiTime(t.UpdatedAt),
		StateUpdatedAt: apiTime(t.StateUpdatedAt), Metadata: objectOrEmpty(t.Metadata), Status: t.Status,
		Config: rawEmptyObject, Values: rawNull, Interrupts: rawEmptyObject,
	}
	if t.Latest != "" {
		out.Values = objectOrEmpty(t.Values)
	}
	if withTTL && t.TTL != nil {
		out.TTL = &TTLInfo{Strategy: t.TTL.Strategy, TTLMinutes: t.TTL.Minutes, ExpiresAt: apiTime(t.TTL.ExpiresAt)}
	}
	b, err := json.Marshal(out)
	return b, t.deleteAt(), true, err
}

// checkpointHead is the part of a stored checkpoint a snapshot needs.
type checkpointHead struct {
	ID        string          `json:"id"`
	Parent    string          `json:"parent"`
	CreatedAt time.Time       `json:"ts"`
	Values    json.RawMessage `json:"values"`
	Next      []string        `json:"next"`
	Meta      struct {
		Source  string          `json:"source"`
		Step    int             `json:"step"`
		Writes  json.RawMessage `json:"writes"`
		Parents json.RawMessage `json:"parents"`
		GraphID string          `json:"graph_id"`
		Base    string          `json:"base"`
	} `json:"meta"`
}

// stateWire is State with its maps kept encoded (same fields, same order).
type stateWire struct {
	Values             json.RawMessage `json:"values"`
	Next               []string        `json:"next"`
	Tasks              []Task          `json:"tasks"`
	Metadata           snapshotMDWire  `json:"metadata"`
	CreatedAt          string          `json:"created_at"`
	Checkpoint         CheckpointRef   `json:"checkpoint"`
	ParentCheckpoint   *CheckpointRef  `json:"parent_checkpoint"`
	CheckpointID       string          `json:"checkpoint_id"`
	ParentCheckpointID *string         `json:"parent_checkpoint_id"`
}

// snapshotMDWire is snapshotMetadata's map as a struct: its fields in the
// sorted key order json.Marshal gives the map.
type snapshotMDWire struct {
	CheckpointID string          `json:"checkpoint_id,omitempty"`
	GraphID      string          `json:"graph_id,omitempty"`
	Parents      json.RawMessage `json:"parents"`
	Source       string          `json:"source"`
	Step         int             `json:"step"`
	ThreadID     string          `json:"thread_id"`
	Writes       json.RawMessage `json:"writes"`
}

// GetStateJSON is GetState at the latest checkpoint, encoded: the thread
// item and the checkpoint item, no map decoded (the thread item alone when
// its answer is kept).
func (s *Service) GetStateJSON(ctx context.Context, dep, tid string) ([]byte, error) {
	b, err := s.cachedRead(ctx, renderState, dep, tid, func(data []byte) ([]byte, time.Time, bool, error) {
		t, err := s.decodeHead(data, tid)
		if err != nil {
			return nil, time.Time{}, false, err
		}
		b, err := s.renderState(ctx, t)
		return b, t.deleteAt(), true, err
	})
	if err == nil && checkFastReads {
		st, gerr := s.GetState(ctx, dep, tid, "")
		mustMatch("GET state", b, st, gerr)
	}
	return b, err
}

// renderState is GET state's answer for the thread t (its latest
// checkpoint, which never changes once written).
func (s *Service) renderState(ctx context.Context, t *threadHead) ([]byte, error) {
	var md map[string]json.RawMessage
	if len(t.Metadata) > 0 {
		if err := json.Unmarshal(t.Metadata, &md); err != nil {
			return nil, fmt.Errorf("threads: corrupt thread metadata: %w", err)
		}
	}
	var graphID string
	if g := md["graph_id"]; len(g) > 0 && g[0] == '"' {
		_ = json.Unmarshal(g, &graphID)
	}
	if graphID == "" || t.Latest == "" {
		return json.Marshal(emptyState())
	}
	it, err := s.st.Get(ctx, checkpointKey(t.Lineage[t.LatestLevel].Chain, t.Latest))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("threads: thread %s lost its latest checkpoint", t.ID)
		}
		return nil, err
	}
	cp, err := s.decodeCheckpointHead(ctx, it.Data)
	if err != nil {
		return nil, err
	}
	next, tasks := pendingTasks(cp.ID, cp.Next)
	out := stateWire{
		Values: objectOrEmpty(cp.Values), Next: next, Tasks: tasks,
		Metadata: snapshotMDWire{CheckpointID: cp.Meta.Base, GraphID: cp.Meta.GraphID, Parents: objectOrEmpty(cp.Meta.Parents),
			Source: cp.Meta.Source, Step: cp.Meta.Step, ThreadID: t.ID, Writes: objectOrEmpty(cp.Meta.Writes)},
		CreatedAt:    apiTime(cp.CreatedAt),
		Checkpoint:   CheckpointRef{CheckpointID: cp.ID, ThreadID: t.ID},
		CheckpointID: cp.ID,
	}
	if cp.Parent != "" {
		p := cp.Parent
		out.ParentCheckpoint = &CheckpointRef{CheckpointID: p, ThreadID: t.ID}
		out.ParentCheckpointID = &p
	}
	return json.Marshal(out)
}

// decodeCheckpointHead is decodeCheckpoint for a checkpointHead.
func (s *Service) decodeCheckpointHead(ctx context.Context, data []byte) (*checkpointHead, error) {
	return loadCheckpoint[checkpointHead](ctx, s, data, json.Unmarshal)
}

// mustMatch panics when a fast read differs from the general one (tests).
func mustMatch(what string, fast []byte, general any, err error) {
	if err != nil {
		panic(fmt.Sprintf("threads: %s: the general path failed where the fast one answered: %v", what, err))
	}
	want, _ := json.Marshal(general)
	if !bytes.Equal(fast, want) {
		panic(fmt.Sprintf("threads: %s differs from the general path:\nfast    %s\ngeneral %s", what, fast, want))
	}
}
