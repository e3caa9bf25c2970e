// Package datasets holds datasets and their versioned examples, in the wire
// format of the LangSmith REST API (so the langsmith SDKs work unmodified):
// datasets, examples (JSON and the SDK's multipart form), dataset versions
// with tags, splits, the examples filter language, and the experiment
// counters of a dataset (session_count, last_session_start_time), kept from
// the tracing domain's events.
//
// Versions. Every change to a dataset's examples commits one version: a
// sequence number s (1, 2, …) and a timestamp. Each example revision is
// valid on an interval [a, b) of sequence numbers. Open revisions (b = ∞)
// are indexed by a, so "open at s" is a key range; closed ones are stored in
// a segment tree of dyadic blocks over sequence numbers, so "closed and
// valid at s" is the union of one block partition per level, each holding
// only revisions valid at s. Reading a version therefore reads the
// examples it returns, whatever the length of the history (docs/datasets.md).
package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// Sentinel errors; the HTTP layer maps them to statuses. Errors returned by
// the service wrap one of them with a message for the caller.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// Error is a sentinel with a message meant for the API caller.
type Error struct {
	Kind error
	Msg  string
	// Loc, for ErrInvalid, is where in the request the problem is.
	Loc []any
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func notFound(format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}
func conflict(format string, args ...any) error {
	return &Error{Kind: ErrConflict, Msg: fmt.Sprintf(format, args...)}
}
func invalid(loc []any, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...), Loc: loc}
}

// Limits.
const (
	// MaxExampleBytes bounds an example's inputs, outputs and metadata
	// together: an example is stored inline twice (its revision and the
	// open index), each in a store item of at most 400 KB.
	MaxExampleBytes = 180 * 1024
	// txBudget is the store operations one version may take, and
	// txBytes the bytes (DynamoDB refuses transactions above 4 MB).
	txBudget = store.MaxTxOps
	txBytes  = 3 << 20
	// maxRetries bounds optimistic retries when writers race on a dataset.
	maxRetries = 50
)

// TopicExperiment is the tracing domain's event about an experiment (a
// project with a reference dataset): created, changed or deleted.
const TopicExperiment = "tracing.experiment"

