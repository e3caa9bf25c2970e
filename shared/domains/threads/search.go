package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Sort columns.
const (
	SortThreadID       = "thread_id"
	SortStatus         = "status"
	SortCreatedAt      = "created_at"
	SortUpdatedAt      = "updated_at"
	SortStateUpdatedAt = "state_updated_at"
)

// Defaults of search: the hosted (Postgres) agent server's order.
const (
	DefaultSortBy    = SortUpdatedAt
	DefaultSortOrder = "desc"
)

// SelectFields are the columns select may name.
var SelectFields = []string{"thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "config", "status", "values", "interrupts"}

// Filter selects threads.
type Filter struct {
	IDs      []string
	Status   string
	Metadata map[string]any
	Values   map[string]any
}

// SearchIn is a validated search.
type SearchIn struct {
	Filter
	Limit, Offset int
	SortBy        string
	Desc          bool
	// Select lists the fields to return (nil: all).
	Select []string
	// Extract maps an alias to a parsed path.
	Extract map[string][]any
}

// SearchResult is a page of threads and the true number of matches.
type SearchResult struct {
	Threads []map[string]any
	Total   int
	More    bool
}

// Stats says what a search read (tests and benchmarks check the plans).
type Stats struct {
	Plan      string
	ItemsRead int
}

// statsKey lets tests observe the plan through the context.
type statsKey struct{}

// WithStats returns a context in which searches record their plan and
// reads into st.
func WithStats(ctx context.Context, st *Stats) context.Context {
	return context.WithValue(ctx, statsKey{}, st)
}

func statsOf(ctx context.Context) *Stats {
	if st, ok := ctx.Value(statsKey{}).(*Stats); ok {
		return st
	}
	return &Stats{}
}

// Search runs a search.
func (s *Service) Search(ctx context.Context, dep string, in SearchIn) (SearchResult, error) {
	page, total, more, err := s.find(ctx, dep, in.Filter, in.SortBy, in.Desc, in.Offset, in.Limit)
	if err != nil {
		return SearchResult{}, err
	}
	fields := in.Select
	if fields == nil {
		fields = SelectFields
	}
	wantValues := contains(fields, "values") || len(in.Extract) > 0
	out := make([]map[string]any, 0, len(page))
	for _, t := range page {
		v, err := s.view(ctx, t, wantValues, false)
		if err != nil {
			return SearchResult{}, err
		}
		m := map[string]any{}
		full := map[string]any{
			"thread_id": v.ThreadID, "created_at": v.CreatedAt, "updated_at": v.UpdatedAt,
			"state_updated_at": v.StateUpdatedAt, "metadata": v.Metadata, "config": v.Config,
			"status": v.Status, "values": v.Values, "interrupts": v.Interrupts,
		}
		for _, f := range fields {
			m[f] = full[f]
		}
		if len(in.Extract) > 0 {
			ex := map[string]any{}
			for alias, path := range in.Extract {
				ex[alias] = extractPath(full, path)
			}
			m["extracted"] = ex
		}
		out = append(out, m)
	}
	return SearchResult{Threads: out, Total: total, More: more}, nil
}

// Count returns the number of threads matching f.
func (s *Service) Count(ctx context.Context, dep string, f Filter) (int, error) {
	_, total, _, err := s.find(ctx, dep, f, SortThreadID, false, 0, 0)
	return total, err
}

// pairReadWeight is what the planner charges for an item read by the pair
// plan (a point read of a thread, decoded whole) against one read by an
// index walk (an item of a query page, usually rejected on its bytes):
// measured on bbolt, about 4; on DynamoDB a strongly consistent point read
// costs a read unit while a query's items share 4 KB units at half price.
const pairReadWeight = 4

// find plans and runs a search; limit 0 only counts.
func (s *Service) find(ctx context.Context, dep string, f Filter, sortBy string, desc bool, offset, limit int) ([]*threadRecord, int, bool, error) {
	st := statsOf(ctx)
	if len(f.IDs) > 0 {
		st.Plan = "ids"
		cands, err := s.getThreads(ctx, dep, f.IDs, st)
		if err != nil {
			return nil, 0, false, err
		}
		return s.finishInMemory(ctx, cands, f, sortBy, desc, offset, limit, st)
	}
	counts, err := s.counters(ctx, dep, "c#", st)
	if err != nil {
		return nil, 0, false, err
	}
	statusCol := "all"
	if f.Status != "" {
		statusCol = f.Status
	}
	n := counts[statusCol]
	// The pairs of the filter: metadata pairs, then values pairs. A
	// thread with more pairs than are indexed (ovf, vovf) makes the
	// index incomplete for that kind of filter.
	hashes, indexable := filterPairs(f.Metadata)
	if len(f.Metadata) > 0 && counts["ovf"] != 0 {
		indexable = false
	}
	if len(f.Values) > 0 {
		vh, ok := filterValuePairs(f.Values)
		hashes = append(hashes, vh...)
		indexable = indexable && ok && counts["vovf"] == 0
	}
	if len(hashes) > 0 && indexable {
		rarest, rn, rall := "", int64(-1), int64(0)
		for _, h := range hashes {
			pc, err := s.counters(ctx, dep, "p#"+h+"#", st)
			if err != nil {
				return nil, 0, false, err
			}
			if rn < 0 || pc[statusCol] < rn {
				rarest, rn, rall = h, pc[statusCol], pc["all"]
			}
		}
		if rn <= 0 {
			st.Plan = "pair-count"
			return nil, 0, false, nil
		}
		exact := len(hashes) == 1 && len(f.Values) == 0
		if exact && limit == 0 {
			// A count of one pair: its counters are the answer.
			st.Plan = "pair-count"
			corr, err := s.expiredMatching(ctx, dep, f, st)
			if err != nil {
				return nil, 0, false, err
			}
			return nil, int(rn) - corr, false, nil
		}
		// Reading the pair's members costs about 2*rn items, each thread
		// a separate read decoded whole; walking the sort index costs
		// about (offset+limit+1)*n/rn items of one query each, most of
		// them rejected on their bytes: pairReadWeight times cheaper. Several pairs or
		// a values filter need the members anyway for an exact total.
		walkCost := float64(offset+limit+1) * float64(n) / float64(rn)
		// The pair's members are kept in created_at order: walking them
		// reads a member and its thread per candidate, about
		// (offset+limit+1)*rall/rn candidates (all of them match
		// unless a status filter rejects some).
		if exact && sortBy == SortCreatedAt {
			perMatch := float64(rall) / float64(rn)
			if memberCost := float64(offset+limit+1) * perMatch * (1 + pairReadWeight); memberCost <= walkCost && memberCost <= pairReadWeight*float64(2*rn) {
				st.Plan = "pair-ordered"
				corr, err := s.expiredMatching(ctx, dep, f, st)
				if err != nil {
					return nil, 0, false, err
				}
				page, more, err := s.walkMembers(ctx, dep, rarest, f, desc, offset, limit, perMatch, st)
				return page, int(rn) - corr, more, err
			}
		}
		if !exact || pairReadWeight*float64(2*rn) <= walkCost {
			st.Plan = "pair"
			cands, err := s.pairMembers(ctx, dep, rarest, st)
			if err != nil {
				return nil, 0, false, err
			}
			return s.finishInMemory(ctx, cands, f, sortBy, desc, offset, limit, st)
		}
		// Walk the sort index, filtering; the pair counter is the total.
		corr, err := s.expiredMatching(ctx, dep, f, st)
		if err != nil {
			return nil, 0, false, err
		}
		page, more, err := s.walk(ctx, dep, f, sortBy, desc, offset, limit, float64(n)/float64(rn), st)
		return page, int(rn) - corr, more, err
	}
	if len(f.Metadata) == 0 && len(f.Values) == 0 {
		corr, err := s.expiredMatching(ctx, dep, f, st)
		if err != nil {
			return nil, 0, false, err
		}
		total := int(n) - corr
		if limit == 0 {
			st.Plan = "count"
			return nil, total, false, nil
		}
		page, more, err := s.walk(ctx, dep, f, sortBy, desc, offset, limit, 1, st)
		return page, total, more, err
	}
	// Filters no index answers: read every candidate to know the total.
	st.Plan = "scan"
	page, total, err := s.walkAll(ctx, dep, f, sortBy, desc, offset, limit, st)
	return page, total, total > offset+limit && limit > 0, err
}

// filterPairs returns the pair hashes of a metadata filter, and whether
// every pair can be answered by the index.
func filterPairs(md map[string]any) ([]string, bool) {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		h, ok := pairHash(k, md[k])
		if !ok {
			return nil, false
		}
		out = append(out, h)
	}
	return out, true
}

