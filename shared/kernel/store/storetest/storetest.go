// Package storetest is the conformance suite of the store port: every
// adapter must pass Run. The suite is the definition of the port's
// semantics; where store.go's comments and an adapter disagree, these
// tests decide.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Option adapts the suite to an adapter's environment.
type Option func(*config)

type config struct {
	skipTx bool
	skip   map[string]string // subtest name → reason
}

// SkipTransactions skips the transaction subtests, for an emulator that
// has no transactions (dynalite). The adapter must still pass them
// somewhere else (the DynamoDB adapter does against minidyn).
func SkipTransactions() Option { return func(c *config) { c.skipTx = true } }

// Skip skips the named subtests, for an emulator with a known bug that an
// adapter cannot and should not work around; reason says which. The adapter
// must still pass them somewhere else.
func Skip(reason string, subtests ...string) Option {
	return func(c *config) {
		if c.skip == nil {
			c.skip = map[string]string{}
		}
		for _, name := range subtests {
			c.skip[name] = reason
		}
	}
}

// Run runs the whole suite. open must return a fresh, empty store for each
// subtest; Run closes it when the subtest ends.
func Run(t *testing.T, open func(t *testing.T) store.Store, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
		tx   bool
	}{
		{"PutGetDelete", testPutGetDelete, false},
		{"KeysWithAnyByte", testKeysWithAnyByte, false},
		{"Conditions", testConditions, false},
		{"Update", testUpdate, false},
		{"UpdateClears", testUpdateClears, false},
		{"Counters", testCounters, false},
		{"QueryRanges", testQueryRanges, false},
		{"QueryIndexes", testQueryIndexes, false},
		{"Paging", testPaging, false},
		{"CursorAfterDeletedItem", testCursorAfterDeletedItem, false},
		{"CursorUnderConcurrentInserts", testCursorUnderConcurrentInserts, false},
		{"TTL", testTTL, false},
		{"TTLExpiresWhileStored", testTTLExpiresWhileStored, false},
		{"ItemSizeLimit", testItemSizeLimit, false},
		{"ConcurrentVersionedUpdates", testConcurrentVersionedUpdates, false},
		{"InvalidRequests", testInvalidRequests, false},
		{"Transactions", testTransactions, true},
		{"TransactionsInvalid", testTransactionsInvalid, true},
		{"TransactionsTTL", testTransactionsTTL, true},
	}
	known := map[string]bool{}
	for _, tc := range tests {
		known[tc.name] = true
	}
	for name := range c.skip {
		if !known[name] {
			t.Fatalf("storetest.Skip: no subtest %q", name)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tx && c.skipTx {
				t.Skip("this backend has no transactions (storetest.SkipTransactions)")
			}
			if reason, ok := c.skip[tc.name]; ok {
				t.Skip(reason)
			}
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

var ctx = context.Background()

func key(pk, sk string) store.Key { return store.Key{PK: pk, SK: sk} }

func item(pk, sk, data string) store.Item {
	return store.Item{Key: key(pk, sk), Data: []byte(data)}
}

func put(t *testing.T, s store.Store, it store.Item, c store.Condition) store.Item {
	t.Helper()
	out, err := s.Put(ctx, it, c)
	if err != nil {
		t.Fatalf("put %q/%q: %v", it.PK, it.SK, err)
	}
	return out
}

func get(t *testing.T, s store.Store, k store.Key) store.Item {
	t.Helper()
	it, err := s.Get(ctx, k)
	if err != nil {
		t.Fatalf("get %q/%q: %v", k.PK, k.SK, err)
	}
	return it
}

func update(t *testing.T, s store.Store, u store.Update) store.Item {
	t.Helper()
	it, err := s.Update(ctx, u)
	if err != nil {
		t.Fatalf("update %q/%q: %v", u.PK, u.SK, err)
	}
	return it
}

func absent(t *testing.T, s store.Store, k store.Key) {
	t.Helper()
	if it, err := s.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get %q/%q: want ErrNotFound, got %v (item %+v)", k.PK, k.SK, err, it)
	}
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: want %v, got %v", what, want, err)
	}
}

// sks lists the sort keys of items, comma-separated.
func sks(items []store.Item) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.SK
	}
	return strings.Join(out, ",")
}

// queryAll follows the cursor to the end and returns every item.
func queryAll(t *testing.T, s store.Store, q store.Query) []store.Item {
	t.Helper()
	var all []store.Item
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatalf("query %+v: the cursor never ends", q)
		}
		p, err := s.Query(ctx, q)
		if err != nil {
			t.Fatalf("query %+v: %v", q, err)
		}
		if q.Limit > 0 && len(p.Items) > q.Limit {
			t.Fatalf("query %+v: %d items over the limit", q, len(p.Items))
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		q.Cursor = p.Next
	}
}

// sameExpiry allows the second granularity of DynamoDB's TTL attribute: a
// stored expiry may be rounded up to the next whole second, never down.
func sameExpiry(got, want time.Time) bool {
	if want.IsZero() || got.IsZero() {
		return want.IsZero() == got.IsZero()
	}
	return !got.Before(want) && got.Sub(want) < time.Second
}

func sameNums(got, want map[string]int64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// liveIndexes drops the empty (absent) index keys, which are not stored.
func liveIndexes(m map[string]store.IndexKey) map[string]store.IndexKey {
	out := map[string]store.IndexKey{}
	for k, v := range m {
		if v.PK != "" {
			out[k] = v
		}
	}
	return out
}

func sameIndexes(got, want map[string]store.IndexKey) bool {
	got, want = liveIndexes(got), liveIndexes(want)
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// sameItem compares what the store keeps of an item (not its Version).
func sameItem(t *testing.T, what string, got, want store.Item) {
	t.Helper()
	if got.Key != want.Key || string(got.Data) != string(want.Data) || !sameNums(got.Nums, want.Nums) ||
		!sameIndexes(got.Indexes, want.Indexes) || !sameExpiry(got.ExpiresAt, want.ExpiresAt) {
		t.Fatalf("%s:\n got %s\nwant %s", what, show(got), show(want))
	}
}

func show(it store.Item) string {
	return fmt.Sprintf("{%q/%q v%d data=%q nums=%v idx=%v exp=%v}", it.PK, it.SK, it.Version, it.Data, it.Nums, liveIndexes(it.Indexes), it.ExpiresAt)
}
