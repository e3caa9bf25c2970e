package boltstore_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/storetest"
)

func BenchmarkGet(b *testing.B) {
	storetest.BenchGet(b, open(b, filepath.Join(b.TempDir(), "db")))
}

// BenchmarkPut is one writer's latency: each Put is durable (fsync'd)
// before it returns.
func BenchmarkPut(b *testing.B) {
	storetest.BenchPut(b, open(b, filepath.Join(b.TempDir(), "db")))
}

func BenchmarkQuery(b *testing.B) {
	storetest.BenchQuery(b, open(b, filepath.Join(b.TempDir(), "db")))
}

var benchPayload = []byte(`{"payload":"` + strings.Repeat("x", 186) + `"}`)

// concurrently runs b.N writes spread over writers goroutines and reports
// the throughput.
func concurrently(b *testing.B, writers int, write func(s store.Store, i int) error) {
	s := open(b, filepath.Join(b.TempDir(), "db"))
	b.Cleanup(func() { s.Close() })
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := write(s, int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
}

// BenchmarkPutConcurrent32 is the throughput of 32 goroutines creating
// items (NotExists), each durable before its Put returns.
func BenchmarkPutConcurrent32(b *testing.B) {
	concurrently(b, 32, func(s store.Store, i int) error {
		sk := fmt.Sprintf("%09d", i)
		_, err := s.Put(ctx, store.Item{Key: store.Key{PK: "bench", SK: sk}, Data: benchPayload,
			Indexes: map[string]store.IndexKey{"gsi1": {PK: "bench-ix", SK: sk}}}, store.NotExists())
		return err
	})
}

// BenchmarkTransactConcurrent32: 32 goroutines, each transaction creating
// an item and bumping a per-writer counter (the shape of a thread create).
func BenchmarkTransactConcurrent32(b *testing.B) {
	concurrently(b, 32, func(s store.Store, i int) error {
		sk := fmt.Sprintf("%09d", i)
		return s.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: store.Key{PK: "bench", SK: sk}, Data: benchPayload}, Cond: store.NotExists()},
			{Kind: store.OpUpdate, Update: store.Update{Key: store.Key{PK: "count", SK: fmt.Sprint(i % 32)}, Add: map[string]int64{"n": 1}}},
		})
	})
}