// filterValuePairs returns the pair hashes of a values filter, and
// whether every pair can be answered by the index.
func filterValuePairs(values map[string]any) ([]string, bool) {
	out := make([]string, 0, len(values))
	for k, v := range values {
		if len(k) > maxPairKey {
			return nil, false
		}
		out = append(out, valuePairHash(k, v))
	}
	sort.Strings(out)
	return out, true
}

// counters sums the counter shards under prefix (DefaultCounterShards
// items or fewer, and at most that many more left by another shard count).
func (s *Service) counters(ctx context.Context, dep, prefix string, st *Stats) (map[string]int64, error) {
	out := map[string]int64{}
	q := store.Query{PK: counterPK(dep), SK: store.SKCond{Op: store.SKBeginsWith, A: prefix}, Limit: 2 * DefaultCounterShards}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		st.ItemsRead += len(page.Items)
		for _, it := range page.Items {
			for k, v := range it.Nums {
				out[k] += v
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// expiredMatching counts threads past their delete TTL that the sweeper
// has not removed yet and that match f (counters still include them).
func (s *Service) expiredMatching(ctx context.Context, dep string, f Filter, st *Stats) (int, error) {
	q := store.Query{Index: "gsi3", PK: "thrx#" + dep, SK: store.SKCond{Op: store.SKLess, A: sortTime(s.now())}}
	n := 0
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return 0, err
		}
		st.ItemsRead += len(page.Items)
		for _, it := range page.Items {
			var c companion
			if decodeJSON(it.Data, &c) != nil {
				continue
			}
			if (f.Status == "" || c.Status == f.Status) && containsAll(c.Metadata, f.Metadata) {
				n++
			}
		}
		if page.Next == "" {
			return n, nil
		}
		q.Cursor = page.Next
	}
}

// pairMembers reads every thread holding a metadata pair.
func (s *Service) pairMembers(ctx context.Context, dep, hash string, st *Stats) ([]*threadRecord, error) {
	var ids []string
	q := store.Query{PK: pairMembersPK(dep, hash)}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		st.ItemsRead += len(page.Items)
		for _, it := range page.Items {
			ids = append(ids, memberThread(it.SK))
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return s.getThreads(ctx, dep, ids, st)
}

// walkMembers reads one pair's members in created_at order, and their
// threads, until the page and one more match are found; perMatch sizes
// the pages as in walk.
func (s *Service) walkMembers(ctx context.Context, dep, hash string, f Filter, desc bool, offset, limit int, perMatch float64, st *Stats) ([]*threadRecord, bool, error) {
	pg := &pager{offset: offset, limit: limit}
	q := store.Query{PK: pairMembersPK(dep, hash), Desc: desc}
	return s.walkPages(ctx, q, pg, perMatch, st, func(items []store.Item) (bool, error) {
		ids := make([]string, len(items))
		for i, it := range items {
			ids[i] = memberThread(it.SK)
		}
		ts, err := s.getThreads(ctx, dep, ids, st)
		if err != nil {
			return false, err
		}
		for _, t := range ts {
			if done, err := s.keep(ctx, t, f, pg, st); done || err != nil {
				return done, err
			}
		}
		return false, nil
	})
}

// pager collects a walk's page: offset matches skipped, then limit kept.
type pager struct {
	offset, limit, matched int
	page                   []*threadRecord
}

// keep counts t when f matches it, and reports when the page and one more
// match are found.
func (s *Service) keep(ctx context.Context, t *threadRecord, f Filter, pg *pager, st *Stats) (bool, error) {
	ok, err := s.matches(ctx, t, f, st)
	if err != nil || !ok {
		return false, err
	}
	if pg.matched >= pg.offset+pg.limit {
		return true, nil
	}
	if pg.matched >= pg.offset {
		pg.page = append(pg.page, t)
	}
	pg.matched++
	return false, nil
}

// walkPages reads q page by page, each sized for the matches still
// missing (perMatch rows expected per match), and hands each page's items
// to visit until it reports the page full or the query ends. It returns
// the page and whether more matches exist.
func (s *Service) walkPages(ctx context.Context, q store.Query, pg *pager, perMatch float64, st *Stats, visit func([]store.Item) (bool, error)) ([]*threadRecord, bool, error) {
	for {
		q.Limit = int(min(max(float64(pg.offset+pg.limit+1-pg.matched)*max(perMatch, 1), 1), 100))
		res, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, false, err
		}
		st.ItemsRead += len(res.Items)
		done, err := visit(res.Items)
		if err != nil {
			return nil, false, err
		}
		if done {
			return pg.page, true, nil
		}
		if res.Next == "" {
			return pg.page, false, nil
		}
		q.Cursor = res.Next
	}
}

// getThreads reads threads by id, in parallel; missing ones are skipped.
func (s *Service) getThreads(ctx context.Context, dep string, ids []string, st *Stats) ([]*threadRecord, error) {
	out := make([]*threadRecord, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			it, err := s.st.Get(ctx, threadKey(dep, id))
			if errors.Is(err, store.ErrNotFound) {
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			out[i], errs[i] = decodeThread(it.Data)
		}()
	}
	wg.Wait()
	st.ItemsRead += len(ids)
	res := make([]*threadRecord, 0, len(ids))
	seen := map[string]bool{}
	for i, t := range out {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if t != nil && !seen[t.ID] {
			seen[t.ID] = true
			res = append(res, t)
		}
	}
	return res, nil
}

// finishInMemory filters, sorts and pages a candidate set.
func (s *Service) finishInMemory(ctx context.Context, cands []*threadRecord, f Filter, sortBy string, desc bool, offset, limit int, st *Stats) ([]*threadRecord, int, bool, error) {
	var keep []*threadRecord
	for _, t := range cands {
		ok, err := s.matches(ctx, t, f, st)
		if err != nil {
			return nil, 0, false, err
		}
		if ok {
			keep = append(keep, t)
		}
	}
	sort.Slice(keep, func(i, j int) bool {
		a, b := sortKey(keep[i], sortBy), sortKey(keep[j], sortBy)
		if desc {
			return a > b
		}
		return a < b
	})
	total := len(keep)
	if limit == 0 {
		return nil, total, false, nil
	}
	if offset >= total {
		return nil, total, false, nil
	}
	end := min(offset+limit, total)
	return keep[offset:end], total, end < total, nil
}

// matches applies every filter to a thread (reading its values only for a
// values filter).
func (s *Service) matches(ctx context.Context, t *threadRecord, f Filter, st *Stats) (bool, error) {
	if t.expired(s.now()) {
		return false, nil
	}
	if f.Status != "" && t.Status != f.Status {
		return false, nil
	}
	if !containsAll(t.Metadata, f.Metadata) {
		return false, nil
	}
	if len(f.Values) > 0 {
		if t.ValuesLarge {
			st.ItemsRead++
		}
		v, err := s.threadValues(ctx, t)
		if err != nil {
			return false, err
		}
		if !containsAll(v, f.Values) {
			return false, nil
		}
	}
	return true, nil
}

// containsAll: every key of want is in have with an equal value.
func containsAll(have, want map[string]any) bool {
	for k, v := range want {
		got, ok := have[k]
		if !ok || !jsonEqual(got, v) {
			return false
		}
	}
	return true
}

// sortKey is a thread's key in the index of sortBy (value, then id).
func sortKey(t *threadRecord, sortBy string) string {
	switch sortBy {
	case SortStatus:
		return t.Status + "#" + t.ID
	case SortCreatedAt:
		return sortTime(t.CreatedAt) + "#" + t.ID
	case SortUpdatedAt:
		return sortTime(t.UpdatedAt) + "#" + t.ID
	case SortStateUpdatedAt:
		return sortTime(t.StateUpdatedAt) + "#" + t.ID
	}
	return t.ID
}

// source is the index that yields threads in an order.
type source struct {
	q store.Query
	// companion: the index holds companion items, threads are read by id.
	companion bool
}

// sourceFor picks the index for a sort order and status filter; every
// combination has one, so neither filter nor order needs a scan.
func sourceFor(dep, status, sortBy string, desc bool) source {
	all := "thr#" + dep
	var src source
	switch {
	case sortBy == SortThreadID && status == "":
		src.q = store.Query{PK: all, SK: store.SKCond{Op: store.SKBeginsWith, A: "t#"}}
	case sortBy == SortThreadID || sortBy == SortStatus:
		src.q = store.Query{Index: "gsi4", PK: all}
		if status != "" {
			src.q.SK = store.SKCond{Op: store.SKBeginsWith, A: status + "#"}
		}
	case status == "":
		idx := map[string]string{SortCreatedAt: "gsi1", SortUpdatedAt: "gsi2", SortStateUpdatedAt: "gsi3"}[sortBy]
		src.q = store.Query{Index: idx, PK: all}
	case sortBy == SortUpdatedAt:
		src.q = store.Query{Index: "gsi5", PK: all + "#" + status}
	default:
		idx := map[string]string{SortCreatedAt: "gsi1", SortStateUpdatedAt: "gsi2"}[sortBy]
		src.q = store.Query{Index: idx, PK: "thrs#" + dep + "#" + status}
		src.companion = true
	}
	src.q.Desc = desc
	return src
}

// walk reads the sort index in order, skipping expired threads and those
// the post-filters reject, until the page and one more match are found.
// perMatch is how many rows the walk expects to read per match (1 without
// a filter): its query pages are sized for the matches still missing, so a
// selective filter takes a few large pages, not many small ones (each page
// is a round trip on DynamoDB).
func (s *Service) walk(ctx context.Context, dep string, f Filter, sortBy string, desc bool, offset, limit int, perMatch float64, st *Stats) ([]*threadRecord, bool, error) {
	if st.Plan == "" {
		st.Plan = "index"
	}
	src := sourceFor(dep, f.Status, sortBy, desc)
	pg := &pager{offset: offset, limit: limit}
	return s.walkPages(ctx, src.q, pg, perMatch, st, func(items []store.Item) (bool, error) {
		for _, it := range items {
			// A companion row before the offset is counted without
			// reading its thread.
			t, err := s.fromIndexItem(ctx, dep, it, src.companion, f, pg.matched >= offset, st)
			if err != nil {
				return false, err
			}
			if t == nil {
				continue
			}
			if done, err := s.keep(ctx, t, f, pg, st); done || err != nil {
				return done, err
			}
		}
		return false, nil
	})
}

// walkAll reads every candidate in order (a filter no index answers) and
// returns the page and the true total.
func (s *Service) walkAll(ctx context.Context, dep string, f Filter, sortBy string, desc bool, offset, limit int, st *Stats) ([]*threadRecord, int, error) {
	src := sourceFor(dep, f.Status, sortBy, desc)
	var page []*threadRecord
	matched := 0
	q := src.q
	q.Limit = 100
	for {
		res, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, 0, err
		}
		st.ItemsRead += len(res.Items)
		for _, it := range res.Items {
			t, err := s.fromIndexItem(ctx, dep, it, src.companion, f, true, st)
			if err != nil {
				return nil, 0, err
			}
			if t == nil {
				continue
			}
			ok, err := s.matches(ctx, t, f, st)
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				continue
			}
			if limit > 0 && matched >= offset && matched < offset+limit {
				page = append(page, t)
			}
			matched++
		}
		if res.Next == "" {
			return page, matched, nil
		}
		q.Cursor = res.Next
	}
}

