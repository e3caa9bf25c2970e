package threads

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"time"
)

// Thread statuses.
const (
	StatusIdle        = "idle"
	StatusBusy        = "busy"
	StatusInterrupted = "interrupted"
	StatusError       = "error"
)

var statuses = []string{StatusIdle, StatusBusy, StatusInterrupted, StatusError}

func validStatus(s string) bool {
	for _, v := range statuses {
		if v == s {
			return true
		}
	}
	return false
}

// TTL strategies.
const (
	TTLDelete     = "delete"
	TTLKeepLatest = "keep_latest"
)

// Special node names of LangGraph.
const (
	nodeInput = "__input__"
	nodeStart = "__start__"
	nodeEnd   = "__end__"
	nodeCopy  = "__copy__"
)

// segment is one level of a thread's checkpoint lineage: the checkpoints
// of chain Chain with ids up to Upto ("" = no bound; only the head).
type segment struct {
	Chain string `json:"c"`
	Upto  string `json:"u,omitempty"`
}

// ttlState is a thread's time to live.
type ttlState struct {
	Strategy  string    `json:"strategy"`
	Minutes   float64   `json:"minutes"`
	ExpiresAt time.Time `json:"expires_at"`
}

// threadRecord is the stored thread (the Data of its thread item).
type threadRecord struct {
	ID             string         `json:"id"`
	Deployment     string         `json:"dep"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	StateUpdatedAt time.Time      `json:"state_updated_at"`
	Metadata       map[string]any `json:"metadata"`
	Status         string         `json:"status"`
	// Values are the current state values, inline while small; when
	// ValuesLarge they are read from the latest checkpoint.
	Values      map[string]any `json:"values,omitempty"`
	ValuesLarge bool           `json:"values_large,omitempty"`
	// ValuePairs are the indexed top-level pairs of the values (key →
	// hash), kept here because large values are not inline; ValuesOverflow:
	// the values had more keys than are indexed.
	ValuePairs     map[string]string `json:"vpairs,omitempty"`
	ValuesOverflow bool              `json:"vovf,omitempty"`
	// Latest is the newest checkpoint id ("" before any state) and
	// LatestLevel its lineage level.
	Latest      string `json:"latest,omitempty"`
	LatestLevel int    `json:"latest_level,omitempty"`
	// Lineage lists the thread's checkpoint chains from its own (head)
	// chain down to the oldest shared one.
	Lineage []segment `json:"lineage"`
	TTL     *ttlState `json:"ttl,omitempty"`
	// Overflow: the metadata had more indexable pairs than are indexed.
	Overflow bool `json:"overflow,omitempty"`
}

func (t *threadRecord) graphID() string {
	g, _ := t.Metadata["graph_id"].(string)
	return g
}

// expired reports whether a delete-strategy TTL has run out: such a thread
// is gone for every reader even before the sweeper removes it.
func (t *threadRecord) expired(now time.Time) bool {
	return t.TTL != nil && t.TTL.Strategy == TTLDelete && !now.Before(t.TTL.ExpiresAt)
}

// checkpoint is one stored state of a thread.
type checkpoint struct {
	ID        string         `json:"id"`
	Parent    string         `json:"parent,omitempty"`
	CreatedAt time.Time      `json:"ts"`
	Values    map[string]any `json:"values"`
	// Next are the nodes due to run; Input is the pending __start__ input
	// written by an __input__ update and not yet consumed.
	Next  []string `json:"next,omitempty"`
	Input any      `json:"input,omitempty"`
	// HasInput distinguishes a pending null input from none.
	HasInput bool         `json:"has_input,omitempty"`
	Meta     checkpointMD `json:"meta"`
}

// checkpointMD is the checkpoint metadata LangGraph records.
type checkpointMD struct {
	Source  string         `json:"source"`
	Step    int            `json:"step"`
	Writes  map[string]any `json:"writes"`
	Parents map[string]any `json:"parents"`
	GraphID string         `json:"graph_id,omitempty"`
	// Base is the checkpoint the write started from (LangGraph copies the
	// config's checkpoint_id into the metadata).
	Base string `json:"base,omitempty"`
}

// Thread is the API shape of a thread.
type Thread struct {
	ThreadID       string         `json:"thread_id"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
	StateUpdatedAt string         `json:"state_updated_at"`
	Metadata       map[string]any `json:"metadata"`
	Status         string         `json:"status"`
	Config         map[string]any `json:"config"`
	Values         map[string]any `json:"values"`
	Interrupts     map[string]any `json:"interrupts"`
	TTL            *TTLInfo       `json:"ttl,omitempty"`
}

// TTLInfo is the ttl object of GET /threads/{id}?include=ttl.
type TTLInfo struct {
	Strategy   string  `json:"strategy"`
	TTLMinutes float64 `json:"ttl_minutes"`
	ExpiresAt  string  `json:"expires_at"`
}

// CheckpointRef is a CheckpointConfig.
type CheckpointRef struct {
	CheckpointID string `json:"checkpoint_id"`
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
}

// Task is a pending task of a state snapshot.
type Task struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Path       []any  `json:"path"`
	Error      any    `json:"error"`
	Interrupts []any  `json:"interrupts"`
	Checkpoint any    `json:"checkpoint"`
	State      any    `json:"state"`
	Result     any    `json:"result"`
}

// State is a thread state snapshot: exactly the interface's fields.
type State struct {
	Values             map[string]any `json:"values"`
	Next               []string       `json:"next"`
	Tasks              []Task         `json:"tasks"`
	Metadata           map[string]any `json:"metadata"`
	CreatedAt          *string        `json:"created_at"`
	Checkpoint         *CheckpointRef `json:"checkpoint"`
	ParentCheckpoint   *CheckpointRef `json:"parent_checkpoint"`
	CheckpointID       *string        `json:"checkpoint_id"`
	ParentCheckpointID *string        `json:"parent_checkpoint_id"`
}

// apiTime renders a timestamp the way the Python servers do.
func apiTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
}

// sortTime renders a timestamp for index sort keys: fixed width, so the
// byte order is the time order.
func sortTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// canonicalJSON encodes a decoded JSON value with sorted keys and numbers
// in their shortest float form, so equal values encode identically (the
// metadata pair index hashes it).
func canonicalJSON(v any) []byte {
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeCanonical(b, t[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, x)
		}
		b.WriteByte(']')
	default:
		if f, ok := toFloat(v); ok {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
			return
		}
		vb, _ := json.Marshal(v)
		b.Write(vb)
	}
}

// decodeJSON decodes data keeping numbers exact (json.Number).
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
