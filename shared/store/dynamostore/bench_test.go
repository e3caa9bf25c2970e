package dynamostore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agentplane/agentplane/shared/store"
	"github.com/agentplane/agentplane/shared/store/dynamostore"
)

// Benchmarks against dynalite (scripts/emulators.sh): they measure the
// adapter plus a local emulator round trip, not DynamoDB's own latency.
func benchStore(b *testing.B) *dynamostore.Store {
	ep := os.Getenv("AGENTPLANE_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		b.Skip("AGENTPLANE_TEST_DYNAMODB_ENDPOINT not set (make bench starts the emulators)")
	}
	c := client(ep)
	table := fmt.Sprintf("bench%d", tables.Add(1))
	if err := dynamostore.CreateTable(context.Background(), c, table); err != nil {
		b.Fatal(err)
	}
	return dynamostore.New(c, table)
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := s.Put(ctx, store.Item{Key: store.Key{PK: "bench", SK: fmt.Sprintf("%06d", i)}, Data: []byte(`{"name":"x"}`)}, store.NotExists()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Get(ctx, store.Key{PK: "bench", SK: fmt.Sprintf("%06d", i%100)}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		it := store.Item{Key: store.Key{PK: "bench", SK: fmt.Sprintf("%09d", i)}, Data: []byte(`{"name":"x"}`),
			Indexes: map[string]store.IndexKey{"gsi1": {PK: "i", SK: fmt.Sprintf("%09d", i)}}}
		if _, err := s.Put(ctx, it, store.NotExists()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQuery10(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	for i := 0; i < 200; i++ {
		if _, err := s.Put(ctx, store.Item{Key: store.Key{PK: "bench", SK: fmt.Sprintf("%06d", i)}, Data: []byte(`{"name":"x"}`)}, store.Condition{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := s.Query(ctx, store.Query{PK: "bench", SK: store.SKCond{Op: store.SKGreaterEq, A: fmt.Sprintf("%06d", i%150)}, Limit: 10})
		if err != nil || len(p.Items) != 10 {
			b.Fatal(err, len(p.Items))
		}
	}
}
