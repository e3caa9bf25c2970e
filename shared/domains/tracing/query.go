package tracing

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing/fql"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// RunQuery selects runs (POST /runs/query).
type RunQuery struct {
	IDs               []string
	Sessions          []string
	Trace             string
	ParentRun         string
	RunType           string
	Error             *bool
	IsRoot            *bool
	StartTime         *time.Time
	EndTime           *time.Time
	ReferenceExamples []string
	Filter            fql.Expr
	TraceFilter       fql.Expr
	TreeFilter        fql.Expr
	Limit             int
	Asc               bool
	Cursor            string
}

// ErrNoScope: a query must name where to look.
var ErrNoScope = errors.New("tracing: a run query needs session, trace, parent_run, reference_example or id")

// ErrBadCursor: the cursor was not made by this API.
var ErrBadCursor = errors.New("tracing: invalid cursor")

// source is one index partition a plan reads, in sort-key (start time)
// order. entries partitions hold pointers (the run id ends the sort key);
// the others are indexes of the run items themselves.
type source struct {
	index   string
	pk      string
	entries bool
}

// plan is how a query is served: the union of some partitions (or direct
// reads by id), bounded by a start-time range, and the whole query
// re-checked on every candidate.
type plan struct {
	sources []source
	direct  []string
	lo, hi  string // inclusive sort-key bounds ("" for none)
	// describe is a short account of the choice, for tests and logs.
	describe string
}

// option is one way to read a conjunct of the query; the lowest rank wins
// (the most selective kind of index).
type option struct {
	rank    int
	sources []source
	direct  []string
	what    string
}

const (
	rankID = iota
	rankTrace
	rankParent
	rankExample
	rankThread
	rankMetadata
	rankFeedback
	rankName
	rankTag
	rankError
	rankRunType
	rankRoot
	rankProject
	rankNone
)

// maxUnion bounds the partitions one plan merges.
const maxUnion = 64

// planQuery picks the index for the most selective part of q.
func planQuery(ws string, q *RunQuery) (*plan, error) {
	var opts []option
	add := func(o *option) {
		if o != nil && (len(o.sources) > 0 || o.direct != nil) && len(o.sources) <= maxUnion {
			opts = append(opts, *o)
		}
	}
	if len(q.IDs) > 0 {
		add(&option{rank: rankID, direct: q.IDs, what: "id"})
	}
	if q.Trace != "" {
		add(&option{rank: rankTrace, sources: []source{{"gsi2", traceRunsPK(ws, q.Trace), false}}, what: "trace"})
	}
	if q.ParentRun != "" {
		add(&option{rank: rankParent, sources: []source{{"gsi3", childRunsPK(ws, q.ParentRun), false}}, what: "parent"})
	}
	if len(q.ReferenceExamples) > 0 {
		o := &option{rank: rankExample, what: "reference_example"}
		for _, e := range q.ReferenceExamples {
			o.sources = append(o.sources, source{"", examplePK(ws, e), true})
		}
		add(o)
	}
	perSession := func(rank int, what string, facets []string) *option {
		if len(q.Sessions) == 0 || len(facets) == 0 {
			return nil
		}
		o := &option{rank: rank, what: what}
		for _, s := range q.Sessions {
			for _, f := range facets {
				o.sources = append(o.sources, source{"", facetPK(ws, s, f), true})
			}
		}
		return o
	}
	if q.RunType != "" {
		add(perSession(rankRunType, "run_type", []string{facetRunType(q.RunType)}))
	}
	if q.Error != nil && *q.Error {
		add(perSession(rankError, "error", []string{facetError}))
	}
	if q.IsRoot != nil && *q.IsRoot && len(q.Sessions) > 0 {
		o := &option{rank: rankRoot, what: "root"}
		for _, s := range q.Sessions {
			o.sources = append(o.sources, source{"gsi5", rootRunsPK(ws, s), false})
		}
		add(o)
	}
	for _, o := range filterOptions(ws, q.Sessions, fql.Conjuncts(q.Filter)) {
		add(&o)
	}
	if len(q.Sessions) > 0 {
		o := &option{rank: rankProject, what: "project"}
		for _, s := range q.Sessions {
			o.sources = append(o.sources, source{"gsi1", projectRunsPK(ws, s), false})
		}
		add(o)
	}
	if len(opts) == 0 {
		return nil, ErrNoScope
	}
	best := opts[0]
	for _, o := range opts[1:] {
		if o.rank < best.rank {
			best = o
		}
	}
	p := &plan{sources: best.sources, direct: best.direct, describe: best.what}
	p.lo, p.hi = timeBounds(q)
	return p, nil
}

