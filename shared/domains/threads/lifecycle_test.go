package threads_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
)

func TestPatchAndDelete(t *testing.T) {
	e := newEnv(t)
	th := e.create(map[string]any{"metadata": map[string]any{"a": 1, "nested": map[string]any{"x": 1, "y": 2}}})
	id := str(th, "thread_id")
	e.clock.advance(time.Second)
	got := e.must(200, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"b": 2, "nested": map[string]any{"x": 9}}}).M()
	want := map[string]any{"a": float64(1), "b": float64(2), "nested": map[string]any{"x": float64(9)}}
	if !reflect.DeepEqual(got["metadata"], want) {
		t.Fatalf("shallow merge: %v", got["metadata"])
	}
	if str(got, "updated_at") <= str(th, "updated_at") || str(got, "state_updated_at") != str(th, "state_updated_at") {
		t.Fatalf("timestamps: %v -> %v", th, got)
	}
	r := e.must(204, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"c": 3}}, "Prefer", "return=minimal")
	if len(r.Raw) != 0 {
		t.Fatalf("204 with a body: %q", r.Raw)
	}
	if get(e.must(200, "GET", "/threads/"+id, nil).M(), "metadata", "c") != float64(3) {
		t.Fatal("minimal patch not applied")
	}
	if r := e.do("PATCH", "/threads/"+uuid.NewString(), map[string]any{"metadata": map[string]any{}}); r.Status != 404 {
		t.Fatalf("patch missing: %d", r.Status)
	}
	if r := e.do("PATCH", "/threads/"+id, `{"metadata": 5}`); r.Status != 422 {
		t.Fatalf("patch bad metadata: %d", r.Status)
	}
	big := strings.Repeat("x", 70*1024)
	if r := e.do("PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"big": big}}); r.Status != 422 {
		t.Fatalf("oversized metadata: %d", r.Status)
	}
	// Metadata counts follow the patch.
	if n := e.must(200, "POST", "/threads/count", map[string]any{"metadata": map[string]any{"c": 3}}).Body; n != float64(1) {
		t.Fatalf("count by patched metadata: %v", n)
	}
	e.must(200, "PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"c": 4}})
	if n := e.must(200, "POST", "/threads/count", map[string]any{"metadata": map[string]any{"c": 3}}).Body; n != float64(0) {
		t.Fatalf("count by old metadata: %v", n)
	}

	e.must(204, "DELETE", "/threads/"+id, nil)
	if r := e.do("GET", "/threads/"+id, nil); r.Status != 404 {
		t.Fatalf("after delete: %d", r.Status)
	}
	if r := e.do("DELETE", "/threads/"+id, nil); r.Status != 404 {
		t.Fatalf("second delete: %d", r.Status)
	}
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(0) {
		t.Fatalf("count after delete: %v", n)
	}
	if n := e.must(200, "POST", "/threads/count", map[string]any{"metadata": map[string]any{"a": 1}}).Body; n != float64(0) {
		t.Fatalf("pair count after delete: %v", n)
	}
	if n := e.st.count("thrm#"); n != 0 {
		t.Fatalf("%d pair members left", n)
	}
}