// fromIndexItem turns an index hit into a thread: a thread item directly;
// a companion item is pre-filtered on its projection and its thread read
// only when it may be returned (need) or a values filter must look.
func (s *Service) fromIndexItem(ctx context.Context, dep string, it store.Item, comp bool, f Filter, need bool, st *Stats) (*threadRecord, error) {
	if !comp {
		if len(f.Metadata) > 0 {
			// Most rows of a filtered walk are rejected: on their bytes
			// when the filter allows (rawjson.go), else on their
			// metadata alone (the values are skipped, not built).
			if rawRejects(it.Data, f.Metadata) {
				return nil, nil
			}
			var h struct {
				Metadata map[string]any `json:"metadata"`
			}
			if err := decodeJSON(it.Data, &h); err != nil {
				return nil, fmt.Errorf("threads: corrupt thread: %w", err)
			}
			if !containsAll(h.Metadata, f.Metadata) {
				return nil, nil
			}
		}
		return decodeThread(it.Data)
	}
	var c companion
	if err := decodeJSON(it.Data, &c); err != nil {
		return nil, err
	}
	if c.TTLDelete && !s.now().Before(c.ExpiresAt) {
		return nil, nil
	}
	if !containsAll(c.Metadata, f.Metadata) {
		return nil, nil
	}
	tid := strings.TrimPrefix(it.SK, "s#")
	if !need && len(f.Values) == 0 {
		// Counted toward the offset without reading the thread.
		return &threadRecord{ID: tid, Deployment: dep, Status: c.Status, Metadata: c.Metadata}, nil
	}
	th, err := s.st.Get(ctx, threadKey(dep, tid))
	st.ItemsRead++
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return decodeThread(th.Data)
}