// Options configure a Service.
type Options struct {
	Store  store.Store
	Logger *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Service implements datasets and examples.
type Service struct {
	st  store.Store
	log *slog.Logger
	now func() time.Time
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("datasets: a store is required")
	}
	s := &Service{st: o.Store, log: o.Logger, now: o.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// DataTypes are the dataset data types.
var DataTypes = []string{"kv", "llm", "chat"}

// Dataset is the API's dataset.
type Dataset struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          *string         `json:"description"`
	DataType             string          `json:"data_type"`
	CreatedAt            time.Time       `json:"created_at"`
	ModifiedAt           time.Time       `json:"modified_at"`
	ExampleCount         int64           `json:"example_count"`
	SessionCount         int64           `json:"session_count"`
	LastSessionStartTime *time.Time      `json:"last_session_start_time"`
	InputsSchema         json.RawMessage `json:"inputs_schema_definition"`
	OutputsSchema        json.RawMessage `json:"outputs_schema_definition"`
	Metadata             map[string]any  `json:"metadata"`
	TenantID             string          `json:"tenant_id"`
}

// datasetRec is the stored dataset: the API fields plus the version state.
type datasetRec struct {
	Dataset
	// Seq is the last committed version (0: no version yet) and VersionAt
	// its timestamp.
	Seq       int64     `json:"seq"`
	VersionAt time.Time `json:"version_at"`
}

// Example is the API's example.
type Example struct {
	ID          string          `json:"id"`
	DatasetID   string          `json:"dataset_id"`
	Inputs      json.RawMessage `json:"inputs"`
	Outputs     json.RawMessage `json:"outputs"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"created_at"`
	ModifiedAt  time.Time       `json:"modified_at"`
	SourceRunID *string         `json:"source_run_id"`
	// AttachmentURLs is always null: attachments are not stored.
	AttachmentURLs json.RawMessage `json:"attachment_urls"`
}

// revision is one stored revision of an example: valid from version Seq
// until the example's next revision (a tombstone when Deleted).
type revision struct {
	Example
	Seq     int64 `json:"seq"`
	Deleted bool  `json:"deleted,omitempty"`
}

// Version is a dataset version.
type Version struct {
	AsOf time.Time `json:"as_of"`
	Tags []string  `json:"tags"`
}

type versionRec struct {
	Seq  int64     `json:"seq"`
	AsOf time.Time `json:"as_of"`
	Tags []string  `json:"tags"`
}

type tagRec struct {
	Seq  int64     `json:"seq"`
	AsOf time.Time `json:"as_of"`
}

// blockRec points at a closed revision from a segment-tree block.
type blockRec struct {
	ID  string `json:"id"`
	Seq int64  `json:"seq"`
}

type headRec struct {
	Workspace string `json:"ws"`
	Dataset   string `json:"ds"`
}

// ---- storage layout (docs/datasets.md) ----

const tsLayout = "2006-01-02T15:04:05.000000Z"

func ts(t time.Time) string { return t.UTC().Format(tsLayout) }
func seqHex(n int64) string { return fmt.Sprintf("%016x", n) }

func dsPK(ws string) string              { return "dsw#" + ws }
func datasetKey(ws, id string) store.Key { return store.Key{PK: dsPK(ws), SK: "ds#" + id} }
func nameKey(ws, name string) store.Key  { return store.Key{PK: dsPK(ws), SK: "dsname#" + name} }
func headKey(id string) store.Key        { return store.Key{PK: "ex#" + id, SK: "head"} }
func revPK(ds string) string             { return "dsrev#" + ds }
func revKey(ds, ex string, seq int64) store.Key {
	return store.Key{PK: revPK(ds), SK: ex + "#" + seqHex(seq)}
}
func openPK(ds string) string { return "dsopen#" + ds }
func openKey(ds, ex string, seq int64) store.Key {
	return store.Key{PK: openPK(ds), SK: seqHex(seq) + "#" + ex}
}
func orderPK(ds string) string { return "dsord#" + ds }
func orderSK(e Example) string { return ts(e.CreatedAt) + "#" + e.ID }
func segPK(ds string, level int, node int64) string {
	return fmt.Sprintf("dsseg#%s#%d#%x", ds, level, node)
}
func verPK(ds string) string { return "dsver#" + ds }
func versionKey(ds string, at time.Time) store.Key {
	return store.Key{PK: verPK(ds), SK: "v#" + ts(at)}
}
func tagKey(ds, tag string) store.Key { return store.Key{PK: verPK(ds), SK: "t#" + tag} }
func expPK(ds string) string          { return "dsexp#" + ds }
func gcKey(ds string) store.Key       { return store.Key{PK: "dsgc", SK: ds} }

// block is one dyadic block [node·2^level, (node+1)·2^level) of versions.
type block struct {
	level int
	node  int64
}

// blocks decomposes [a, b) into the fewest dyadic blocks: at most
// 2·log2(b−a)+2 of them.
func blocks(a, b int64) []block {
	var out []block
	for a < b {
		l := 62
		if a != 0 {
			l = bits.TrailingZeros64(uint64(a))
		}
		for l > 0 && a+int64(1)<<l > b {
			l--
		}
		out = append(out, block{level: l, node: a >> l})
		a += int64(1) << l
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own, always-encodable types are marshalled
	}
	return b
}

func newID() string { return uuid.NewString() }

// ---- datasets ----

// CreateDataset is the body of POST /datasets.
type CreateDataset struct {
	Name          string
	Description   *string
	DataType      string
	InputsSchema  json.RawMessage
	OutputsSchema json.RawMessage
	Metadata      map[string]any
	ID            string
	CreatedAt     time.Time
}

// validName checks a dataset name.
func validName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > 1000 {
		return invalid([]any{"body", "name"}, "name must be 1 to 1000 characters")
	}
	return nil
}

