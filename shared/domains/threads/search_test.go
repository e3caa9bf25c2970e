package threads_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/google/uuid"
)

// seedSearch creates threads with varied metadata, statuses and
// timestamps, and returns them as the API shows them.
func seedSearch(t *testing.T, e *env, n int) []map[string]any {
	t.Helper()
	var ids []string
	for i := 0; i < n; i++ {
		e.clock.advance(time.Second)
		body := map[string]any{"metadata": map[string]any{"graph_id": []string{"agent", "other"}[i%2], "user": fmt.Sprintf("u%d", i%3), "n": i}}
		if i%5 == 0 {
			// __input__ alone: interrupted.
			body["supersteps"] = []any{map[string]any{"updates": []any{map[string]any{"as_node": "__input__", "values": map[string]any{}}}}}
		}
		if i%4 == 0 {
			body["supersteps"] = []any{map[string]any{"updates": []any{map[string]any{"as_node": "agent", "values": map[string]any{"k": i % 2}}}}}
		}
		ids = append(ids, str(e.create(body), "thread_id"))
	}
	// Scramble updated_at and state_updated_at.
	for i := n - 1; i >= 0; i -= 3 {
		e.clock.advance(time.Second)
		e.must(200, "PATCH", "/threads/"+ids[i], map[string]any{"metadata": map[string]any{"touched": true}})
	}
	for i := 1; i < n; i += 4 {
		e.clock.advance(time.Second)
		e.must(200, "POST", "/threads/"+ids[i]+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"k": 1}})
	}
	for i, st := range map[int]string{2: "busy", 7: "error", 11: "busy"} {
		if i < n {
			if err := e.svc.SetStatus(context.Background(), e.dep, ids[i], st); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out []map[string]any
	for _, id := range ids {
		out = append(out, e.must(200, "GET", "/threads/"+id, nil).M())
	}
	return out
}

// expect is the reference implementation of a search over all threads.
func expect(all []map[string]any, status string, md, values map[string]any, sortBy string, desc bool) []string {
	var keep []map[string]any
	for _, th := range all {
		if status != "" && th["status"] != status {
			continue
		}
		ok := true
		for k, v := range md {
			if !reflect.DeepEqual(get(th, "metadata", k), v) {
				ok = false
			}
		}
		for k, v := range values {
			if !reflect.DeepEqual(get(th, "values", k), v) {
				ok = false
			}
		}
		if ok {
			keep = append(keep, th)
		}
	}
	key := func(th map[string]any) string {
		if sortBy == "thread_id" {
			return str(th, "thread_id")
		}
		return str(th, sortBy) + "#" + str(th, "thread_id")
	}
	sort.Slice(keep, func(i, j int) bool {
		if desc {
			return key(keep[i]) > key(keep[j])
		}
		return key(keep[i]) < key(keep[j])
	})
	var ids []string
	for _, th := range keep {
		ids = append(ids, str(th, "thread_id"))
	}
	return ids
}

func pageIDs(r resp) []string {
	var out []string
	for _, th := range r.L() {
		out = append(out, str(th, "thread_id"))
	}
	return out
}

func checkPage(t *testing.T, what string, r resp, want []string, offset, limit int) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", what, r.Status, r.Raw)
	}
	end := min(offset+limit, len(want))
	var page []string
	if offset < len(want) {
		page = want[offset:end]
	}
	if got := pageIDs(r); !reflect.DeepEqual(got, page) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, page)
	}
	if tot := r.Header.Get("X-Pagination-Total"); tot != strconv.Itoa(len(want)) {
		t.Fatalf("%s: X-Pagination-Total %q, want %d", what, tot, len(want))
	}
	next := ""
	if end < len(want) {
		next = strconv.Itoa(offset + limit)
	}
	if got := r.Header.Get("X-Pagination-Next"); got != next {
		t.Fatalf("%s: X-Pagination-Next %q, want %q", what, got, next)
	}
}

