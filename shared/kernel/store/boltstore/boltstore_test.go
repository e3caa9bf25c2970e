package boltstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/store/storetest"
)

var ctx = context.Background()

func item(pk, sk, data string) store.Item {
	return store.Item{Key: store.Key{PK: pk, SK: sk}, Data: []byte(data)}
}

func open(tb testing.TB, path string) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "db"))
	})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path)
	it := item("r", "a", "kept")
	it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i", SK: "a"}}
	if _, err := s.Put(ctx, it, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if got, err := s.Get(ctx, it.Key); err != nil || string(got.Data) != "kept" || got.Version != 1 {
		t.Fatalf("%v %+v", err, got)
	}
	if p, err := s.Query(ctx, store.Query{Index: "gsi1", PK: "i"}); err != nil || len(p.Items) != 1 {
		t.Fatalf("index after reopen: %v %+v", err, p)
	}
}

// Purge removes expired items physically (they were invisible already),
// with their index entries, and leaves live ones.
func TestPurgeRemovesExpiredItems(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := open(t, path)
	defer s.Close()
	for i, exp := range []time.Time{time.Now().Add(-time.Hour), time.Now().Add(-time.Second), time.Now().Add(time.Hour), {}} {
		it := item("p", string(rune('a'+i)), "")
		it.ExpiresAt = exp
		it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i", SK: it.SK}}
		if _, err := s.Put(ctx, it, store.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	// Rewriting an item moves its expiry entry; the old one must not purge it.
	later := time.Now().Add(time.Hour)
	if _, err := s.Update(ctx, store.Update{Key: store.Key{PK: "p", SK: "c"}, SetExpiresAt: &later}); err != nil {
		t.Fatal(err)
	}
	n, err := s.Purge(ctx)
	if err != nil || n != 2 {
		t.Fatalf("purged %d: %v", n, err)
	}
	if n, err := s.Purge(ctx); err != nil || n != 0 {
		t.Fatalf("second purge removed %d: %v", n, err)
	}
	for _, sk := range []string{"c", "d"} {
		if _, err := s.Get(ctx, store.Key{PK: "p", SK: sk}); err != nil {
			t.Fatalf("live item %s: %v", sk, err)
		}
	}
	if _, err := s.Get(ctx, store.Key{PK: "p", SK: "a"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if p, err := s.Query(ctx, store.Query{Index: "gsi1", PK: "i"}); err != nil || len(p.Items) != 2 {
		t.Fatalf("index after purge: %v %d items", err, len(p.Items))
	}
}

func TestCloseTwice(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// The free list is not written at commits (boltstore.go): a reopened file
// rebuilds it, so the pages freed before the close are used again rather
// than the file growing. Each close checkpoints the memory tables, so
// each fill reaches the file.
func TestReopenReusesFreedPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	fill := func(s *boltstore.Store, del bool) {
		for i := 0; i < 50; i++ {
			var ops []store.TxOp
			for j := 0; j < 50; j++ {
				k := store.Key{PK: "free", SK: fmt.Sprintf("%02d-%02d", i, j)}
				if del {
					ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: k})
				} else {
					ops = append(ops, store.TxOp{Kind: store.OpPut, Item: store.Item{Key: k, Data: bytes.Repeat([]byte("x"), 1000)}})
				}
			}
			if err := s.Transact(ctx, ops); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, del := range []bool{false, true} {
		s := open(t, path)
		fill(s, del)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	fill(s, false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	if after.Size() > before.Size() {
		t.Fatalf("the file grew from %d to %d bytes: the freed pages were not reused", before.Size(), after.Size())
	}
	if p, err := s.Query(ctx, store.Query{PK: "free", Limit: 1000}); err != nil || len(p.Items) != 1000 {
		t.Fatalf("after reopen: %v, %d items", err, len(p.Items))
	}
}

// CommitStats counts each commit, the writes in it and the bytes of its
// log record, and the checkpoints; a failed write counts nothing.
func TestCommitStats(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	if _, err := s.Put(ctx, item("s", "a", "1"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, item("s", "b", "2"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, item("s", "a", "3"), store.NotExists()); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatal(err)
	}
	st := s.CommitStats()
	// A record holds at least its header, the bucket's name, the key and
	// the value.
	if st.Commits != 2 || st.Writes != 2 || st.Bytes < int64(2*(8+len("items")+4)) || st.Checkpoints != 0 {
		t.Fatalf("%+v, want 2 commits of one write and no checkpoint yet", st)
	}
}