func TestTTL(t *testing.T) {
	e := newEnv(t)
	g := map[string]any{"graph_id": "agent"}
	del := e.create(map[string]any{"metadata": g, "ttl": 1, "supersteps": docsSupersteps()})
	keep := e.create(map[string]any{"metadata": g, "ttl": map[string]any{"strategy": "keep_latest", "ttl": 2}, "supersteps": docsSupersteps()})
	plain := e.create(map[string]any{"metadata": g})
	did, kid := str(del, "thread_id"), str(keep, "thread_id")
	got := e.must(200, "GET", "/threads/"+kid+"?include=ttl", nil).M()
	if str(got, "ttl", "strategy") != "keep_latest" || num(got, "ttl", "ttl_minutes") != 2 || str(got, "ttl", "expires_at") == "" {
		t.Fatalf("ttl: %v", got["ttl"])
	}
	// A state write renews the TTL.
	e.clock.advance(50 * time.Second)
	e.say(did, "call_model", "still here")
	e.clock.advance(30 * time.Second)
	if r := e.do("GET", "/threads/"+did, nil); r.Status != 200 {
		t.Fatalf("renewed thread expired: %d", r.Status)
	}
	e.clock.advance(40 * time.Second)
	// Expired: gone for every reader before any sweep.
	if r := e.do("GET", "/threads/"+did, nil); r.Status != 404 {
		t.Fatalf("expired thread: %d", r.Status)
	}
	if r := e.do("POST", "/threads/"+did+"/copy", nil); r.Status != 409 {
		t.Fatalf("copy of an expired thread: %d", r.Status)
	}
	for _, id := range pageIDs(e.must(200, "POST", "/threads/search", map[string]any{"limit": 100})) {
		if id == did {
			t.Fatal("search returned an expired thread")
		}
	}
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(2) {
		t.Fatalf("count with an expired thread: %v", n)
	}
	// The keep_latest thread is not hidden; the sweeper prunes it.
	e.clock.advance(time.Minute)
	before := e.historyIDs(kid)
	st := e.must(200, "GET", "/threads/"+kid+"/state", nil).M()
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := e.historyIDs(kid)
	if len(before) != 3 || !reflect.DeepEqual(after, before[:1]) {
		t.Fatalf("keep_latest: %v -> %v", before, after)
	}
	st2 := e.must(200, "GET", "/threads/"+kid+"/state", nil).M()
	if !reflect.DeepEqual(st2["values"], st["values"]) || st2["parent_checkpoint"] != nil {
		t.Fatalf("kept state: %v", st2)
	}
	if got := e.must(200, "GET", "/threads/"+kid+"?include=ttl", nil).M(); str(got, "ttl", "expires_at") <= str(keep, "created_at") {
		t.Fatal("keep_latest TTL did not start over")
	}
	// Swept: the deleted thread's items are gone, and an expired id may be
	// reused at once.
	if r := e.do("GET", "/threads/"+str(plain, "thread_id"), nil); r.Status != 200 {
		t.Fatal("a thread without TTL was swept")
	}
	e.create(map[string]any{"thread_id": did})
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(3) {
		t.Fatalf("count after sweep and reuse: %v", n)
	}
	// Patch sets a TTL on a thread that had none.
	e.must(200, "PATCH", "/threads/"+str(plain, "thread_id"), map[string]any{"ttl": map[string]any{"ttl": 0.5}})
	e.clock.advance(time.Minute)
	if r := e.do("GET", "/threads/"+str(plain, "thread_id"), nil); r.Status != 404 {
		t.Fatalf("patched TTL: %d", r.Status)
	}
}

func TestLargeState(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("0123456789abcdef", 2<<20/16) // 2 MB
	th := e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": []any{
		map[string]any{"updates": []any{map[string]any{"as_node": "__start__", "values": map[string]any{"doc": big, "messages": []any{"hi"}}}}},
	}})
	id := str(th, "thread_id")
	if get(th, "values", "doc") != big {
		t.Fatal("create response lost the large value")
	}
	e.say(id, "agent", "answer")
	st := e.must(200, "GET", "/threads/"+id+"/state", nil).M()
	if get(st, "values", "doc") != big || len(get(st, "values", "messages").([]any)) != 2 {
		t.Fatal("large state not read back")
	}
	if get(e.must(200, "GET", "/threads/"+id, nil).M(), "values", "doc") != big {
		t.Fatal("thread values not read back")
	}
	hist := e.must(200, "POST", "/threads/"+id+"/history", nil).L()
	if len(hist) != 2 || get(hist[1], "values", "doc") != big {
		t.Fatal("large history")
	}
	cp := str(e.must(200, "POST", "/threads/"+id+"/copy", nil).M(), "thread_id")
	if get(e.must(200, "GET", "/threads/"+cp+"/state", nil).M(), "values", "doc") != big {
		t.Fatal("copy of large state")
	}
	r := e.must(200, "POST", "/threads/search", map[string]any{"values": map[string]any{"doc": big}, "select": []any{"thread_id"}})
	if len(r.L()) != 2 {
		t.Fatalf("values search over large state: %d", len(r.L()))
	}
	if n := countBlobs(t, e.bucket); n == 0 {
		t.Fatal("no checkpoint went to blob storage")
	}
	e.must(204, "DELETE", "/threads/"+id, nil)
	e.must(204, "DELETE", "/threads/"+cp, nil)
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countBlobs(t, e.bucket); n != 0 {
		t.Fatalf("%d blobs left after deleting every thread", n)
	}
}