func TestSearchEveryFilterAndSort(t *testing.T) {
	e := newEnv(t)
	all := seedSearch(t, e, 24)
	// Expire one thread: it must vanish from search and count at once.
	victim := str(all[3], "thread_id")
	e.must(200, "PATCH", "/threads/"+victim, map[string]any{"ttl": 1})
	all = append(all[:3], all[4:]...)
	for i := range all {
		all[i] = e.must(200, "GET", "/threads/"+str(all[i], "thread_id"), nil).M()
	}
	e.clock.advance(2 * time.Minute)

	statuses := []string{"", "idle", "busy", "interrupted", "error"}
	for _, st := range statuses {
		if st != "" && len(expect(all, st, nil, nil, "thread_id", false)) == 0 {
			t.Fatalf("the fixture has no %s thread", st)
		}
	}
	sorts := []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
	for _, st := range statuses {
		for _, sb := range sorts {
			for _, order := range []string{"asc", "desc"} {
				for _, pg := range [][2]int{{0, 10}, {3, 7}, {20, 5}} {
					body := map[string]any{"sort_by": sb, "sort_order": order, "offset": pg[0], "limit": pg[1]}
					if st != "" {
						body["status"] = st
					}
					r := e.do("POST", "/threads/search", body)
					checkPage(t, fmt.Sprint(body), r, expect(all, st, nil, nil, sb, order == "desc"), pg[0], pg[1])
				}
			}
		}
	}
	// Defaults: updated_at descending, limit 10.
	checkPage(t, "defaults", e.do("POST", "/threads/search", nil), expect(all, "", nil, nil, "updated_at", true), 0, 10)
	checkPage(t, "sort_by only", e.do("POST", "/threads/search", map[string]any{"sort_by": "created_at"}), expect(all, "", nil, nil, "created_at", true), 0, 10)

	// Metadata (exact match per key), values, ids, and their mixes.
	mds := []map[string]any{
		{"user": "u1"}, {"graph_id": "agent"}, {"user": "u2", "graph_id": "other"}, {"n": float64(5)},
		{"touched": true}, {"user": "nobody"}, {"user": "u0", "touched": true, "graph_id": "agent"},
	}
	for _, md := range mds {
		for _, st := range []string{"", "idle", "interrupted"} {
			for _, sb := range []string{"created_at", "updated_at", "thread_id"} {
				body := map[string]any{"metadata": md, "sort_by": sb, "sort_order": "asc", "limit": 4, "offset": 1}
				if st != "" {
					body["status"] = st
				}
				checkPage(t, fmt.Sprint(body), e.do("POST", "/threads/search", body), expect(all, st, md, nil, sb, false), 1, 4)
			}
			cb := map[string]any{"metadata": md}
			if st != "" {
				cb["status"] = st
			}
			if n := e.must(200, "POST", "/threads/count", cb).Body; n != float64(len(expect(all, st, md, nil, "thread_id", false))) {
				t.Fatalf("count %v: %v", cb, n)
			}
		}
	}
	vals := map[string]any{"k": float64(1)}
	checkPage(t, "values", e.do("POST", "/threads/search", map[string]any{"values": vals, "sort_by": "thread_id", "sort_order": "asc", "limit": 3}),
		expect(all, "", nil, vals, "thread_id", false), 0, 3)
	checkPage(t, "values+metadata", e.do("POST", "/threads/search", map[string]any{"values": vals, "metadata": map[string]any{"user": "u1"}, "sort_by": "thread_id", "sort_order": "asc", "limit": 3}),
		expect(all, "", map[string]any{"user": "u1"}, vals, "thread_id", false), 0, 3)
	if n := e.must(200, "POST", "/threads/count", map[string]any{"values": vals, "status": "idle"}).Body; n != float64(len(expect(all, "idle", nil, vals, "thread_id", false))) {
		t.Fatalf("count values: %v", n)
	}
	ids := []any{str(all[0], "thread_id"), str(all[5], "thread_id"), victim, uuid.NewString(), str(all[9], "thread_id")}
	r := e.do("POST", "/threads/search", map[string]any{"ids": ids, "sort_by": "thread_id", "sort_order": "desc"})
	var want []string
	for _, th := range expect(all, "", nil, nil, "thread_id", true) {
		for _, id := range ids {
			if id == th {
				want = append(want, th)
			}
		}
	}
	checkPage(t, "ids", r, want, 0, 10)

	// Totals and counts.
	if n := e.must(200, "POST", "/threads/count", map[string]any{}).Body; n != float64(len(all)) {
		t.Fatalf("count: %v, want %d", n, len(all))
	}
	for _, st := range statuses[1:] {
		if n := e.must(200, "POST", "/threads/count", map[string]any{"status": st}).Body; n != float64(len(expect(all, st, nil, nil, "thread_id", false))) {
			t.Fatalf("count %s: %v", st, n)
		}
	}
	// The sweeper then removes the expired thread for good; counts agree.
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(len(all)) {
		t.Fatalf("count after sweep: %v", n)
	}

	// select and extract.
	r = e.must(200, "POST", "/threads/search", map[string]any{"select": []any{"thread_id", "status"}, "limit": 2})
	for _, th := range r.L() {
		if len(th.(map[string]any)) != 2 {
			t.Fatalf("select: %v", th)
		}
	}
	r = e.must(200, "POST", "/threads/search", map[string]any{"ids": []any{str(all[4], "thread_id")}, "select": []any{"thread_id"},
		"extract": map[string]any{"k": "values.k", "user": "metadata.user", "nothing": "values.messages[-1].content"}})
	if ex := get(r.L()[0], "extracted"); !reflect.DeepEqual(ex, map[string]any{"k": get(all[4], "values", "k"), "user": get(all[4], "metadata", "user"), "nothing": nil}) {
		t.Fatalf("extract: %v", ex)
	}

	// Bad requests.
	for _, body := range []string{
		`{"limit": 0}`, `{"limit": 1001}`, `{"offset": -1}`, `{"sort_by": "name"}`, `{"sort_order": "up"}`,
		`{"status": "sleeping"}`, `{"select": ["context"]}`, `{"ids": ["x"]}`, `{"extract": {"a": "secrets.x"}}`,
		`{"metadata": "x"}`, `{"limit": "5"}`,
	} {
		if r := e.do("POST", "/threads/search", body); r.Status != 422 {
			t.Errorf("search %s: %d %s", body, r.Status, r.Raw)
		}
	}
	if r := e.do("POST", "/threads/count", `{"status": "x"}`); r.Status != 422 {
		t.Errorf("count bad status: %d", r.Status)
	}
}