// filterOptions lists the indexable conjuncts of a filter.
func filterOptions(ws string, sessions []string, conj []fql.Expr) []option {
	var out []option
	var meta, fb []*fql.Cond
	for _, e := range conj {
		switch n := e.(type) {
		case *fql.Cond:
			switch fql.Fields[n.Field] {
			case fql.KindMetaKey, fql.KindMetaValue:
				meta = append(meta, n)
				continue
			case fql.KindFeedbackKey, fql.KindFeedbackScore:
				fb = append(fb, n)
				continue
			}
			if o := condOption(ws, sessions, n); o != nil {
				out = append(out, *o)
			}
		case *fql.Logical:
			if o := orOption(ws, sessions, n); o != nil {
				out = append(out, *o)
			}
		}
	}
	if o := metaOption(ws, sessions, meta); o != nil {
		out = append(out, *o)
	}
	if o := feedbackOption(ws, sessions, fb); o != nil {
		out = append(out, *o)
	}
	return out
}

// literals returns the non-null text values an eq or in condition accepts.
func literals(c *fql.Cond) []string {
	var vs []fql.Value
	switch c.Op {
	case fql.Eq, fql.Has:
		vs = []fql.Value{c.Value}
	case fql.In:
		vs = c.Value.List
	default:
		return nil
	}
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if v.Kind != fql.VString {
			return nil
		}
		out = append(out, v.Str)
	}
	return out
}

func condOption(ws string, sessions []string, c *fql.Cond) *option {
	facets := func(rank int, what string, mk func(string) string) *option {
		vals := literals(c)
		if len(vals) == 0 || len(sessions) == 0 {
			return nil
		}
		o := &option{rank: rank, what: what}
		for _, s := range sessions {
			for _, v := range vals {
				o.sources = append(o.sources, source{"", facetPK(ws, s, mk(v)), true})
			}
		}
		return o
	}
	switch c.Field {
	case "id":
		if vals := literals(c); len(vals) > 0 {
			return &option{rank: rankID, direct: vals, what: "id"}
		}
	case "trace_id", "parent_run_id", "reference_example_id":
		vals := literals(c)
		if len(vals) == 0 {
			return nil
		}
		o := &option{what: c.Field}
		for _, v := range vals {
			switch c.Field {
			case "trace_id":
				o.rank = rankTrace
				o.sources = append(o.sources, source{"gsi2", traceRunsPK(ws, v), false})
			case "parent_run_id":
				o.rank = rankParent
				o.sources = append(o.sources, source{"gsi3", childRunsPK(ws, v), false})
			default:
				o.rank = rankExample
				o.sources = append(o.sources, source{"", examplePK(ws, v), true})
			}
		}
		return o
	case "thread_id":
		vals := literals(c)
		if len(vals) == 0 || len(sessions) == 0 {
			return nil
		}
		o := &option{rank: rankThread, what: "thread"}
		for _, s := range sessions {
			for _, v := range vals {
				o.sources = append(o.sources, source{"gsi4", threadRunsPK(ws, s, v), false})
			}
		}
		return o
	case "name":
		return facets(rankName, "name", facetName)
	case "run_type":
		return facets(rankRunType, "run_type", facetRunType)
	case "tags":
		if c.Op == fql.Neq {
			return nil
		}
		return facets(rankTag, "tag", facetTag)
	case "error":
		hasError := c.Op == fql.Exists ||
			c.Op == fql.Neq && c.Value.Kind == fql.VNull ||
			c.Op == fql.Eq && (c.Value.Kind == fql.VBool && c.Value.Bool || c.Value.Kind == fql.VString)
		if hasError && len(sessions) > 0 {
			o := &option{rank: rankError, what: "error"}
			for _, s := range sessions {
				o.sources = append(o.sources, source{"", facetPK(ws, s, facetError), true})
			}
			return o
		}
	case "is_root":
		if c.Op == fql.Eq && c.Value.Bool && len(sessions) > 0 {
			o := &option{rank: rankRoot, what: "root"}
			for _, s := range sessions {
				o.sources = append(o.sources, source{"gsi5", rootRunsPK(ws, s), false})
			}
			return o
		}
	}
	return nil
}

