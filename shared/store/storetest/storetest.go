// Package storetest is the conformance suite of the store port: every
// adapter must pass Run. It is the definition of the port's semantics.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/store"
)

// Opener returns a fresh, empty store and a function that replaces its
// clock (for TTL tests).
type Opener func(t *testing.T) (store.Store, func(func() time.Time))

// Options adapt the suite to an adapter's environment.
type Options struct {
	// SkipTransactions skips the transaction tests (dynalite has no
	// TransactWriteItems; those run against minidyn instead).
	SkipTransactions bool
}

var ctx = context.Background()

// Run runs the whole suite.
func Run(t *testing.T, open Opener, o Options) {
	t.Run("Conditions", func(t *testing.T) { testConditions(t, open) })
	t.Run("QueryRangesAndIndexes", func(t *testing.T) { testQueryRangesAndIndexes(t, open) })
	t.Run("CursorUnderConcurrentInserts", func(t *testing.T) { testCursorUnderConcurrentInserts(t, open) })
	if !o.SkipTransactions {
		t.Run("TransactionsAllOrNothing", func(t *testing.T) { testTransactionsAllOrNothing(t, open) })
	}
	t.Run("TTL", func(t *testing.T) { testTTL(t, open) })
	t.Run("ItemSizeLimit", func(t *testing.T) { testItemSizeLimit(t, open) })
	t.Run("ConcurrentVersionedUpdates", func(t *testing.T) { testConcurrentVersionedUpdates(t, open) })
}

func item(pk, sk, data string) store.Item {
	return store.Item{Key: store.Key{PK: pk, SK: sk}, Data: []byte(data)}
}