// ParseExtractPath parses "values.messages[-1].content" into segments:
// strings for keys, ints for indexes. The root is values, metadata,
// config or interrupts.
func ParseExtractPath(p string) ([]any, error) {
	var out []any
	rest := p
	for rest != "" {
		if rest[0] == '[' {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, errors.New("unclosed [")
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil {
				return nil, errors.New("an index must be an integer")
			}
			out = append(out, n)
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return nil, errors.New("a path cannot end with '.'")
				}
			}
			continue
		}
		end := strings.IndexAny(rest, ".[")
		key := rest
		if end >= 0 {
			key = rest[:end]
			rest = rest[end:]
			if rest[0] == '.' {
				rest = rest[1:]
				if rest == "" {
					return nil, errors.New("a path cannot end with '.'")
				}
			}
		} else {
			rest = ""
		}
		if key == "" {
			return nil, errors.New("empty key")
		}
		out = append(out, key)
	}
	if len(out) == 0 {
		return nil, errors.New("empty path")
	}
	switch out[0] {
	case "values", "metadata", "config", "interrupts":
	default:
		return nil, errors.New("a path starts with values, metadata, config or interrupts")
	}
	return out, nil
}

// extractPath follows a parsed path; a missing step gives nil.
func extractPath(root map[string]any, path []any) any {
	var cur any = root
	for _, seg := range path {
		switch k := seg.(type) {
		case string:
			m, ok := asMap(cur)
			if !ok {
				return nil
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok {
				return nil
			}
			if k < 0 {
				k += len(l)
			}
			if k < 0 || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case json.RawMessage:
		var out map[string]any
		return out, decodeJSON(m, &out) == nil
	}
	return nil, false
}

// invalidSort is the 422 of an unknown sort column or order.
func invalidSort(field, got string, allowed []string) error {
	return fault.Invalid(fault.Loc("body", field), "Invalid "+field+": "+got+". Expected one of ['"+strings.Join(allowed, "', '")+"']", "enum")
}
