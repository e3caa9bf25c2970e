package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// loadedRun is a run as read from the store.
type loadedRun struct {
	// rec is nil when the run is absent, or only a stub (an item holding
	// counters for a run not received yet).
	rec     *runRecord
	exists  bool
	version int64
	nums    map[string]int64
}

func (s *Service) loadRun(ctx context.Context, ws, id string) (loadedRun, error) {
	it, err := s.st.Get(ctx, runKey(ws, id))
	if errors.Is(err, store.ErrNotFound) {
		return loadedRun{}, nil
	}
	if err != nil {
		return loadedRun{}, err
	}
	lr := loadedRun{exists: true, version: it.Version, nums: it.Nums}
	if len(it.Data) == 0 {
		return lr, nil
	}
	var r runRecord
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return loadedRun{}, err
	}
	lr.rec = &r
	return lr, nil
}

// runIndexes are a run item's index keys: every index is set (to an
// empty key when the run is not in it), so an update also removes stale
// entries.
func runIndexes(ws string, r *runRecord) map[string]store.IndexKey {
	idx := map[string]store.IndexKey{"gsi1": {}, "gsi2": {}, "gsi3": {}, "gsi4": {}, "gsi5": {}}
	if !r.complete() {
		return idx
	}
	sk := r.sortKey()
	idx["gsi1"] = store.IndexKey{PK: projectRunsPK(ws, r.SessionID), SK: sk}
	idx["gsi2"] = store.IndexKey{PK: traceRunsPK(ws, r.TraceID), SK: sk}
	if r.ParentRunID != "" {
		idx["gsi3"] = store.IndexKey{PK: childRunsPK(ws, r.ParentRunID), SK: sk}
	} else {
		idx["gsi5"] = store.IndexKey{PK: rootRunsPK(ws, r.SessionID), SK: sk}
	}
	if r.ThreadID != "" {
		idx["gsi4"] = store.IndexKey{PK: threadRunsPK(ws, r.SessionID, r.ThreadID), SK: sk}
	}
	return idx
}

// entryKeys are the facet and example entries of a run, and the entry
// that files it under the run its dotted order waits for.
func entryKeys(ws string, r *runRecord) []store.Key {
	var keys []store.Key
	if r.DottedParent != "" {
		keys = append(keys, danglingKey(ws, r.DottedParent, r.ID))
	}
	if !r.complete() {
		return keys
	}
	sk := r.sortKey()
	for _, f := range r.Facets {
		keys = append(keys, store.Key{PK: facetPK(ws, r.SessionID, f), SK: sk})
	}
	if r.ReferenceExampleID != "" {
		keys = append(keys, store.Key{PK: examplePK(ws, r.ReferenceExampleID), SK: sk})
	}
	return keys
}

// threadChange accumulates what a transaction does to one thread summary.
type threadChange struct {
	ws, project, thread string
	runs, roots, tokens int64
	// latest and earliest start among the runs added, and the latest's id.
	latest, earliest time.Time
	latestRun        string
	// expires is the latest expiry of the runs added: the summary lives as
	// long as its last run.
	expires time.Time
}

// txPlan collects the operations of one transaction: run writes, plus one
// statistics update per project and one summary update per thread.
type txPlan struct {
	ws string
	// org is the workspace's organization, for usage events.
	org string
	// usage are the usage events of traces this plan completes; each is
	// also written to an outbox item in the transaction (see reportUsage).
	usage   []UsageEvent
	ops     []store.TxOp
	stats   map[string]map[string]int64
	threads map[string]*threadChange
	// pre are entry writes that did not fit (idempotent, written first).
	pre []store.Item
	// written are the runs this plan writes, for what follows a commit,
	// and deps the dependents counter each had when read.
	written []*runRecord
	deps    map[string]int64
}

func newTxPlan(ws, org string) *txPlan {
	return &txPlan{ws: ws, org: org, stats: map[string]map[string]int64{}, threads: map[string]*threadChange{}, deps: map[string]int64{}}
}

// size is the number of operations the plan will commit.
func (p *txPlan) size() int { return len(p.ops) + len(p.stats) + len(p.threads) }

// txBudget leaves room under store.MaxTxOps.
const txBudget = store.MaxTxOps

// finish prepares a run's new state for writing: its facets and its
// statistics and thread shares.
func finish(r *runRecord) {
	r.Facets = facetsOf(r)
	r.Counted = contribOf(r)
	r.ThreadCounted = threadContribOf(r)
}

