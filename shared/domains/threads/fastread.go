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
	return t.TTL != nil && t.TTL.Strategy == TTLDelete && !now.Before(t.TTL.ExpiresAt)
}

// loadHead reads a live thread's head.
func (s *Service) loadHead(ctx context.Context, dep, tid string) (*threadHead, error) {
	it, err := s.st.Get(ctx, threadKey(dep, tid))
	if errors.Is(err, store.ErrNotFound) {
		return nil, threadNotFound(tid)
	}
	if err != nil {
		return nil, err
	}
	var t threadHead
	if err := json.Unmarshal(it.Data, &t); err != nil {
		return nil, fmt.Errorf("threads: corrupt thread: %w", err)
	}
	if t.expired(s.now()) {
		return nil, threadNotFound(tid)
	}
	return &t, nil
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
	t, err := s.loadHead(ctx, dep, tid)
	if err != nil {
		return nil, err
	}
	if t.ValuesLarge && t.Latest != "" {
		// The values live in the latest checkpoint: the general path.
		th, err := s.Get(ctx, dep, tid, withTTL)
		if err != nil {
			return nil, err
		}
		return json.Marshal(th)
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
	if err == nil && checkFastReads {
		th, gerr := s.Get(ctx, dep, tid, withTTL)
		mustMatch("GET thread", b, th, gerr)
	}
	return b, err
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
// item and the checkpoint item, no map decoded.
func (s *Service) GetStateJSON(ctx context.Context, dep, tid string) ([]byte, error) {
	t, err := s.loadHead(ctx, dep, tid)
	if err != nil {
		return nil, err
	}
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
	b, err := json.Marshal(out)
	if err == nil && checkFastReads {
		st, gerr := s.GetState(ctx, dep, tid, "")
		mustMatch("GET state", b, st, gerr)
	}
	return b, err
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