func countBlobs(t *testing.T, b blobs.Bucket) int {
	t.Helper()
	n := 0
	if err := b.List(context.Background(), "threads/", func(string, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPurgeDeployment(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("z", 600<<10)
	var ids []string
	for i := 0; i < 5; i++ {
		th := e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent", "i": i}, "ttl": 60, "supersteps": []any{
			map[string]any{"updates": []any{map[string]any{"as_node": "a", "values": map[string]any{"doc": big}}}}}})
		ids = append(ids, str(th, "thread_id"))
	}
	e.must(200, "POST", "/threads/"+ids[0]+"/copy", nil)
	keep := str(e.call(e.key, "POST", "/deployments/"+e.dep2+"/threads", map[string]any{"metadata": map[string]any{"i": 1}}).M(), "thread_id")
	if err := e.svc.PurgeDeployment(context.Background(), e.dep); err != nil {
		t.Fatal(err)
	}
	// Only the other deployment's thread keeps a chain (empty: one item).
	if n := e.st.count("thrc#"); n != 1 {
		t.Errorf("%d chain items after purge: %v", n, e.st.list("thrc#"))
	}
	for _, prefix := range []string{"thr#" + e.dep, "thrm#" + e.dep, "thrn#" + e.dep, "thrgc"} {
		if n := e.st.count(prefix); n != 0 {
			t.Errorf("%d items under %s after purge: %v", n, prefix, e.st.list(prefix))
		}
	}
	if n := countBlobs(t, e.bucket); n != 0 {
		t.Errorf("%d blobs after purge", n)
	}
	if r := e.call(e.key, "GET", "/deployments/"+e.dep2+"/threads/"+keep, nil); r.Status != 200 {
		t.Fatal("purge touched another deployment")
	}
}

func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t)
	id := str(e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}}), "thread_id")
	const writers = 12
	var wg sync.WaitGroup
	codes := make([]int, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = e.do("POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{"m"}}}).Status
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
		default:
			t.Fatalf("concurrent update answered %d", c)
		}
	}
	hist := e.historyIDs(id)
	msgs := get(e.must(200, "GET", "/threads/"+id, nil).M(), "values", "messages").([]any)
	if len(hist) != ok || len(msgs) != ok || ok == 0 {
		t.Fatalf("%d updates succeeded, %d checkpoints, %d messages", ok, len(hist), len(msgs))
	}
	// Each checkpoint's parent is the one before: no lost update.
	states := e.must(200, "POST", "/threads/"+id+"/history", map[string]any{"limit": 100}).L()
	for i := 0; i+1 < len(states); i++ {
		if str(states[i], "parent_checkpoint_id") != str(states[i+1], "checkpoint_id") {
			t.Fatal("history forked under concurrency")
		}
	}

	// Concurrent creates of one id: one wins, the rest get 409.
	tid := uuid.NewString()
	created := make([]int, 8)
	for i := range created {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i] = e.do("POST", "/threads", map[string]any{"thread_id": tid}).Status
		}()
	}
	wg.Wait()
	wins := 0
	for _, c := range created {
		if c == http.StatusOK {
			wins++
		} else if c != http.StatusConflict {
			t.Fatalf("concurrent create answered %d", c)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creates of one id succeeded", wins)
	}
	// Concurrent copies and deletes of one source never break a copy.
	src := str(e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": docsSupersteps()}), "thread_id")
	copies := make([]string, 6)
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do("POST", "/threads/"+src+"/copy", nil)
			if r.Status == 200 {
				copies[i] = str(r.M(), "thread_id")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.do("DELETE", "/threads/"+src, nil)
	}()
	wg.Wait()
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if c != "" && len(e.historyIDs(c)) != 3 {
			t.Fatalf("copy %s lost checkpoints", c)
		}
	}
}

// The largest ttl is accepted and expires_at agrees with ttl_minutes; a
// larger one (1e20 minutes was accepted, and expires_at stopped at 146
// years) is a 422 that changes nothing, on create and on PATCH.
func TestTTLBounds(t *testing.T) {
	const maxTTL = 100 * 365 * 24 * 60 // threads.MaxTTLMinutes
	e := newEnv(t)
	th := e.create(map[string]any{"ttl": maxTTL})
	id := str(th, "thread_id")
	got := e.must(200, "GET", "/threads/"+id+"?include=ttl", nil).M()
	exp, err := time.Parse(time.RFC3339Nano, str(got, "ttl", "expires_at"))
	if err != nil {
		t.Fatal(err)
	}
	created, _ := time.Parse(time.RFC3339Nano, str(th, "created_at"))
	want := time.Duration(maxTTL) * time.Minute
	if d := exp.Sub(created); d < want-time.Second || d > want+time.Second || num(got, "ttl", "ttl_minutes") != maxTTL {
		t.Fatalf("expires_at %s is %s after creation, ttl_minutes %v", exp, d, got["ttl"])
	}
	for _, ttl := range []any{1e20, 1e300, maxTTL + 1, map[string]any{"strategy": "delete", "ttl": 1e20}} {
		if r := e.do("PATCH", "/threads/"+id, map[string]any{"ttl": ttl}); r.Status != 422 {
			t.Fatalf("PATCH ttl %v: %d %s", ttl, r.Status, r.Raw)
		}
	}
	if after := e.must(200, "GET", "/threads/"+id+"?include=ttl", nil).M(); str(after, "ttl", "expires_at") != str(got, "ttl", "expires_at") {
		t.Fatalf("a refused ttl changed the thread: %v", after["ttl"])
	}
}