// addRun adds the operations writing r (over the stored lr) to the plan,
// with its statistics and thread changes. It reports false, leaving the
// plan unchanged, when they do not fit in the plan's transaction; force
// fits them anyway (entry writes that overflow go before the transaction).
func (p *txPlan) addRun(lr loadedRun, r *runRecord, force bool) bool {
	ws := p.ws
	var old runRecord
	if lr.rec != nil {
		old = *lr.rec
	}
	data, err := json.Marshal(r)
	if err != nil {
		return false
	}
	if lr.rec != nil {
		// A replayed operation changes nothing: write nothing.
		if before, err := json.Marshal(lr.rec); err == nil && bytes.Equal(before, data) {
			p.written = append(p.written, r)
			p.deps[r.ID] = lr.nums["deps"]
			return true
		}
	}
	exp := r.ExpiresAt
	cond := store.NotExists()
	if lr.exists {
		cond = store.HasVersion(lr.version)
	}
	runOp := store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: runKey(ws, r.ID), SetData: data,
		SetIndexes: runIndexes(ws, r), SetExpiresAt: &exp, Cond: cond}}
	oldKeys := map[store.Key]bool{}
	for _, k := range entryKeys(ws, &old) {
		oldKeys[k] = true
	}
	var puts []store.Item
	newKeys := map[store.Key]bool{}
	for _, k := range entryKeys(ws, r) {
		newKeys[k] = true
		// An unchanged entry keeps its key but the expiry follows the run.
		if !oldKeys[k] || !old.ExpiresAt.Equal(r.ExpiresAt) {
			puts = append(puts, store.Item{Key: k, ExpiresAt: r.ExpiresAt})
		}
	}
	var dels []store.Key
	for k := range oldKeys {
		if !newKeys[k] {
			dels = append(dels, k)
		}
	}
	sort.Slice(dels, func(i, j int) bool { return dels[i].PK+dels[i].SK < dels[j].PK+dels[j].SK })
	// Statistics and thread deltas.
	delta := map[string]int64{}
	addContrib(delta, r.Counted, 1)
	addContrib(delta, old.Counted, -1)
	for k, v := range delta {
		if v == 0 {
			delete(delta, k)
		}
	}
	project := r.Counted.Project
	if project == "" {
		project = old.Counted.Project
	}
	newStats := 0
	if len(delta) > 0 && p.stats[project] == nil {
		newStats = 1
	}
	type tdelta struct {
		thread              string
		runs, roots, tokens int64
	}
	var tds []tdelta
	if o, n := old.ThreadCounted, r.ThreadCounted; o.Thread == n.Thread {
		if n.Thread != "" && (o != n || !old.StartTime.Equal(r.StartTime)) {
			tds = append(tds, tdelta{n.Thread, n.Runs - o.Runs, n.Roots - o.Roots, n.Tokens - o.Tokens})
		}
	} else {
		if o.Thread != "" {
			tds = append(tds, tdelta{o.Thread, -o.Runs, -o.Roots, -o.Tokens})
		}
		if n.Thread != "" {
			tds = append(tds, tdelta{n.Thread, n.Runs, n.Roots, n.Tokens})
		}
	}
	threadProject := r.SessionID
	newThreads := 0
	for _, td := range tds {
		if p.threads[threadProject+"\x00"+td.thread] == nil {
			newThreads++
		}
	}
	// Fit: the run, its entries, and any new statistics or thread updates.
	// Entry writes that do not fit are written before the transaction
	// (they are idempotent pointers; a query re-checks every candidate),
	// stale entry deletions that do not fit are left for the same reason.
	fixed := 2 + newStats + newThreads
	room := txBudget - p.size() - fixed
	if room < 0 || (!force && room < len(puts)+len(dels) && p.size() > 0) {
		return false
	}
	if len(puts) > room {
		p.pre = append(p.pre, puts[room:]...)
		puts = puts[:room]
	}
	room -= len(puts)
	if len(dels) > room {
		dels = dels[:max(room, 0)]
	}
	p.ops = append(p.ops, runOp)
	if r.complete() && r.isRoot() && !(old.complete() && old.isRoot()) {
		// A new trace: exactly one write makes its root complete.
		ev := UsageEvent{ID: "traces:" + ws + ":" + r.TraceID, OrganizationID: p.org, WorkspaceID: ws,
			Metric: "traces", Quantity: 1, At: r.FirstSeen}
		if raw, err := json.Marshal(ev); err == nil {
			p.usage = append(p.usage, ev)
			p.ops = append(p.ops, store.TxOp{Kind: store.OpPut, Item: store.Item{Key: usageKey(ev.ID), Data: raw}})
		}
	}
	for _, it := range puts {
		p.ops = append(p.ops, store.TxOp{Kind: store.OpPut, Item: it})
	}
	for _, k := range dels {
		p.ops = append(p.ops, store.TxOp{Kind: store.OpDelete, Key: k})
	}
	if len(delta) > 0 {
		if p.stats[project] == nil {
			p.stats[project] = map[string]int64{}
		}
		for k, v := range delta {
			p.stats[project][k] += v
		}
	}
	for _, td := range tds {
		key := threadProject + "\x00" + td.thread
		tc := p.threads[key]
		if tc == nil {
			tc = &threadChange{ws: ws, project: threadProject, thread: td.thread}
			p.threads[key] = tc
		}
		tc.runs += td.runs
		tc.roots += td.roots
		tc.tokens += td.tokens
		if td.runs >= 0 && td.thread == r.ThreadID && r.complete() {
			if tc.latest.IsZero() || r.StartTime.After(tc.latest) {
				tc.latest, tc.latestRun = r.StartTime, r.ID
			}
			if tc.earliest.IsZero() || r.StartTime.Before(tc.earliest) {
				tc.earliest = r.StartTime
			}
			if r.ExpiresAt.After(tc.expires) {
				tc.expires = r.ExpiresAt
			}
		}
	}
	p.written = append(p.written, r)
	p.deps[r.ID] = lr.nums["deps"]
	return true
}

