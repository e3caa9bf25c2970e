package boltstore_test

import (
	"fmt"
	"testing"

	"github.com/agentplane/agentplane/shared/store"
)

func BenchmarkGet(b *testing.B) {
	s := openB(b)
	for i := 0; i < 1000; i++ {
		if _, err := s.Put(ctx, item("bench", fmt.Sprintf("%06d", i), `{"name":"x"}`), store.Condition{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Get(ctx, store.Key{PK: "bench", SK: fmt.Sprintf("%06d", i%1000)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	s := openB(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := item("bench", fmt.Sprintf("%09d", i), `{"name":"x"}`)
		it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i", SK: it.SK}}
		if _, err := s.Put(ctx, it, store.NotExists()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuery10(b *testing.B) {
	s := openB(b)
	for i := 0; i < 10000; i++ {
		it := item("bench", fmt.Sprintf("%06d", i), `{"name":"x"}`)
		it.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i", SK: it.SK}}
		if _, err := s.Put(ctx, it, store.Condition{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, index := range []string{"", "gsi1"} {
		pk := "bench"
		if index != "" {
			pk = "i"
		}
		b.Run("index="+index, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p, err := s.Query(ctx, store.Query{Index: index, PK: pk, SK: store.SKCond{Op: store.SKGreaterEq, A: fmt.Sprintf("%06d", i%9000)}, Limit: 10})
				if err != nil || len(p.Items) != 10 {
					b.Fatal(err, len(p.Items))
				}
			}
		})
	}
}