// metaOption serves a metadata pair group, and(eq|in(metadata_key, ...),
// eq|in(metadata_value, ...)), from the pair entries.
func metaOption(ws string, sessions []string, cs []*fql.Cond) *option {
	var keys, values []string
	for _, c := range cs {
		switch {
		case c.Field == "metadata_key" && (c.Op == fql.Eq || c.Op == fql.In || c.Op == fql.Has) && keys == nil:
			keys = literals(c)
		case c.Field == "metadata_value" && (c.Op == fql.Eq || c.Op == fql.In) && values == nil:
			vs := []fql.Value{c.Value}
			if c.Op == fql.In {
				vs = c.Value.List
			}
			for _, v := range vs {
				t, ok := fql.CanonicalLiteral(v)
				if !ok {
					values = nil
					break
				}
				values = append(values, t)
			}
		}
	}
	if len(keys) == 0 || len(values) == 0 || len(sessions) == 0 {
		return nil
	}
	o := &option{rank: rankMetadata, what: "metadata"}
	for _, s := range sessions {
		for _, k := range keys {
			for _, v := range values {
				o.sources = append(o.sources, source{"", facetPK(ws, s, facetMeta(k, v)), true})
			}
		}
	}
	return o
}

func feedbackOption(ws string, sessions []string, cs []*fql.Cond) *option {
	for _, c := range cs {
		if c.Field != "feedback_key" {
			continue
		}
		vals := literals(c)
		if len(vals) == 0 || len(sessions) == 0 {
			continue
		}
		o := &option{rank: rankFeedback, what: "feedback"}
		for _, s := range sessions {
			for _, v := range vals {
				o.sources = append(o.sources, source{"", facetPK(ws, s, facetFeedback(v)), true})
			}
		}
		return o
	}
	return nil
}

// orOption serves or(a, b, ...) as the union of an index for each branch,
// when every branch has one.
func orOption(ws string, sessions []string, l *fql.Logical) *option {
	if l.Op != fql.Or {
		return nil
	}
	o := &option{what: "or"}
	for _, a := range l.Args {
		opts := filterOptions(ws, sessions, fql.Conjuncts(a))
		if len(opts) == 0 {
			return nil
		}
		best := opts[0]
		for _, x := range opts[1:] {
			if x.rank < best.rank {
				best = x
			}
		}
		if best.direct != nil {
			return nil
		}
		o.sources = append(o.sources, best.sources...)
		o.rank = max(o.rank, best.rank)
	}
	return o
}

