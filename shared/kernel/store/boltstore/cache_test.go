package boltstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/store/storetest"
)

// The conformance suite runs on a store with the read cache (the default,
// TestConformance) and on one without: both must behave the same.
func TestConformanceWithoutCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := boltstore.OpenWith(filepath.Join(t.TempDir(), "db"), boltstore.Options{CacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Every kind of write replaces what a cached read returns: a Get after a
// write never sees what was there before it.
func TestCacheFollowsEveryWrite(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	k := store.Key{PK: "c", SK: "k"}
	want := func(step, data string, version int64) {
		t.Helper()
		for i := 0; i < 2; i++ { // the first read may fill, the second hits
			got, err := s.Get(ctx, k)
			d, v, derr := s.GetData(ctx, k) // the lean read agrees
			if data == "" {
				if !errors.Is(err, store.ErrNotFound) || !errors.Is(derr, store.ErrNotFound) {
					t.Fatalf("%s: want absent, got %v %q / %v %q", step, err, got.Data, derr, d)
				}
				continue
			}
			if err != nil || string(got.Data) != data || got.Version != version {
				t.Fatalf("%s: want %q v%d, got %v %q v%d", step, data, version, err, got.Data, got.Version)
			}
			if derr != nil || string(d) != data || v != version {
				t.Fatalf("%s: GetData: want %q v%d, got %v %q v%d", step, data, version, derr, d, v)
			}
		}
	}
	want("absent", "", 0)
	if _, err := s.Put(ctx, item("c", "k", "one"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	want("put", "one", 1)
	if _, err := s.Update(ctx, store.Update{Key: k, SetData: []byte("two")}); err != nil {
		t.Fatal(err)
	}
	want("update", "two", 2)
	if err := s.Transact(ctx, []store.TxOp{{Kind: store.OpUpdate, Update: store.Update{Key: k, SetData: []byte("three")}}}); err != nil {
		t.Fatal(err)
	}
	want("transact", "three", 3)
	// A failed transaction changes nothing, and the cache keeps agreeing.
	err := s.Transact(ctx, []store.TxOp{
		{Kind: store.OpUpdate, Update: store.Update{Key: k, SetData: []byte("lost")}},
		{Kind: store.OpCheck, Key: store.Key{PK: "c", SK: "none"}, Cond: store.Exists()},
	})
	if err == nil {
		t.Fatal("the transaction's check should fail")
	}
	want("failed transact", "three", 3)
	if err := s.Delete(ctx, k, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	want("delete", "", 0)
	// An item that expires, is read (and cached), is purged, and comes back.
	short := item("c", "k", "brief")
	short.ExpiresAt = time.Now().Add(50 * time.Millisecond)
	if _, err := s.Put(ctx, short, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	want("put with expiry", "brief", 1)
	time.Sleep(60 * time.Millisecond)
	want("expired", "", 0)
	if n, err := s.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purged %d: %v", n, err)
	}
	want("purged", "", 0)
	if _, err := s.Put(ctx, item("c", "k", "again"), store.NotExists()); err != nil {
		t.Fatal(err)
	}
	want("put again", "again", 1)
}

// Readers racing writers never see a version go backwards, and a writer
// reads at least its own write at once: a record read before a write
// committed is never put back in the cache after it.
func TestCacheNeverGoesBack(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	const keys, writers, readers, writes = 4, 4, 4, 150
	key := func(i int) store.Key { return store.Key{PK: "race", SK: fmt.Sprint(i % keys)} }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+readers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < writes; i++ {
				k := key(w + i)
				it, err := s.Update(ctx, store.Update{Key: k, Add: map[string]int64{"n": 1}})
				if err != nil {
					errs <- err
					return
				}
				got, err := s.Get(ctx, k)
				if err != nil || got.Version < it.Version {
					errs <- fmt.Errorf("writer %d wrote v%d of %s, then read v%d (%v)", w, it.Version, k.SK, got.Version, err)
					return
				}
			}
		}(w)
	}
	var rg sync.WaitGroup
	for r := 0; r < readers; r++ {
		rg.Add(1)
		go func(r int) {
			defer rg.Done()
			seen := make([]int64, keys)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.Get(ctx, key(i))
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil || got.Version < seen[i%keys] || got.Nums["n"] != got.Version {
					errs <- fmt.Errorf("reader %d: key %d went from v%d to v%d (n=%d, %v)", r, i%keys, seen[i%keys], got.Version, got.Nums["n"], err)
					return
				}
				seen[i%keys] = got.Version
			}
		}(r)
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	total := int64(0)
	for i := 0; i < keys; i++ {
		got, err := s.Get(ctx, key(i))
		if err != nil {
			t.Fatal(err)
		}
		total += got.Nums["n"]
	}
	if total != writers*writes {
		t.Fatalf("counted %d writes, made %d", total, writers*writes)
	}
}
