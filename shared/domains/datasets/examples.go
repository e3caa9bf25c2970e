package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// SplitKey is the metadata key that holds an example's splits (a list of
// names), as in LangSmith; an example created without a split is in
// DefaultSplit.
const (
	SplitKey     = "dataset_split"
	DefaultSplit = "base"
)

// NewExample is one example to create.
type NewExample struct {
	ID          string
	Inputs      json.RawMessage
	Outputs     json.RawMessage
	Metadata    map[string]any
	Split       []string
	CreatedAt   time.Time
	SourceRunID *string
}

// ExamplePatch changes an example; nil fields are kept.
type ExamplePatch struct {
	ID       string
	Inputs   json.RawMessage
	Outputs  json.RawMessage
	Metadata map[string]any
	// SetMetadata is true when metadata was given.
	SetMetadata bool
	// Split, when non-nil, replaces the example's splits.
	Split []string
}

// mutation is one example change of a version: exactly one of create,
// patch and del.
type mutation struct {
	id     string
	create *Example
	patch  func(cur Example) (Example, error)
	del    bool
}

// CreateExamples adds examples to a dataset in one version (several when
// they do not fit one store transaction) and returns them.
func (s *Service) CreateExamples(ctx context.Context, ws, dataset string, in []NewExample) ([]Example, error) {
	if len(in) == 0 {
		return []Example{}, nil
	}
	muts := make([]mutation, len(in))
	seen := map[string]bool{}
	for i, n := range in {
		if n.ID == "" {
			n.ID = newID()
		}
		if seen[n.ID] {
			return nil, invalid([]any{"body", i, "id"}, "example id %s appears twice", n.ID)
		}
		seen[n.ID] = true
		md := n.Metadata
		if md == nil {
			md = map[string]any{}
		}
		if n.Split != nil {
			md[SplitKey] = toAny(n.Split)
		} else if _, ok := md[SplitKey]; !ok {
			md[SplitKey] = []any{DefaultSplit}
		}
		ex := Example{ID: n.ID, Inputs: orEmptyObject(n.Inputs), Outputs: n.Outputs, Metadata: mustJSON(md),
			CreatedAt: n.CreatedAt, SourceRunID: n.SourceRunID}
		if err := checkSize(ex, i); err != nil {
			return nil, err
		}
		muts[i] = mutation{id: n.ID, create: &ex}
	}
	return s.apply(ctx, ws, dataset, muts)
}

// UpdateExamples applies patches to examples of one dataset in one version.
func (s *Service) UpdateExamples(ctx context.Context, ws, dataset string, in []ExamplePatch) ([]Example, error) {
	muts := make([]mutation, len(in))
	seen := map[string]bool{}
	for i, p := range in {
		if seen[p.ID] {
			return nil, invalid([]any{"body", i, "id"}, "example id %s appears twice", p.ID)
		}
		seen[p.ID] = true
		idx := i
		muts[i] = mutation{id: p.ID, patch: func(cur Example) (Example, error) {
			if p.Inputs != nil {
				cur.Inputs = p.Inputs
			}
			if p.Outputs != nil {
				cur.Outputs = p.Outputs
			}
			md := map[string]any{}
			if p.SetMetadata {
				if p.Metadata != nil {
					md = p.Metadata
				}
				if _, ok := md[SplitKey]; !ok && p.Split == nil {
					// Metadata replaces the example's, but its splits stay
					// unless given: they are the dataset's partition, not
					// user metadata.
					old := map[string]any{}
					_ = decodeJSON(cur.Metadata, &old)
					if v, ok := old[SplitKey]; ok {
						md[SplitKey] = v
					}
				}
			} else if len(cur.Metadata) > 0 && string(cur.Metadata) != "null" {
				if err := decodeJSON(cur.Metadata, &md); err != nil {
					return Example{}, err
				}
			}
			if p.Split != nil {
				md[SplitKey] = toAny(p.Split)
			}
			cur.Metadata = mustJSON(md)
			return cur, checkSize(cur, idx)
		}}
	}
	return s.apply(ctx, ws, dataset, muts)
}

// DeleteExample deletes an example (a new version without it).
func (s *Service) DeleteExample(ctx context.Context, ws, id string) error {
	h, err := s.head(ctx, ws, id)
	if err != nil {
		return err
	}
	_, err = s.apply(ctx, ws, h.Dataset, []mutation{{id: id, del: true}})
	return err
}