// CreateDataset stores a new dataset; a name already used in the workspace
// is a conflict.
func (s *Service) CreateDataset(ctx context.Context, ws string, c CreateDataset) (Dataset, error) {
	if err := validName(c.Name); err != nil {
		return Dataset{}, err
	}
	if c.DataType == "" {
		c.DataType = "kv"
	}
	if !validDataType(c.DataType) {
		return Dataset{}, invalid([]any{"body", "data_type"}, "data_type must be one of kv, llm, chat")
	}
	if c.ID == "" {
		c.ID = newID()
	}
	now := s.clock()
	created := now
	if !c.CreatedAt.IsZero() {
		created = c.CreatedAt.UTC().Truncate(time.Microsecond)
	}
	d := datasetRec{Dataset: Dataset{
		ID: c.ID, Name: c.Name, Description: c.Description, DataType: c.DataType,
		CreatedAt: created, ModifiedAt: now, InputsSchema: c.InputsSchema, OutputsSchema: c.OutputsSchema,
		Metadata: c.Metadata, TenantID: ws,
	}}
	err := s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: store.Item{Key: nameKey(ws, c.Name), Data: []byte(c.ID)}, Cond: store.NotExists()},
		{Kind: store.OpPut, Item: datasetItem(ws, d), Cond: store.NotExists()},
	})
	var tce *store.TxConditionError
	if errors.As(err, &tce) {
		if tce.Index == 0 {
			return Dataset{}, conflict("Dataset with name %q already exists", c.Name)
		}
		return Dataset{}, conflict("Dataset %s already exists", c.ID)
	}
	if err != nil {
		return Dataset{}, err
	}
	return d.Dataset, nil
}

func validDataType(t string) bool {
	for _, v := range DataTypes {
		if v == t {
			return true
		}
	}
	return false
}

func datasetItem(ws string, d datasetRec) store.Item {
	return store.Item{Key: datasetKey(ws, d.ID), Data: mustJSON(d),
		Indexes: map[string]store.IndexKey{"gsi1": {PK: dsPK(ws), SK: ts(d.CreatedAt) + "#" + d.ID}}}
}

func (s *Service) getDataset(ctx context.Context, ws, id string) (datasetRec, int64, error) {
	it, err := s.st.Get(ctx, datasetKey(ws, id))
	if errors.Is(err, store.ErrNotFound) {
		return datasetRec{}, 0, notFound("Dataset %s not found", id)
	}
	if err != nil {
		return datasetRec{}, 0, err
	}
	var d datasetRec
	if err := decodeJSON(it.Data, &d); err != nil {
		return datasetRec{}, 0, err
	}
	return d, it.Version, nil
}

// GetDataset returns a dataset of the workspace.
func (s *Service) GetDataset(ctx context.Context, ws, id string) (Dataset, error) {
	d, _, err := s.getDataset(ctx, ws, id)
	return d.Dataset, err
}

// DatasetQuery filters GET /datasets.
type DatasetQuery struct {
	IDs          []string
	DataType     string
	Name         string
	NameContains string
	Metadata     map[string]any
	Limit        int
	Offset       int
}

