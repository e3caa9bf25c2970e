package boltstore_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Many concurrent read-modify-write loops on one key, through Put, Update
// and Transact with a version condition: writes that share a commit see
// each other, so every applied change counts and none is lost.
func TestGroupCommitLosesNoUpdate(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	k := store.Key{PK: "rmw", SK: "counter"}
	if _, err := s.Put(ctx, store.Item{Key: k, Data: []byte("0")}, store.NotExists()); err != nil {
		t.Fatal(err)
	}
	const writers, each = 48, 5
	var applied, conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				it, err := s.Get(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := strconv.Atoi(string(it.Data))
				next := []byte(strconv.Itoa(n + 1))
				switch w % 3 {
				case 0:
					_, err = s.Put(ctx, store.Item{Key: k, Data: next}, store.HasVersion(it.Version))
				case 1:
					_, err = s.Update(ctx, store.Update{Key: k, SetData: next, Cond: store.HasVersion(it.Version)})
				default:
					// A transaction with a second key of its own.
					err = s.Transact(ctx, []store.TxOp{
						{Kind: store.OpUpdate, Update: store.Update{Key: k, SetData: next, Cond: store.HasVersion(it.Version)}},
						{Kind: store.OpUpdate, Update: store.Update{Key: store.Key{PK: "rmw", SK: "w" + strconv.Itoa(w)}, Add: map[string]int64{"n": 1}}},
					})
				}
				switch {
				case err == nil:
					applied.Add(1)
					done++
				case errors.Is(err, store.ErrConditionFailed):
					conflicts.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	it, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if applied.Load() != writers*each || string(it.Data) != strconv.Itoa(writers*each) || it.Version != writers*each+1 {
		t.Fatalf("%d applied, counter %q at v%d; want %d (lost updates)", applied.Load(), it.Data, it.Version, writers*each)
	}
	t.Logf("%d version conflicts retried", conflicts.Load())

	// Racing creates of one key: exactly one wins.
	var wins atomic.Int64
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Put(ctx, store.Item{Key: store.Key{PK: "race", SK: "one"}, Data: []byte("x")}, store.NotExists())
			switch {
			case err == nil:
				wins.Add(1)
			case !errors.Is(err, store.ErrConditionFailed):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d creates won", wins.Load())
	}
}

// A write that fails inside bbolt (a key longer than bbolt allows) while
// sharing a commit with others fails alone: the others are committed.
func TestGroupCommitIsolatesAFailingWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path)
	const writers = 40
	var wg sync.WaitGroup
	errs := make([]error, writers)
	huge := strings.Repeat("k", 40000) // under the item limit, over bbolt's key limit
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pk := "ok"
			if i%8 == 3 {
				pk = huge
			}
			_, errs[i] = s.Put(ctx, store.Item{Key: store.Key{PK: pk, SK: strconv.Itoa(i)}, Data: []byte("v")}, store.NotExists())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i%8 == 3) != (err != nil) {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	// Durable: still there after a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	for i := range writers {
		_, err := s.Get(ctx, store.Key{PK: "ok", SK: strconv.Itoa(i)})
		if (i%8 == 3) != errors.Is(err, store.ErrNotFound) {
			t.Errorf("item %d after reopen: %v", i, err)
		}
	}
}