// TestSearchPlans checks that search and count are answered by indexes:
// the items read stay near the page size, whatever the thread count.
func TestSearchPlans(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 300
	for i := 0; i < n; i++ {
		in := threads.CreateIn{Metadata: map[string]any{"graph_id": "agent", "user": fmt.Sprintf("u%d", i%100), "group": fmt.Sprintf("g%d", i%2)}}
		if _, err := e.svc.Create(ctx, e.dep, in); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		in       threads.SearchIn
		plan     string
		maxReads int
	}{
		{threads.SearchIn{Limit: 10, SortBy: "updated_at", Desc: true}, "index", 25},
		{threads.SearchIn{Limit: 10, SortBy: "thread_id"}, "index", 25},
		{threads.SearchIn{Limit: 10, SortBy: "created_at", Filter: threads.Filter{Status: "idle"}}, "index", 40},
		{threads.SearchIn{Limit: 10, SortBy: "state_updated_at", Filter: threads.Filter{Status: "idle"}}, "index", 40},
		{threads.SearchIn{Limit: 10, Offset: 50, SortBy: "status", Filter: threads.Filter{Status: "idle"}}, "index", 80},
		{threads.SearchIn{Limit: 10, SortBy: "updated_at", Filter: threads.Filter{Metadata: map[string]any{"graph_id": "agent"}}}, "index", 40},
		{threads.SearchIn{Limit: 10, SortBy: "updated_at", Filter: threads.Filter{Metadata: map[string]any{"user": "u7"}}}, "pair", 30},
		{threads.SearchIn{Limit: 10, SortBy: "updated_at", Filter: threads.Filter{Metadata: map[string]any{"user": "u7", "group": "g1"}}}, "pair", 30},
	}
	for _, c := range cases {
		var st threads.Stats
		res, err := e.svc.Search(threads.WithStats(ctx, &st), e.dep, c.in)
		if err != nil {
			t.Fatal(err)
		}
		if st.Plan != c.plan || st.ItemsRead > c.maxReads || len(res.Threads) == 0 {
			t.Errorf("%+v: plan %s, %d items read, %d results (want plan %s, at most %d reads)", c.in, st.Plan, st.ItemsRead, len(res.Threads), c.plan, c.maxReads)
		}
	}
	for _, f := range []threads.Filter{{}, {Status: "idle"}, {Metadata: map[string]any{"graph_id": "agent"}}} {
		var st threads.Stats
		cnt, err := e.svc.Count(threads.WithStats(ctx, &st), e.dep, f)
		if err != nil {
			t.Fatal(err)
		}
		if cnt != n || st.ItemsRead > 2*8+2 {
			t.Errorf("count %+v: %d after %d reads", f, cnt, st.ItemsRead)
		}
	}
}