// ListDatasets lists the workspace's datasets, newest first.
func (s *Service) ListDatasets(ctx context.Context, ws string, q DatasetQuery) ([]Dataset, error) {
	match := func(d Dataset) bool {
		if q.DataType != "" && d.DataType != q.DataType {
			return false
		}
		if q.Name != "" && d.Name != q.Name {
			return false
		}
		if q.NameContains != "" && !strings.Contains(strings.ToLower(d.Name), strings.ToLower(q.NameContains)) {
			return false
		}
		return containsAll(d.Metadata, q.Metadata)
	}
	out := []Dataset{}
	// Ids, or an exact name, are point reads.
	var ids []string
	switch {
	case len(q.IDs) > 0:
		ids = q.IDs
	case q.Name != "":
		it, err := s.st.Get(ctx, nameKey(ws, q.Name))
		if errors.Is(err, store.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		ids = []string{string(it.Data)}
	}
	if ids != nil {
		var found []Dataset
		for _, id := range ids {
			d, _, err := s.getDataset(ctx, ws, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if match(d.Dataset) {
				found = append(found, d.Dataset)
			}
		}
		sort.Slice(found, func(i, j int) bool {
			if !found[i].CreatedAt.Equal(found[j].CreatedAt) {
				return found[i].CreatedAt.After(found[j].CreatedAt)
			}
			return found[i].ID > found[j].ID
		})
		return page(found, q.Offset, q.Limit), nil
	}
	query := store.Query{Index: "gsi1", PK: dsPK(ws), Desc: true}
	skipped := 0
	for {
		pg, err := s.st.Query(ctx, query)
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Items {
			var d datasetRec
			if err := decodeJSON(it.Data, &d); err != nil {
				return nil, err
			}
			if !match(d.Dataset) {
				continue
			}
			if skipped < q.Offset {
				skipped++
				continue
			}
			out = append(out, d.Dataset)
			if len(out) >= q.Limit {
				return out, nil
			}
		}
		if pg.Next == "" {
			return out, nil
		}
		query.Cursor = pg.Next
	}
}

func page[T any](items []T, offset, limit int) []T {
	if offset >= len(items) {
		return []T{}
	}
	items = items[offset:]
	if len(items) > limit {
		items = items[:limit]
	}
	return items
}

// containsAll reports whether every key of want is in have with an equal
// JSON value.
func containsAll(have, want map[string]any) bool {
	for k, v := range want {
		hv, ok := have[k]
		if !ok || !jsonEqual(hv, v) {
			return false
		}
	}
	return true
}

// PatchDataset changes a dataset's fields; nil fields are kept.
type PatchDataset struct {
	Name          *string
	Description   *string
	InputsSchema  json.RawMessage
	OutputsSchema json.RawMessage
	Metadata      map[string]any
	// SetMetadata is true when metadata was given (null clears it).
	SetMetadata bool
}

// UpdateDataset applies p.
func (s *Service) UpdateDataset(ctx context.Context, ws, id string, p PatchDataset) (Dataset, error) {
	if p.Name != nil {
		if err := validName(*p.Name); err != nil {
			return Dataset{}, err
		}
	}
	for range maxRetries {
		d, ver, err := s.getDataset(ctx, ws, id)
		if err != nil {
			return Dataset{}, err
		}
		old := d.Name
		if p.Name != nil {
			d.Name = *p.Name
		}
		if p.Description != nil {
			d.Description = p.Description
		}
		if p.InputsSchema != nil {
			d.InputsSchema = p.InputsSchema
		}
		if p.OutputsSchema != nil {
			d.OutputsSchema = p.OutputsSchema
		}
		if p.SetMetadata {
			d.Metadata = p.Metadata
		}
		d.ModifiedAt = s.clock()
		ops := []store.TxOp{{Kind: store.OpPut, Item: datasetItem(ws, d), Cond: store.HasVersion(ver)}}
		if d.Name != old {
			ops = append(ops,
				store.TxOp{Kind: store.OpPut, Item: store.Item{Key: nameKey(ws, d.Name), Data: []byte(id)}, Cond: store.NotExists()},
				store.TxOp{Kind: store.OpDelete, Key: nameKey(ws, old)})
		}
		err = s.st.Transact(ctx, ops)
		var tce *store.TxConditionError
		if errors.As(err, &tce) {
			if tce.Index == 1 {
				return Dataset{}, conflict("Dataset with name %q already exists", d.Name)
			}
			continue
		}
		if err != nil {
			return Dataset{}, err
		}
		return d.Dataset, nil
	}
	return Dataset{}, fmt.Errorf("datasets: dataset %s: too much contention", id)
}

// DeleteDataset removes a dataset. Its examples and versions become
// unreachable at once and are purged by Sweep.
func (s *Service) DeleteDataset(ctx context.Context, ws, id string) error {
	for range maxRetries {
		d, ver, err := s.getDataset(ctx, ws, id)
		if err != nil {
			return err
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpDelete, Key: datasetKey(ws, id), Cond: store.HasVersion(ver)},
			{Kind: store.OpDelete, Key: nameKey(ws, d.Name)},
			{Kind: store.OpPut, Item: store.Item{Key: gcKey(id), Data: mustJSON(gcRec{Workspace: ws, Seq: d.Seq})}},
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return err
	}
	return fmt.Errorf("datasets: dataset %s: too much contention", id)
}

type gcRec struct {
	Workspace string `json:"ws"`
	Seq       int64  `json:"seq"`
}
