package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Update's Add is atomic, and NumBelow caps a counter exactly under
// concurrency (the rate-limit pattern).
func testCounters(t *testing.T, s store.Store) {
	const workers, each = 8, 10
	k := key("n", "hits")
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if _, err := s.Update(ctx, store.Update{Key: k, Add: map[string]int64{"hits": 1, "bytes": 10}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	g := get(t, s, k)
	if g.Nums["hits"] != workers*each || g.Nums["bytes"] != 10*workers*each || g.Version != workers*each {
		t.Fatalf("lost increments: %s", show(g))
	}

	const limit = 17
	var ok, refused atomic.Int64
	lk := key("n", "limited")
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				_, err := s.Update(ctx, store.Update{Key: lk, Add: map[string]int64{"n": 1}, Cond: store.NumBelow("n", limit)})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrConditionFailed):
					refused.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != limit || refused.Load() != workers*4-limit {
		t.Fatalf("NumBelow(%d): %d applied, %d refused", limit, ok.Load(), refused.Load())
	}
	if g := get(t, s, lk); g.Nums["n"] != limit {
		t.Fatalf("counter ended at %d", g.Nums["n"])
	}
	// A negative delta through Add, and NumBelow on a decremented counter.
	update(t, s, store.Update{Key: lk, Add: map[string]int64{"n": -limit}})
	if g := update(t, s, store.Update{Key: lk, Add: map[string]int64{"n": 1}, Cond: store.NumBelow("n", 1)}); g.Nums["n"] != 1 {
		t.Fatalf("after decrement: %s", show(g))
	}
}

// N goroutines doing read-modify-write with a version condition end with
// exactly N applied changes, through Put and through Update.
func testConcurrentVersionedUpdates(t *testing.T, s store.Store) {
	const n = 16
	for _, via := range []string{"put", "update"} {
		k := key("rmw", via)
		put(t, s, store.Item{Key: k, Data: []byte("0")}, store.Condition{})
		var wg sync.WaitGroup
		var conflicts atomic.Int64
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for attempt := 0; attempt < 10*n; attempt++ {
					it, err := s.Get(ctx, k)
					if err != nil {
						t.Error(err)
						return
					}
					v, err := strconv.Atoi(string(it.Data))
					if err != nil {
						t.Errorf("payload %q: %v", it.Data, err)
						return
					}
					next := []byte(strconv.Itoa(v + 1))
					if via == "put" {
						it.Data = next
						_, err = s.Put(ctx, it, store.HasVersion(it.Version))
					} else {
						_, err = s.Update(ctx, store.Update{Key: k, SetData: next, Cond: store.HasVersion(it.Version)})
					}
					if err == nil {
						return
					}
					if !errors.Is(err, store.ErrConditionFailed) {
						t.Error(err)
						return
					}
					conflicts.Add(1)
				}
				t.Error("no progress after many attempts")
			}()
		}
		wg.Wait()
		g := get(t, s, k)
		if string(g.Data) != strconv.Itoa(n) || g.Version != n+1 {
			t.Fatalf("%s: %d writers left %q at v%d (lost updates)", via, n, g.Data, g.Version)
		}
		t.Logf("%s: %d version conflicts retried", via, conflicts.Load())
	}
}

// Paging while other goroutines insert: no item is returned twice, the
// order holds across pages, and no item that existed before the scan
// started is skipped. Both on the base table and on an index.
func testCursorUnderConcurrentInserts(t *testing.T, s store.Store) {
	const total = 120
	mk := func(i int) store.Item {
		sk := fmt.Sprintf("%04d", i)
		it := item("ci", sk, "")
		it.Indexes = map[string]store.IndexKey{"gsi4": {PK: "ci-ix", SK: "s" + sk}}
		return it
	}
	for i := 0; i < total; i += 2 {
		put(t, s, mk(i), store.Condition{})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; i < total; i += 2 {
			if _, err := s.Put(ctx, mk(i), store.Condition{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for _, q := range []store.Query{
		{PK: "ci", Limit: 7},
		{PK: "ci", Limit: 5, Desc: true},
		{Index: "gsi4", PK: "ci-ix", Limit: 6},
		{Index: "gsi4", PK: "ci-ix", Limit: 4, Desc: true},
	} {
		seen := map[string]bool{}
		prev := ""
		for _, it := range queryAll(t, s, q) {
			if seen[it.SK] {
				t.Fatalf("%+v: %s returned twice", q, it.SK)
			}
			if prev != "" && (it.SK < prev) != q.Desc {
				t.Fatalf("%+v: %s after %s", q, it.SK, prev)
			}
			seen[it.SK], prev = true, it.SK
		}
		for i := 0; i < total; i += 2 {
			if !seen[fmt.Sprintf("%04d", i)] {
				t.Fatalf("%+v: skipped %04d", q, i)
			}
		}
	}
	wg.Wait()
}