// TestValuesFilterIndexed: a values filter is served by the pair index
// (top-level keys of the state values), stays exact as states change,
// and falls back to reading candidates, still exact, once a thread has
// more values keys than are indexed.
func TestValuesFilterIndexed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 200
	var ids []string
	for i := 0; i < n; i++ {
		in := threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: []threads.SuperstepIn{{Updates: []threads.UpdateIn{{
			AsNode: node("agent"), Values: map[string]any{"topic": fmt.Sprintf("t%d", i%20), "n": i % 2}}}}}}
		th, err := e.svc.Create(ctx, e.dep, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ThreadID)
	}
	search := func(values map[string]any) ([]string, int, threads.Stats) {
		t.Helper()
		var st threads.Stats
		res, err := e.svc.Search(threads.WithStats(ctx, &st), e.dep, threads.SearchIn{Limit: 1000, SortBy: "thread_id", Filter: threads.Filter{Values: values}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, th := range res.Threads {
			got = append(got, th["thread_id"].(string))
		}
		cnt, err := e.svc.Count(ctx, e.dep, threads.Filter{Values: values})
		if err != nil {
			t.Fatal(err)
		}
		if cnt != res.Total || cnt != len(got) {
			t.Fatalf("count %d, total %d, %d threads", cnt, res.Total, len(got))
		}
		return got, cnt, st
	}
	want := func(pred func(i int) bool) []string {
		var out []string
		for i, id := range ids {
			if pred(i) {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}
	got, _, st := search(map[string]any{"topic": "t3"})
	if !reflect.DeepEqual(got, want(func(i int) bool { return i%20 == 3 })) || st.Plan != "pair" || st.ItemsRead > 40 {
		t.Fatalf("topic t3: %d threads, plan %s, %d items read", len(got), st.Plan, st.ItemsRead)
	}
	// Numbers match whatever their spelling; two pairs intersect.
	got, _, _ = search(map[string]any{"topic": "t3", "n": 1.0})
	if !reflect.DeepEqual(got, want(func(i int) bool { return i%20 == 3 })) {
		t.Fatalf("topic t3 n 1: %v", got)
	}
	if got, _, _ = search(map[string]any{"topic": "t3", "n": 0}); len(got) != 0 {
		t.Fatalf("topic t3 n 0: %v", got)
	}
	// A state update moves a thread between pairs; a copy carries them.
	if _, err := e.svc.UpdateState(ctx, e.dep, ids[3], threads.UpdateStateIn{Update: threads.UpdateIn{AsNode: node("agent"), Values: map[string]any{"topic": "moved"}}}, nil); err != nil {
		t.Fatal(err)
	}
	cp, err := e.svc.Copy(ctx, e.dep, ids[3])
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ = search(map[string]any{"topic": "moved"}); len(got) != 2 || !contains(got, ids[3]) || !contains(got, cp.ThreadID) {
		t.Fatalf("moved: %v", got)
	}
	if got, _, _ = search(map[string]any{"topic": "t3"}); contains(got, ids[3]) || len(got) != n/20-1 {
		t.Fatalf("t3 after the move: %d", len(got))
	}
	if err := e.svc.Delete(ctx, e.dep, cp.ThreadID); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = search(map[string]any{"topic": "moved"}); !reflect.DeepEqual(got, []string{ids[3]}) {
		t.Fatalf("moved after delete: %v", got)
	}
	// A thread with more keys than are indexed: exact by reading.
	wide := map[string]any{"topic": "t5"}
	for i := 0; i < 12; i++ {
		wide[fmt.Sprintf("k%02d", i)] = i
	}
	if _, err := e.svc.UpdateState(ctx, e.dep, ids[0], threads.UpdateStateIn{Update: threads.UpdateIn{AsNode: node("agent"), Values: wide}}, nil); err != nil {
		t.Fatal(err)
	}
	got, _, st = search(map[string]any{"k11": 11})
	if !reflect.DeepEqual(got, []string{ids[0]}) || st.Plan != "scan" {
		t.Fatalf("wide: %v plan %s", got, st.Plan)
	}
	if err := e.svc.Delete(ctx, e.dep, ids[0]); err != nil {
		t.Fatal(err)
	}
	if got, _, st = search(map[string]any{"topic": "t5"}); len(got) != n/20 || st.Plan != "pair" {
		t.Fatalf("t5 after the wide thread went: %d plan %s", len(got), st.Plan)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSearchPairOrdered checks the plan that walks one pair's members in
// created_at order: the same pages, in the same order, as the created_at
// index filtered in memory, with reads near the page size, across
// offsets, both directions and deletions.
func TestSearchPairOrdered(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n, groups = 400, 20
	for i := 0; i < n; i++ {
		// Random (v4) ids: their order is not the creation order.
		in := threads.CreateIn{ThreadID: uuid.NewString(), Metadata: map[string]any{"graph_id": "agent", "group": fmt.Sprintf("g%d", i%groups)}}
		if _, err := e.svc.Create(ctx, e.dep, in); err != nil {
			t.Fatal(err)
		}
	}
	// The truth: every thread in created_at order (the index plan), kept by group.
	expect := func(desc bool) []string {
		res, err := e.svc.Search(ctx, e.dep, threads.SearchIn{Limit: 1000, SortBy: "created_at", Desc: desc})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, th := range res.Threads {
			if th["metadata"].(map[string]any)["group"] == "g1" {
				ids = append(ids, th["thread_id"].(string))
			}
		}
		return ids
	}
	check := func(deleted int) {
		for _, desc := range []bool{true, false} {
			want := expect(desc)
			if len(want) != n/groups-deleted {
				t.Fatalf("expected %d threads in g1, have %d", n/groups-deleted, len(want))
			}
			for _, page := range []struct{ offset, limit int }{{0, 10}, {10, 10}, {0, 1}, {len(want) - 5, 10}, {len(want), 10}, {0, 1000}} {
				got, res, st := searchGroup(t, e, "", desc, page.offset, page.limit)
				end := min(page.offset+page.limit, len(want))
				if !reflect.DeepEqual(got, want[min(page.offset, end):end]) && !(len(got) == 0 && page.offset >= len(want)) {
					t.Errorf("desc %v %+v: got %v, want %v", desc, page, got, want[page.offset:end])
				}
				if res.Total != len(want) || res.More != (end < len(want)) {
					t.Errorf("desc %v %+v: total %d more %v (want %d)", desc, page, res.Total, res.More, len(want))
				}
				// Counters (2 x 8 shards), the TTL index, then a member and
				// a thread per candidate.
				if page.limit == 10 && page.offset == 0 && (st.Plan != "pair-ordered" || st.ItemsRead > 2*8+1+2*(page.limit+1)) {
					t.Errorf("desc %v %+v: plan %s, %d items read", desc, page, st.Plan, st.ItemsRead)
				}
			}
		}
	}
	check(0)
	// Deleting threads removes their members.
	for _, id := range expect(true)[:7] {
		if err := e.svc.Delete(ctx, e.dep, id); err != nil {
			t.Fatal(err)
		}
	}
	check(7)
}

// The pair-ordered plan with a status filter, and with threads whose TTL
// has run out but which the sweeper has not removed yet: both are
// rejected on the thread's bytes, and the total is still exact.
func TestSearchPairOrderedStatusAndExpiry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n, groups = 300, 10
	var ids []string
	for i := 0; i < n; i++ {
		e.clock.advance(time.Second)
		id := uuid.NewString() // random: id order is not creation order
		e.create(map[string]any{"thread_id": id, "metadata": map[string]any{"graph_id": "agent", "group": fmt.Sprintf("g%d", i%groups)}})
		ids = append(ids, id)
	}
	expired := map[string]bool{}
	for i, id := range ids {
		switch {
		case i%7 == 0:
			if err := e.svc.SetStatus(ctx, e.dep, id, "busy"); err != nil {
				t.Fatal(err)
			}
		case i%11 == 0:
			if err := e.svc.SetStatus(ctx, e.dep, id, "error"); err != nil {
				t.Fatal(err)
			}
		}
		if i%groups == 1 && i%3 == 0 {
			e.must(200, "PATCH", "/threads/"+id, map[string]any{"ttl": 1})
			expired[id] = true
		}
	}
	// Every thread of g1 as the API shows it, oldest first, before the TTLs run out.
	var g1 []map[string]any
	for i, id := range ids {
		if i%groups == 1 {
			g1 = append(g1, e.must(200, "GET", "/threads/"+id, nil).M())
		}
	}
	e.clock.advance(2 * time.Minute)
	if len(expired) == 0 {
		t.Fatal("the fixture expires no thread")
	}
	for _, status := range []string{"", "idle", "busy", "error"} {
		var want []string
		for _, th := range g1 {
			id := str(th, "thread_id")
			if !expired[id] && (status == "" || th["status"] == status) {
				want = append(want, id)
			}
		}
		if len(want) < 2 {
			t.Fatalf("status %q: the fixture has %d live threads in g1", status, len(want))
		}
		for _, desc := range []bool{false, true} {
			if desc {
				want = append([]string(nil), want...)
				slices.Reverse(want)
			}
			for _, page := range []struct{ offset, limit int }{{0, 10}, {10, 10}, {0, 1}, {len(want) - 1, 10}, {len(want), 10}, {0, 1000}} {
				got, res, st := searchGroup(t, e, status, desc, page.offset, page.limit)
				end := min(page.offset+page.limit, len(want))
				if wantPage := want[min(page.offset, end):end]; !slices.Equal(got, wantPage) {
					t.Errorf("status %q desc %v %+v (plan %s): got %v, want %v", status, desc, page, st.Plan, got, wantPage)
				}
				if res.Total != len(want) || res.More != (end < len(want)) {
					t.Errorf("status %q desc %v %+v (plan %s): total %d more %v, want %d", status, desc, page, st.Plan, res.Total, res.More, len(want))
				}
				if (status == "" || status == "idle") && page.offset == 0 && page.limit == 10 && st.Plan != "pair-ordered" {
					t.Errorf("status %q desc %v: plan %s, want pair-ordered", status, desc, st.Plan)
				}
			}
		}
	}
}

// searchGroup searches the threads of metadata group g1 (and of status,
// when given) sorted by created_at, and returns the page's thread ids,
// the result and what the search read.
func searchGroup(t *testing.T, e *env, status string, desc bool, offset, limit int) ([]string, threads.SearchResult, threads.Stats) {
	t.Helper()
	var st threads.Stats
	res, err := e.svc.Search(threads.WithStats(context.Background(), &st), e.dep, threads.SearchIn{
		Limit: limit, Offset: offset, SortBy: "created_at", Desc: desc,
		Filter: threads.Filter{Status: status, Metadata: map[string]any{"group": "g1"}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, th := range res.Threads {
		ids = append(ids, th["thread_id"].(string))
	}
	return ids, res, st
}