// PatchExample applies one patch to the example with that id, wherever it is
// in the workspace.
func (s *Service) PatchExample(ctx context.Context, ws string, p ExamplePatch) (Example, error) {
	h, err := s.head(ctx, ws, p.ID)
	if err != nil {
		return Example{}, err
	}
	out, err := s.UpdateExamples(ctx, ws, h.Dataset, []ExamplePatch{p})
	if err != nil {
		return Example{}, err
	}
	return out[0], nil
}

// UpdateSplits adds examples to a split, or removes them from it.
func (s *Service) UpdateSplits(ctx context.Context, ws, dataset, split string, ids []string, remove bool) ([]string, error) {
	muts := make([]mutation, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		muts = append(muts, mutation{id: id, patch: func(cur Example) (Example, error) {
			md := map[string]any{}
			if len(cur.Metadata) > 0 && string(cur.Metadata) != "null" {
				if err := decodeJSON(cur.Metadata, &md); err != nil {
					return Example{}, err
				}
			}
			var next []any
			has := false
			for _, v := range splitsOf(md) {
				if v == split {
					has = true
					if remove {
						continue
					}
				}
				next = append(next, v)
			}
			if !remove && !has {
				next = append(next, split)
			}
			if next == nil {
				next = []any{}
			}
			md[SplitKey] = next
			cur.Metadata = mustJSON(md)
			return cur, nil
		}})
	}
	if _, err := s.apply(ctx, ws, dataset, muts); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(muts))
	for _, m := range muts {
		out = append(out, m.id)
	}
	return out, nil
}