// timeBounds turns start-time conditions into sort-key bounds (a superset:
// the conditions are re-checked on each run).
func timeBounds(q *RunQuery) (lo, hi string) {
	raise := func(t time.Time) {
		if s := sortTime(t); s > lo {
			lo = s
		}
	}
	lower := func(s string) {
		if hi == "" || s < hi {
			hi = s
		}
	}
	if q.StartTime != nil {
		raise(*q.StartTime)
	}
	for _, e := range fql.Conjuncts(q.Filter) {
		c, ok := e.(*fql.Cond)
		if !ok || c.Field != "start_time" || c.Value.Kind == fql.VNull || c.Value.Kind == fql.VList {
			continue
		}
		switch c.Op {
		case fql.Gt, fql.Gte:
			raise(c.Value.Time)
		case fql.Lt:
			lower(sortTime(c.Value.Time))
		case fql.Lte:
			lower(sortTime(c.Value.Time) + "#~")
		case fql.Eq:
			raise(c.Value.Time)
			lower(sortTime(c.Value.Time) + "#~")
		}
	}
	return lo, hi
}

// cursorState is what an opaque cursor holds: where the last page ended.
type cursorState struct {
	SK  string `json:"k"`
	Asc bool   `json:"a,omitempty"`
}

func encodeCursor(c cursorState) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursorState, error) {
	var c cursorState
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.SK == "" || len(c.SK) > 200 {
		return c, ErrBadCursor
	}
	return c, nil
}

// stream reads one partition in order, a page at a time.
type stream struct {
	st    store.Store
	q     store.Query
	buf   []store.Item
	done  bool
	skip  string // a sort key not to return (the cursor's)
	size  int
	reads *int
	// entries: the partition holds pointer entries, not run items.
	entries bool
}

func (s *stream) skOf(it store.Item) string {
	if s.q.Index == "" {
		return it.SK
	}
	return it.Indexes[s.q.Index].SK
}

// peek returns the next item without consuming it.
func (s *stream) peek(ctx context.Context) (*store.Item, error) {
	for len(s.buf) == 0 && !s.done {
		s.q.Limit = s.size
		page, err := s.st.Query(ctx, s.q)
		if err != nil {
			return nil, err
		}
		*s.reads += len(page.Items)
		for _, it := range page.Items {
			if s.skOf(it) != s.skip {
				s.buf = append(s.buf, it)
			}
		}
		if page.Next == "" {
			s.done = true
		}
		s.q.Cursor = page.Next
		// Later pages are larger: a filter that rejects many candidates
		// should not cost one round trip per few items.
		s.size = min(s.size*2, 1000)
	}
	if len(s.buf) == 0 {
		return nil, nil
	}
	return &s.buf[0], nil
}

func (s *stream) pop() { s.buf = s.buf[1:] }

// more reports whether the stream may hold more items.
func (s *stream) more() bool { return len(s.buf) > 0 || !s.done }

// candidate is a run a plan produced: its sort key, and its item when the
// index held it (entries hold only the id).
type candidate struct {
	sk   string
	id   string
	item *store.Item
}

// merger merges streams in sort-key order, dropping duplicates.
type merger struct {
	streams []*stream
	asc     bool
	last    string
}

func (m *merger) next(ctx context.Context) (*candidate, error) {
	for {
		var best *stream
		var bestSK string
		var bestItem *store.Item
		for _, s := range m.streams {
			it, err := s.peek(ctx)
			if err != nil {
				return nil, err
			}
			if it == nil {
				continue
			}
			sk := s.skOf(*it)
			if best == nil || (m.asc && sk < bestSK) || (!m.asc && sk > bestSK) {
				best, bestSK, bestItem = s, sk, it
			}
		}
		if best == nil {
			return nil, nil
		}
		item := *bestItem
		best.pop()
		if bestSK == m.last {
			continue
		}
		m.last = bestSK
		c := &candidate{sk: bestSK, id: runIDOfSortKey(bestSK)}
		if !best.entries {
			c.item = &item
		}
		return c, nil
	}
}

func (m *merger) more() bool {
	for _, s := range m.streams {
		if s.more() {
			return true
		}
	}
	return false
}

// QueryStats reports what a query cost.
type QueryStats struct {
	// ItemsRead counts store items read: index items, entries and runs.
	ItemsRead int
	Plan      string
}