func testConditions(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	it, err := s.Put(ctx, item("p", "a", "1"), store.NotExists())
	if err != nil || it.Version != 1 {
		t.Fatalf("create: %v %+v", err, it)
	}
	if _, err := s.Put(ctx, item("p", "a", "2"), store.NotExists()); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := s.Put(ctx, item("p", "a", "2"), store.HasVersion(7)); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("wrong version: %v", err)
	}
	it, err = s.Put(ctx, item("p", "a", "2"), store.HasVersion(1))
	if err != nil || it.Version != 2 {
		t.Fatalf("versioned put: %v %+v", err, it)
	}
	if _, err := s.Update(ctx, store.Update{Key: store.Key{PK: "p", SK: "b"}, Add: map[string]int64{"c": 1}, Cond: store.Exists()}); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("update missing: %v", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := s.Update(ctx, store.Update{Key: store.Key{PK: "p", SK: "c"}, Add: map[string]int64{"n": 1}, Cond: store.NumBelow("n", 2)}); (i < 2) != (err == nil) {
			t.Fatalf("counter %d: %v", i, err)
		}
	}
	if err := s.Delete(ctx, store.Key{PK: "p", SK: "a"}, store.HasVersion(1)); !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("delete wrong version: %v", err)
	}
	if err := s.Delete(ctx, store.Key{PK: "p", SK: "a"}, store.HasVersion(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, store.Key{PK: "p", SK: "a"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted: %v", err)
	}
	if _, err := s.Get(ctx, store.Key{PK: "", SK: "a"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := s.Query(ctx, store.Query{PK: "p", Index: "gsi9"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("unknown index: %v", err)
	}
	if _, err := s.Query(ctx, store.Query{PK: "p", Cursor: "!!"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}
}

func keys(p store.Page) string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.SK)
	}
	return strings.Join(out, ",")
}

func testQueryRangesAndIndexes(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	for _, sk := range []string{"a", "ab", "abc", "b", "b\x00", "c"} {
		it := item("p", sk, sk)
		it.Indexes = map[string]store.IndexKey{"gsi2": {PK: "ix", SK: "k#" + sk}}
		if _, err := s.Put(ctx, it, store.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, item("pp", "a", ""), store.Condition{}); err != nil { // a partition that shares a prefix
		t.Fatal(err)
	}
	cases := []struct {
		c         store.SKCond
		asc, desc string
	}{
		{store.SKCond{}, "a,ab,abc,b,b\x00,c", "c,b\x00,b,abc,ab,a"},
		{store.SKCond{Op: store.SKEqual, A: "ab"}, "ab", "ab"},
		{store.SKCond{Op: store.SKBeginsWith, A: "ab"}, "ab,abc", "abc,ab"},
		{store.SKCond{Op: store.SKBetween, A: "ab", B: "b"}, "ab,abc,b", "b,abc,ab"},
		{store.SKCond{Op: store.SKLess, A: "b"}, "a,ab,abc", "abc,ab,a"},
		{store.SKCond{Op: store.SKLessEq, A: "b"}, "a,ab,abc,b", "b,abc,ab,a"},
		{store.SKCond{Op: store.SKGreater, A: "b"}, "b\x00,c", "c,b\x00"},
		{store.SKCond{Op: store.SKGreaterEq, A: "b"}, "b,b\x00,c", "c,b\x00,b"},
	}
	for _, c := range cases {
		for _, desc := range []bool{false, true} {
			p, err := s.Query(ctx, store.Query{PK: "p", SK: c.c, Desc: desc})
			if err != nil {
				t.Fatal(err)
			}
			want := c.asc
			if desc {
				want = c.desc
			}
			if keys(p) != want || p.Next != "" {
				t.Errorf("%+v desc=%v: got %q next=%q want %q", c.c, desc, keys(p), p.Next, want)
			}
		}
	}
	p, err := s.Query(ctx, store.Query{Index: "gsi2", PK: "ix", SK: store.SKCond{Op: store.SKBeginsWith, A: "k#a"}, Desc: true})
	if err != nil || keys(p) != "abc,ab,a" {
		t.Fatalf("index query: %q %v", keys(p), err)
	}
	// Moving an item in an index removes its old entry.
	if _, err := s.Update(ctx, store.Update{Key: store.Key{PK: "p", SK: "a"}, SetIndexes: map[string]store.IndexKey{"gsi2": {PK: "other", SK: "x"}}}); err != nil {
		t.Fatal(err)
	}
	p, _ = s.Query(ctx, store.Query{Index: "gsi2", PK: "ix"})
	if strings.HasPrefix(keys(p), "a,") {
		t.Fatalf("stale index entry: %q", keys(p))
	}
}

func testCursorUnderConcurrentInserts(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	for i := 0; i < 200; i += 2 {
		if _, err := s.Put(ctx, item("p", fmt.Sprintf("%04d", i), ""), store.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i < 200; i += 2 {
			_, _ = s.Put(ctx, item("p", fmt.Sprintf("%04d", i), ""), store.Condition{})
		}
	}()
	for _, desc := range []bool{false, true} {
		seen := map[string]bool{}
		prev := ""
		q := store.Query{PK: "p", Limit: 7, Desc: desc}
		for {
			p, err := s.Query(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range p.Items {
				if seen[it.SK] {
					t.Fatalf("repeated %s", it.SK)
				}
				if prev != "" && (it.SK < prev) != desc {
					t.Fatalf("out of order: %s after %s", it.SK, prev)
				}
				seen[it.SK], prev = true, it.SK
			}
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		for i := 0; i < 200; i += 2 { // items present before the scan are never skipped
			if !seen[fmt.Sprintf("%04d", i)] {
				t.Fatalf("skipped %04d", i)
			}
		}
	}
	<-done
}

func testTransactionsAllOrNothing(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	if _, err := s.Put(ctx, item("t", "exists", ""), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	err := s.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: item("t", "new", ""), Cond: store.NotExists()},
		{Kind: store.OpPut, Item: item("t", "exists", ""), Cond: store.NotExists()},
	})
	var tce *store.TxConditionError
	if !errors.As(err, &tce) || tce.Index != 1 || !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("want condition failure at 1: %v", err)
	}
	if _, err := s.Get(ctx, store.Key{PK: "t", SK: "new"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal("partial transaction applied")
	}
	err = s.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: item("t", "new", ""), Cond: store.NotExists()},
		{Kind: store.OpDelete, Key: store.Key{PK: "t", SK: "exists"}, Cond: store.Exists()},
		{Kind: store.OpUpdate, Update: store.Update{Key: store.Key{PK: "t", SK: "ctr"}, Add: map[string]int64{"n": 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, store.Key{PK: "t", SK: "ctr"}); err != nil || it.Nums["n"] != 5 {
		t.Fatalf("update in tx: %v %+v", err, it)
	}
	if err := s.Transact(ctx, []store.TxOp{{Kind: store.OpCheck, Key: store.Key{PK: "t", SK: "new"}}, {Kind: store.OpCheck, Key: store.Key{PK: "t", SK: "new"}}}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("duplicate key: %v", err)
	}
}

func testTTL(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	now := time.Now()
	setClock(func() time.Time { return now })
	it := item("x", "a", "")
	it.ExpiresAt = now.Add(time.Minute)
	it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i", SK: "a"}}
	if _, err := s.Put(ctx, it, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := s.Get(ctx, it.Key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired item returned: %v", err)
	}
	for _, q := range []store.Query{{PK: "x"}, {Index: "gsi1", PK: "i"}} {
		if p, _ := s.Query(ctx, q); len(p.Items) != 0 {
			t.Fatalf("expired item in query %+v", q)
		}
	}
	got, err := s.Put(ctx, item("x", "a", "new"), store.NotExists())
	if err != nil || got.Version != 1 {
		t.Fatalf("expired item should count as absent: %v %+v", err, got)
	}
	if p, _ := s.Query(ctx, store.Query{Index: "gsi1", PK: "i"}); len(p.Items) != 0 {
		t.Fatal("index entry of the expired item survived its replacement")
	}
}

func testItemSizeLimit(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	big := make([]byte, store.MaxItemSize-200)
	if _, err := s.Put(ctx, store.Item{Key: store.Key{PK: "b", SK: "ok"}, Data: big}, store.Condition{}); err != nil {
		t.Fatalf("just under the limit: %v", err)
	}
	big = make([]byte, store.MaxItemSize+1)
	if _, err := s.Put(ctx, store.Item{Key: store.Key{PK: "b", SK: "no"}, Data: big}, store.Condition{}); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

func testConcurrentVersionedUpdates(t *testing.T, open Opener) {
	s, setClock := open(t)
	_ = setClock
	k := store.Key{PK: "c", SK: "n"}
	if _, err := s.Put(ctx, store.Item{Key: k, Data: []byte("0")}, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := s.Get(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				var v int
				fmt.Sscan(string(it.Data), &v)
				it.Data = []byte(fmt.Sprint(v + 1))
				if _, err := s.Put(ctx, it, store.HasVersion(it.Version)); err == nil {
					return
				} else if !errors.Is(err, store.ErrConditionFailed) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	it, _ := s.Get(ctx, k)
	if string(it.Data) != fmt.Sprint(n) || it.Version != n+1 {
		t.Fatalf("lost updates: %s v%d", it.Data, it.Version)
	}
}