func splitsOf(md map[string]any) []any {
	switch v := md[SplitKey].(type) {
	case []any:
		out := make([]any, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return []any{v}
	}
	return nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

func checkSize(e Example, i int) error {
	if len(e.Inputs)+len(e.Outputs)+len(e.Metadata) > MaxExampleBytes {
		return &Error{Kind: ErrInvalid, Msg: "example larger than 180 KiB (inputs, outputs and metadata together)", Loc: []any{"body", i}}
	}
	return nil
}

// apply commits mutations as versions: as many as fit one transaction per
// version (one version for any request of up to about 30 examples).
func (s *Service) apply(ctx context.Context, ws, dataset string, muts []mutation) ([]Example, error) {
	if _, _, err := s.getDataset(ctx, ws, dataset); err != nil {
		return nil, err
	}
	// Creates with an id that exists anywhere fail before anything is
	// written (the transaction's condition still guards the race).
	for _, m := range muts {
		if m.create == nil {
			continue
		}
		if _, err := s.st.Get(ctx, headKey(m.id)); err == nil {
			return nil, conflict("Example %s already exists", m.id)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	out := make([]Example, len(muts))
	for start := 0; start < len(muts); {
		n, err := s.applyChunk(ctx, ws, dataset, muts[start:], out[start:])
		if err != nil {
			return nil, err
		}
		start += n
	}
	return out, nil
}

func (s *Service) applyChunk(ctx context.Context, ws, dataset string, muts []mutation, out []Example) (int, error) {
	for range maxRetries {
		d, ver, err := s.getDataset(ctx, ws, dataset)
		if err != nil {
			return 0, err
		}
		seq := d.Seq + 1
		at := s.clock()
		if !at.After(d.VersionAt) {
			at = d.VersionAt.Add(time.Microsecond)
		}
		var ops []store.TxOp
		var headOp []int // op index → mutation index, for head puts
		delta, n, size := int64(0), 0, 0
		for i, m := range muts {
			mops, ex, dl, err := s.opsFor(ctx, ws, d.ID, seq, at, m)
			if err != nil {
				return 0, err
			}
			msize := opsSize(mops)
			if n > 0 && (len(ops)+len(mops)+2 > txBudget || size+msize > txBytes) {
				break
			}
			size += msize
			if m.create != nil {
				headOp = append(headOp, len(ops))
			}
			ops = append(ops, mops...)
			out[i], delta, n = ex, delta+dl, n+1
		}
		d.Seq, d.VersionAt, d.ModifiedAt = seq, at, at
		d.ExampleCount += delta
		ops = append(ops,
			store.TxOp{Kind: store.OpPut, Item: datasetItem(ws, d), Cond: store.HasVersion(ver)},
			store.TxOp{Kind: store.OpPut, Item: store.Item{Key: versionKey(d.ID, at), Data: mustJSON(versionRec{Seq: seq, AsOf: at, Tags: []string{}})}, Cond: store.NotExists()})
		err = s.st.Transact(ctx, ops)
		var tce *store.TxConditionError
		if errors.As(err, &tce) {
			for j, op := range headOp {
				if op == tce.Index {
					return 0, conflict("Example %s already exists", muts[j].id)
				}
			}
			continue // another writer committed a version first
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
	return 0, errors.New("datasets: too much contention on the dataset")
}

// opsFor returns the store operations of one mutation at version seq, the
// example as it results, and the change to the example count.
func (s *Service) opsFor(ctx context.Context, ws, ds string, seq int64, at time.Time, m mutation) ([]store.TxOp, Example, int64, error) {
	if m.create != nil {
		ex := *m.create
		ex.DatasetID, ex.ModifiedAt = ds, at
		if ex.CreatedAt.IsZero() {
			ex.CreatedAt = at
		}
		ex.CreatedAt = ex.CreatedAt.UTC().Truncate(time.Microsecond)
		rev := revision{Example: ex, Seq: seq}
		return []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: headKey(ex.ID), Data: mustJSON(headRec{Workspace: ws, Dataset: ds})}, Cond: store.NotExists()},
			{Kind: store.OpPut, Item: store.Item{Key: revKey(ds, ex.ID, seq), Data: mustJSON(rev)}},
			openPut(rev),
		}, ex, 1, nil
	}
	cur, ok, err := s.revAt(ctx, ds, m.id, math.MaxInt64)
	if err != nil {
		return nil, Example{}, 0, err
	}
	if !ok {
		return nil, Example{}, 0, notFound("Example %s not found in dataset %s", m.id, ds)
	}
	ops := []store.TxOp{{Kind: store.OpDelete, Key: openKey(ds, m.id, cur.Seq)}}
	for _, b := range blocks(cur.Seq, seq) {
		ops = append(ops, store.TxOp{Kind: store.OpPut, Item: store.Item{
			Key:  store.Key{PK: segPK(ds, b.level, b.node), SK: orderSK(cur.Example)},
			Data: mustJSON(blockRec{ID: m.id, Seq: cur.Seq})}})
	}
	if m.del {
		tomb := revision{Example: cur.Example, Seq: seq, Deleted: true}
		tomb.ModifiedAt = at
		ops = append(ops, store.TxOp{Kind: store.OpPut, Item: store.Item{Key: revKey(ds, m.id, seq), Data: mustJSON(tomb)}})
		return ops, cur.Example, -1, nil
	}
	ex, err := m.patch(cur.Example)
	if err != nil {
		return nil, Example{}, 0, err
	}
	ex.ID, ex.DatasetID, ex.CreatedAt, ex.ModifiedAt = cur.ID, ds, cur.CreatedAt, at
	rev := revision{Example: ex, Seq: seq}
	ops = append(ops,
		store.TxOp{Kind: store.OpPut, Item: store.Item{Key: revKey(ds, m.id, seq), Data: mustJSON(rev)}},
		openPut(rev))
	return ops, ex, 0, nil
}

func opsSize(ops []store.TxOp) int {
	n := 0
	for _, op := range ops {
		n += store.Size(op.Item)
	}
	return n
}

func openPut(r revision) store.TxOp {
	return store.TxOp{Kind: store.OpPut, Item: store.Item{Key: openKey(r.DatasetID, r.ID, r.Seq), Data: mustJSON(r),
		Indexes: map[string]store.IndexKey{"gsi1": {PK: orderPK(r.DatasetID), SK: orderSK(r.Example)}}}}
}

// revAt returns the revision of an example valid at version seq: its
// latest revision at or before seq, unless that is a deletion.
func (s *Service) revAt(ctx context.Context, ds, id string, seq int64) (revision, bool, error) {
	pg, err := s.st.Query(ctx, store.Query{PK: revPK(ds),
		SK:   store.SKCond{Op: store.SKBetween, A: id + "#", B: id + "#" + seqHex(seq)},
		Desc: true, Limit: 1})
	if err != nil || len(pg.Items) == 0 {
		return revision{}, false, err
	}
	var r revision
	if err := decodeJSON(pg.Items[0].Data, &r); err != nil {
		return revision{}, false, err
	}
	return r, !r.Deleted, nil
}

func (s *Service) head(ctx context.Context, ws, id string) (headRec, error) {
	it, err := s.st.Get(ctx, headKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return headRec{}, notFound("Example %s not found", id)
	}
	if err != nil {
		return headRec{}, err
	}
	var h headRec
	if err := decodeJSON(it.Data, &h); err != nil {
		return headRec{}, err
	}
	if h.Workspace != ws {
		return headRec{}, notFound("Example %s not found", id)
	}
	return h, nil
}

// ---- reads ----

// ExampleQuery filters GET /examples.
type ExampleQuery struct {
	Dataset  string
	IDs      []string
	AsOf     string
	Splits   []string
	Metadata map[string]any
	Filter   *Filter
	Limit    int
	Offset   int
}

func (q ExampleQuery) match(e Example) bool {
	if len(q.Splits) == 0 && len(q.Metadata) == 0 && q.Filter == nil {
		return true
	}
	md := map[string]any{}
	if len(e.Metadata) > 0 && string(e.Metadata) != "null" {
		_ = decodeJSON(e.Metadata, &md)
	}
	if len(q.Splits) > 0 {
		in := false
		for _, have := range splitsOf(md) {
			for _, want := range q.Splits {
				if have == want {
					in = true
				}
			}
		}
		if !in {
			return false
		}
	}
	if !containsAll(md, q.Metadata) {
		return false
	}
	if q.Filter == nil {
		return true
	}
	return q.Filter.Match(exampleDoc(e, md))
}

func exampleDoc(e Example, md map[string]any) map[string]any {
	doc := map[string]any{
		"id": e.ID, "dataset_id": e.DatasetID, "metadata": md,
		"created_at": e.CreatedAt.Format(time.RFC3339Nano), "modified_at": e.ModifiedAt.Format(time.RFC3339Nano),
	}
	if e.SourceRunID != nil {
		doc["source_run_id"] = *e.SourceRunID
	}
	for k, raw := range map[string]json.RawMessage{"inputs": e.Inputs, "outputs": e.Outputs} {
		var v any
		if len(raw) > 0 && decodeJSON(raw, &v) == nil && v != nil {
			doc[k] = v
		}
	}
	return doc
}

// ListExamples returns the examples of a dataset (or the given ones) at a
// version, oldest first (created_at, then id).
func (s *Service) ListExamples(ctx context.Context, ws string, q ExampleQuery) ([]Example, error) {
	if len(q.IDs) > 0 {
		return s.examplesByID(ctx, ws, q)
	}
	d, _, err := s.getDataset(ctx, ws, q.Dataset)
	if err != nil {
		return nil, err
	}
	seq, err := s.resolve(ctx, d, q.AsOf)
	if err != nil {
		return nil, err
	}
	if seq == d.Seq {
		return s.latest(ctx, d.ID, q)
	}
	all, err := s.readVersion(ctx, d, seq)
	if err != nil {
		return nil, err
	}
	var hits []Example
	for _, e := range all {
		if q.match(e) {
			hits = append(hits, e)
		}
	}
	return page(hits, q.Offset, q.Limit), nil
}

// latest walks the open revisions in order: it reads the page it returns
// (plus the examples the filters skip).
func (s *Service) latest(ctx context.Context, ds string, q ExampleQuery) ([]Example, error) {
	out := []Example{}
	skipped := 0
	query := store.Query{Index: "gsi1", PK: orderPK(ds)}
	for {
		pg, err := s.st.Query(ctx, query)
		if err != nil {
			return nil, err
		}
		for _, it := range pg.Items {
			var r revision
			if err := decodeJSON(it.Data, &r); err != nil {
				return nil, err
			}
			if !q.match(r.Example) {
				continue
			}
			if skipped < q.Offset {
				skipped++
				continue
			}
			out = append(out, r.Example)
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

// readVersion returns every example of the dataset at version seq: the
// open revisions that started at or before seq, and the closed revisions
// of the one block per level that contains seq. Every item read is
// returned; closed revisions cost one more read for their payload.
func (s *Service) readVersion(ctx context.Context, d datasetRec, seq int64) ([]Example, error) {
	if seq <= 0 {
		return []Example{}, nil
	}
	out := []Example{}
	err := s.each(ctx, store.Query{PK: openPK(d.ID), SK: store.SKCond{Op: store.SKLess, A: seqHex(seq + 1)}}, func(it store.Item) error {
		var r revision
		if err := decodeJSON(it.Data, &r); err != nil {
			return err
		}
		out = append(out, r.Example)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for l := 0; l <= bits.Len64(uint64(d.Seq)); l++ {
		err := s.each(ctx, store.Query{PK: segPK(d.ID, l, seq>>l)}, func(it store.Item) error {
			var b blockRec
			if err := decodeJSON(it.Data, &b); err != nil {
				return err
			}
			rit, err := s.st.Get(ctx, revKey(d.ID, b.ID, b.Seq))
			if err != nil {
				return err
			}
			var r revision
			if err := decodeJSON(rit.Data, &r); err != nil {
				return err
			}
			out = append(out, r.Example)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (s *Service) each(ctx context.Context, q store.Query, fn func(store.Item) error) error {
	for {
		pg, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range pg.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if pg.Next == "" {
			return nil
		}
		q.Cursor = pg.Next
	}
}

func (s *Service) examplesByID(ctx context.Context, ws string, q ExampleQuery) ([]Example, error) {
	type dsv struct {
		d   datasetRec
		seq int64
		ok  bool
	}
	cache := map[string]dsv{}
	var hits []Example
	seen := map[string]bool{}
	for _, id := range q.IDs {
		if seen[id] {
			continue
		}
		seen[id] = true
		h, err := s.head(ctx, ws, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if q.Dataset != "" && h.Dataset != q.Dataset {
			continue
		}
		v, cached := cache[h.Dataset]
		if !cached {
			d, _, err := s.getDataset(ctx, ws, h.Dataset)
			if err == nil {
				v = dsv{d: d, ok: true}
				if v.seq, err = s.resolve(ctx, d, q.AsOf); err != nil {
					return nil, err
				}
			} else if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			cache[h.Dataset] = v
		}
		if !v.ok {
			continue
		}
		r, ok, err := s.revAt(ctx, h.Dataset, id, v.seq)
		if err != nil {
			return nil, err
		}
		if ok && q.match(r.Example) {
			hits = append(hits, r.Example)
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].CreatedAt.Equal(hits[j].CreatedAt) {
			return hits[i].CreatedAt.Before(hits[j].CreatedAt)
		}
		return hits[i].ID < hits[j].ID
	})
	return page(hits, q.Offset, q.Limit), nil
}

// GetExample returns an example as of a version ("" for the latest).
func (s *Service) GetExample(ctx context.Context, ws, id, asOf string) (Example, error) {
	h, err := s.head(ctx, ws, id)
	if err != nil {
		return Example{}, err
	}
	d, _, err := s.getDataset(ctx, ws, h.Dataset)
	if errors.Is(err, ErrNotFound) {
		return Example{}, notFound("Example %s not found", id)
	}
	if err != nil {
		return Example{}, err
	}
	seq, err := s.resolve(ctx, d, asOf)
	if err != nil {
		return Example{}, err
	}
	r, ok, err := s.revAt(ctx, d.ID, id, seq)
	if err != nil {
		return Example{}, err
	}
	if !ok {
		return Example{}, notFound("Example %s not found", id)
	}
	return r.Example, nil
}

// ListSplits returns the split names used at a version, sorted.
func (s *Service) ListSplits(ctx context.Context, ws, dataset, asOf string) ([]string, error) {
	d, _, err := s.getDataset(ctx, ws, dataset)
	if err != nil {
		return nil, err
	}
	seq, err := s.resolve(ctx, d, asOf)
	if err != nil {
		return nil, err
	}
	all, err := s.readVersion(ctx, d, seq)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, e := range all {
		md := map[string]any{}
		if len(e.Metadata) > 0 && string(e.Metadata) != "null" {
			_ = decodeJSON(e.Metadata, &md)
		}
		for _, v := range splitsOf(md) {
			set[v.(string)] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