// matcher evaluates the whole query on a run.
type matcher struct {
	s        *Service
	ws       string
	q        *RunQuery
	sessions map[string]bool
	filter   fql.Predicate
	// needMeta: some filter reads metadata (decoded only then).
	needMeta bool
	trace    fql.Predicate
	tree     fql.Predicate
	roots    map[string]*runRecord
	trees    map[string][]*runRecord
	reads    *int
	br       blobReader
}

func (s *Service) newMatcher(ws string, q *RunQuery, reads *int) *matcher {
	m := &matcher{s: s, ws: ws, q: q, filter: fql.Compile(q.Filter), reads: reads, br: blobReader{s.blobs},
		roots: map[string]*runRecord{}, trees: map[string][]*runRecord{},
		needMeta: fql.NeedsMetadata(q.Filter) || fql.NeedsMetadata(q.TraceFilter) || fql.NeedsMetadata(q.TreeFilter)}
	if len(q.Sessions) > 0 {
		m.sessions = map[string]bool{}
		for _, s := range q.Sessions {
			m.sessions[s] = true
		}
	}
	if q.TraceFilter != nil {
		m.trace = fql.Compile(q.TraceFilter)
	}
	if q.TreeFilter != nil {
		m.tree = fql.Compile(q.TreeFilter)
	}
	return m
}

// row is what a filter reads of a run; inputs and outputs are read from
// blob storage only when a search asks for them.
func (m *matcher) row(ctx context.Context, r *runRecord) *fql.Row {
	row := &fql.Row{ID: r.ID, Name: r.Name, RunType: r.RunType, Status: r.Status, TraceID: r.TraceID, ThreadID: r.ThreadID,
		ParentRunID: r.ParentRunID, ReferenceExampleID: r.ReferenceExampleID, SessionID: r.SessionID,
		Error: r.Error, HasError: r.HasError, StartTime: r.StartTime, EndTime: r.EndTime,
		TotalTokens: float64(r.TotalTokens), PromptTokens: float64(r.PromptTokens), CompletionTokens: float64(r.CompletionTokens),
		TotalCost: float64(r.TotalCost) / costScale, PromptCost: float64(r.PromptCost) / costScale, CompletionCost: float64(r.CompletionCost) / costScale,
		IsRoot: r.isRoot(), Tags: r.Tags}
	row.ExecutionOrder = float64(strings.Count(r.DottedOrder, ".") + 1)
	if m.needMeta && len(r.Metadata) > 0 {
		row.Metadata = make(map[string]any, len(r.Metadata))
		for k, raw := range r.Metadata {
			var v any
			if json.Unmarshal(raw, &v) == nil {
				row.Metadata[k] = v
			}
		}
	}
	for _, f := range r.Feedback {
		fb := fql.Feedback{Key: f.Key}
		if f.Score != nil {
			fb.Score, fb.HasScore = *f.Score, true
		}
		row.Feedback = append(row.Feedback, fb)
	}
	lazy := func(ref *blobRef) func() string {
		return func() string {
			b, err := m.br.read(ctx, ref)
			if err != nil {
				return ""
			}
			return string(b)
		}
	}
	if r.Inputs != nil {
		row.Inputs = lazy(r.Inputs)
	}
	if r.Outputs != nil {
		row.Outputs = lazy(r.Outputs)
	}
	return row
}

