package threads

import (
	"fmt"
	"testing"
	"time"
)

func TestRendersKeepOnlyWhatMatches(t *testing.T) {
	r := newRenders(1 << 20)
	now := time.Now()
	k := renderID{renderThread, "dep", "t1"}
	r.put(k, []byte(`{"v":1}`), []byte("one"), time.Time{})
	if out, gone, ok := r.get(k, []byte(`{"v":1}`), now); !ok || gone || string(out) != "one" {
		t.Fatalf("same bytes: %q %v %v", out, gone, ok)
	}
	// Other bytes (a write, a delete and create again): not the kept answer.
	for _, src := range []string{`{"v":2}`, `{"v":1} `, ``} {
		if _, _, ok := r.get(k, []byte(src), now); ok {
			t.Fatalf("bytes %q answered from the cache", src)
		}
	}
	// Another thread, kind or deployment: no answer.
	for _, other := range []renderID{{renderThreadTTL, "dep", "t1"}, {renderThread, "dep2", "t1"}, {renderThread, "dep", "t2"}} {
		if _, _, ok := r.get(other, []byte(`{"v":1}`), now); ok {
			t.Fatalf("%q answered from another key's entry", other)
		}
	}
	// The same thread id in another deployment: its own entry, and each
	// deployment reads only its own.
	k2 := renderID{renderThread, "dep2", "t1"}
	r.put(k2, []byte(`{"v":1}`), []byte("other"), time.Time{})
	if out, _, ok := r.get(k2, []byte(`{"v":1}`), now); !ok || string(out) != "other" {
		t.Fatalf("dep2: %q %v", out, ok)
	}
	if out, _, ok := r.get(k, []byte(`{"v":1}`), now); !ok || string(out) != "one" {
		t.Fatalf("dep after dep2's put: %q %v", out, ok)
	}
	// A delete TTL that has run out: the thread reads as absent.
	r.put(k, []byte(`{"v":3}`), []byte("three"), now.Add(time.Minute))
	if _, gone, ok := r.get(k, []byte(`{"v":3}`), now); !ok || gone {
		t.Fatal("before the TTL")
	}
	if _, gone, ok := r.get(k, []byte(`{"v":3}`), now.Add(time.Minute)); !ok || !gone {
		t.Fatal("after the TTL the thread must read as absent")
	}
	// No cache: every read renders.
	var none *renders = newRenders(-1)
	none.put(k, []byte("x"), []byte("y"), time.Time{})
	if _, _, ok := none.get(k, []byte("x"), now); ok {
		t.Fatal("a disabled cache answered")
	}
}

func TestRendersStayWithinBudget(t *testing.T) {
	const budget = 64 << 10
	r := newRenders(budget)
	out := make([]byte, 500)
	for i := 0; i < 10000; i++ {
		r.put(renderID{renderState, "dep", fmt.Sprint(i)}, []byte(fmt.Sprint(i)), out, time.Time{})
	}
	total, n := 0, 0
	for i := range r.shards {
		sh := &r.shards[i]
		total += sh.bytes
		sum := 0
		n += len(sh.m)
		for k, e := range sh.m {
			sum += e.cost(k)
		}
		if sum != sh.bytes {
			t.Fatalf("shard %d counts %d bytes, holds %d", i, sh.bytes, sum)
		}
	}
	if total > budget || n < budget/len(out)/2 {
		t.Fatalf("%d bytes in %d entries for a budget of %d", total, n, budget)
	}
	// An answer over the size limit is not kept.
	big := make([]byte, maxRendered+1)
	r.put(renderID{renderState, "dep", "big"}, []byte("src"), big, time.Time{})
	if _, _, ok := r.get(renderID{renderState, "dep", "big"}, []byte("src"), time.Now()); ok {
		t.Fatal("an answer over maxRendered was kept")
	}
}

// TestRendersEvictAcrossKinds: when the cache is full of one kind of
// answer, the answers of another kind displace them. Once, eviction
// emptied the maps one kind after the other, so GET thread answers put
// after a run of state reads only ever displaced each other, and a GET
// run after a state run served mostly misses (twice the CPU per request).
func TestRendersEvictAcrossKinds(t *testing.T) {
	const budget = 256 << 10
	r := newRenders(budget)
	out := make([]byte, 400)
	count := func(kind byte) (n int) {
		for i := range r.shards {
			for k := range r.shards[i].m {
				if k.kind == kind {
					n++
				}
			}
		}
		return n
	}
	const threads = 2000 // more than fit: the budget holds about 500
	for i := 0; i < threads; i++ {
		r.put(renderID{renderState, "dep", fmt.Sprint(i)}, []byte("s"), out, time.Time{})
	}
	held := count(renderState)
	// A run of GETs over the same threads, each read putting its answer.
	for i := 0; i < threads; i++ {
		r.put(renderID{renderThread, "dep", fmt.Sprint(i)}, []byte("t"), out, time.Time{})
	}
	// Random eviction among all entries leaves the newer kind with well
	// over half of the room (the other kind keeps what survived).
	if got := count(renderThread); got < held/2 {
		t.Fatalf("%d thread answers kept against %d state answers before (now %d): state answers were not displaced", got, held, count(renderState))
	}
}