// commit writes the plan: overflow entries first, then one transaction
// with the runs, the statistics (added atomically) and the thread
// summaries (read and written conditionally, for their latest-activity
// index).
func (s *Service) commit(ctx context.Context, p *txPlan) error {
	for len(p.pre) > 0 {
		n := min(len(p.pre), store.MaxTxOps)
		ops := make([]store.TxOp, n)
		for i, it := range p.pre[:n] {
			ops[i] = store.TxOp{Kind: store.OpPut, Item: it}
		}
		if err := s.st.Transact(ctx, ops); err != nil {
			return err
		}
		p.pre = p.pre[n:]
	}
	ops := append([]store.TxOp(nil), p.ops...)
	projects := make([]string, 0, len(p.stats))
	for pr := range p.stats {
		projects = append(projects, pr)
	}
	sort.Strings(projects)
	for _, pr := range projects {
		if len(p.stats[pr]) == 0 {
			continue
		}
		ops = append(ops, store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: statsKey(p.ws, pr), Add: p.stats[pr]}})
	}
	keys := make([]string, 0, len(p.threads))
	for k := range p.threads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		op, err := s.threadOp(ctx, p.threads[k])
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil
	}
	return s.st.Transact(ctx, ops)
}

// threadOp updates a thread summary: counters by addition, the first and
// last activity (and the activity index) by a conditional write.
func (s *Service) threadOp(ctx context.Context, tc *threadChange) (store.TxOp, error) {
	key := threadKey(tc.ws, tc.project, tc.thread)
	add := map[string]int64{}
	for k, v := range map[string]int64{"runs": tc.runs, "roots": tc.roots, "tokens": tc.tokens} {
		if v != 0 {
			add[k] = v
		}
	}
	it, err := s.st.Get(ctx, key)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.TxOp{}, err
	}
	var rec threadRecord
	if exists {
		if err := json.Unmarshal(it.Data, &rec); err != nil {
			return store.TxOp{}, err
		}
	} else {
		rec.ThreadID = tc.thread
	}
	changed := !exists
	if !tc.latest.IsZero() && (rec.LastStart.IsZero() || tc.latest.After(rec.LastStart)) {
		rec.LastStart, rec.LastRunID, changed = tc.latest, tc.latestRun, true
	}
	if !tc.earliest.IsZero() && (rec.FirstStart.IsZero() || tc.earliest.Before(rec.FirstStart)) {
		rec.FirstStart, changed = tc.earliest, true
	}
	u := store.Update{Key: key, Add: add}
	if changed {
		data, err := json.Marshal(rec)
		if err != nil {
			return store.TxOp{}, err
		}
		u.SetData = data
		last := rec.LastStart
		if last.IsZero() {
			last = rec.FirstStart
		}
		u.SetIndexes = map[string]store.IndexKey{"gsi1": {PK: threadsByActivityPK(tc.ws, tc.project), SK: sortTime(last) + "#" + nameKey(tc.thread)}}
		if !tc.expires.IsZero() && (!exists || it.ExpiresAt.Before(tc.expires)) {
			u.SetExpiresAt = &tc.expires
		}
		u.Cond = store.NotExists()
		if exists {
			u.Cond = store.HasVersion(it.Version)
		}
	}
	return store.TxOp{Kind: store.OpUpdate, Update: u}, nil
}