func (m *matcher) match(ctx context.Context, r *runRecord) (bool, error) {
	q := m.q
	switch {
	case !r.complete():
		return false, nil
	case m.sessions != nil && !m.sessions[r.SessionID]:
		return false, nil
	case q.Trace != "" && r.TraceID != q.Trace:
		return false, nil
	case q.ParentRun != "" && r.ParentRunID != q.ParentRun:
		return false, nil
	case q.RunType != "" && r.RunType != q.RunType:
		return false, nil
	case q.Error != nil && r.HasError != *q.Error:
		return false, nil
	case q.IsRoot != nil && r.isRoot() != *q.IsRoot:
		return false, nil
	case q.StartTime != nil && r.StartTime.Before(*q.StartTime):
		return false, nil
	case q.EndTime != nil && (r.EndTime.IsZero() || r.EndTime.After(*q.EndTime)):
		return false, nil
	case len(q.IDs) > 0 && !contains(q.IDs, r.ID):
		return false, nil
	case len(q.ReferenceExamples) > 0 && !contains(q.ReferenceExamples, r.ReferenceExampleID):
		return false, nil
	}
	if !m.filter(m.row(ctx, r)) {
		return false, nil
	}
	if m.trace != nil {
		root, err := m.root(ctx, r.TraceID)
		if err != nil {
			return false, err
		}
		if root == nil || !m.trace(m.row(ctx, root)) {
			return false, nil
		}
	}
	if m.tree != nil {
		runs, err := m.treeOf(ctx, r.TraceID)
		if err != nil {
			return false, err
		}
		ok := false
		for _, x := range runs {
			if m.tree(m.row(ctx, x)) {
				ok = true
				break
			}
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// root returns the root run of a trace (cached per query): the run whose
// id is the trace id (the SDKs' convention), else the trace's run without
// a parent (OTLP traces, whose root has an id of its own).
func (m *matcher) root(ctx context.Context, trace string) (*runRecord, error) {
	if r, ok := m.roots[trace]; ok {
		return r, nil
	}
	lr, err := m.s.loadRun(ctx, m.ws, trace)
	if err != nil {
		return nil, err
	}
	*m.reads++
	r := lr.rec
	if r == nil || !r.complete() || !r.isRoot() || r.TraceID != trace {
		r = nil
		runs, err := m.treeOf(ctx, trace)
		if err != nil {
			return nil, err
		}
		for _, x := range runs {
			if x.isRoot() {
				r = x
				break
			}
		}
	}
	m.roots[trace] = r
	return r, nil
}

// treeOf returns every run of a trace (cached per query).
func (m *matcher) treeOf(ctx context.Context, trace string) ([]*runRecord, error) {
	if rs, ok := m.trees[trace]; ok {
		return rs, nil
	}
	var out []*runRecord
	q := store.Query{Index: "gsi2", PK: traceRunsPK(m.ws, trace), Limit: 1000}
	for {
		page, err := m.s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		*m.reads += len(page.Items)
		for _, it := range page.Items {
			var r runRecord
			if json.Unmarshal(it.Data, &r) == nil {
				out = append(out, &r)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	m.trees[trace] = out
	return out, nil
}

// queryRuns runs a query and returns up to q.Limit runs and the cursor of
// the next page ("" at the end).
func (s *Service) queryRuns(ctx context.Context, ws string, q *RunQuery) ([]*runRecord, string, QueryStats, error) {
	var st QueryStats
	p, err := planQuery(ws, q)
	if err != nil {
		return nil, "", st, err
	}
	st.Plan = p.describe
	var cur cursorState
	if q.Cursor != "" {
		if cur, err = decodeCursor(q.Cursor); err != nil {
			return nil, "", st, err
		}
		q.Asc = cur.Asc
	}
	m := s.newMatcher(ws, q, &st.ItemsRead)
	if p.direct != nil {
		runs, more, err := s.directRuns(ctx, ws, p.direct, m, q, cur, &st)
		next := ""
		if more && len(runs) > 0 {
			next = encodeCursor(cursorState{SK: runs[len(runs)-1].sortKey(), Asc: q.Asc})
		}
		return runs, next, st, err
	}
	lo, hi := p.lo, p.hi
	if cur.SK != "" {
		if q.Asc && cur.SK > lo {
			lo = cur.SK
		}
		if !q.Asc && (hi == "" || cur.SK < hi) {
			hi = cur.SK
		}
	}
	if lo != "" && hi != "" && lo > hi {
		return nil, "", st, nil
	}
	var skc store.SKCond
	switch {
	case lo != "" && hi != "":
		skc = store.SKCond{Op: store.SKBetween, A: lo, B: hi}
	case lo != "":
		skc = store.SKCond{Op: store.SKGreaterEq, A: lo}
	case hi != "":
		skc = store.SKCond{Op: store.SKLessEq, A: hi}
	}
	mg := &merger{asc: q.Asc}
	for _, src := range p.sources {
		mg.streams = append(mg.streams, &stream{st: s.st, q: store.Query{Index: src.index, PK: src.pk, SK: skc, Desc: !q.Asc},
			skip: cur.SK, size: max(q.Limit, 1), reads: &st.ItemsRead, entries: src.entries})
	}
	var out []*runRecord
	var lastSK string
	for len(out) < q.Limit {
		// Take as many candidates as results are still wanted, then read
		// the runs behind pointer entries together.
		need := q.Limit - len(out)
		var batch []*candidate
		for len(batch) < need {
			c, err := mg.next(ctx)
			if err != nil {
				return nil, "", st, err
			}
			if c == nil {
				break
			}
			batch = append(batch, c)
		}
		if len(batch) == 0 {
			break
		}
		runs, err := s.resolveCandidates(ctx, ws, batch, &st)
		if err != nil {
			return nil, "", st, err
		}
		for i, r := range runs {
			lastSK = batch[i].sk
			if r == nil || r.sortKey() != batch[i].sk {
				continue // a stale entry: the run moved or is gone
			}
			ok, err := m.match(ctx, r)
			if err != nil {
				return nil, "", st, err
			}
			if ok {
				out = append(out, r)
			}
		}
	}
	next := ""
	if len(out) == q.Limit && mg.more() {
		next = encodeCursor(cursorState{SK: lastSK, Asc: q.Asc})
	}
	return out, next, st, nil
}

// resolveCandidates returns each candidate's run: the index item itself,
// or (for an entry) the run item, read in parallel.
func (s *Service) resolveCandidates(ctx context.Context, ws string, cs []*candidate, st *QueryStats) ([]*runRecord, error) {
	out := make([]*runRecord, len(cs))
	var fetch []int
	for i, c := range cs {
		if c.item == nil {
			fetch = append(fetch, i)
			continue
		}
		var r runRecord
		if err := json.Unmarshal(c.item.Data, &r); err == nil {
			out[i] = &r
		}
	}
	st.ItemsRead += len(fetch)
	err := parallel(ctx, len(fetch), func(j int) error {
		i := fetch[j]
		lr, err := s.loadRun(ctx, ws, cs[i].id)
		if err != nil {
			return err
		}
		out[i] = lr.rec
		return nil
	})
	return out, err
}

// directRuns serves a query by run ids.
func (s *Service) directRuns(ctx context.Context, ws string, ids []string, m *matcher, q *RunQuery, cur cursorState, st *QueryStats) ([]*runRecord, bool, error) {
	ids = dedupe(ids)
	if len(ids) > 1000 {
		return nil, false, fmt.Errorf("%w: at most 1000 ids", ErrTooMany)
	}
	loaded, err := s.loadRuns(ctx, ws, ids)
	if err != nil {
		return nil, false, err
	}
	st.ItemsRead += len(ids)
	var out []*runRecord
	for _, id := range ids {
		r := loaded[id].rec
		if r == nil {
			continue
		}
		ok, err := m.match(ctx, r)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if q.Asc {
			return out[i].sortKey() < out[j].sortKey()
		}
		return out[i].sortKey() > out[j].sortKey()
	})
	if cur.SK != "" {
		i := sort.Search(len(out), func(i int) bool {
			if q.Asc {
				return out[i].sortKey() > cur.SK
			}
			return out[i].sortKey() < cur.SK
		})
		out = out[i:]
	}
	if len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}

// ErrTooMany: a list parameter is too long.
var ErrTooMany = errors.New("tracing: too many values")

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
