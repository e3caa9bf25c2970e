package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// The benchmarks every adapter runs, so their numbers compare. Each takes a
// fresh store and closes it at the end. Items carry a 200-byte payload and
// one index entry, like a typical domain record.

var benchData = []byte(`{"payload":"` + strings.Repeat("x", 186) + `"}`)

func benchItem(i int) store.Item {
	sk := fmt.Sprintf("%08d", i)
	return store.Item{Key: store.Key{PK: "bench", SK: sk}, Data: benchData,
		Indexes: map[string]store.IndexKey{"gsi1": {PK: "bench-ix", SK: sk}}}
}

func benchSeed(b *testing.B, s store.Store, n int) {
	b.Helper()
	b.Cleanup(func() { s.Close() })
	for i := 0; i < n; i++ {
		if _, err := s.Put(ctx, benchItem(i), store.Condition{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchGet measures Get of existing items.
func BenchGet(b *testing.B, s store.Store) {
	const n = 500
	benchSeed(b, s, n)
	keys := make([]store.Key, n)
	for i := range keys {
		keys[i] = benchItem(i).Key
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, keys[i%n]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchPut measures conditional creates (NotExists) of new items (building
// each item is part of the loop).
func BenchPut(b *testing.B, s store.Store) {
	benchSeed(b, s, 0)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Put(ctx, benchItem(i), store.NotExists()); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchQuery measures a 10-item page of a sort-key range, on the base
// table and on an index.
func BenchQuery(b *testing.B, s store.Store) {
	const n = 500
	benchSeed(b, s, n)
	starts := make([]string, n-10)
	for i := range starts {
		starts[i] = benchItem(i).SK
	}
	for _, index := range []string{"", "gsi1"} {
		pk, name := "bench", "base"
		if index != "" {
			pk, name = "bench-ix", index
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := store.Query{Index: index, PK: pk, Limit: 10, SK: store.SKCond{Op: store.SKGreaterEq, A: starts[i%len(starts)]}}
				p, err := s.Query(ctx, q)
				if err != nil || len(p.Items) != 10 {
					b.Fatalf("%v: %d items", err, len(p.Items))
				}
				i++
			}
		})
	}
}
