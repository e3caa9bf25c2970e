package storequeue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/queue"
)

// benchBody is a typical event: a small JSON payload.
var benchBody = []byte(`{"topic":"deployments.delete","payload":{"deployment_id":"0b8f3c2e-6a51-4c1e-9d0a-3f2b1c4d5e6f"}}`)

// BenchmarkSend is one sender's latency: each message is on disk before
// Send returns.
func BenchmarkSend(b *testing.B) {
	st := openStore(b, filepath.Join(b.TempDir(), "db"))
	b.Cleanup(func() { st.Close() })
	q := newQueue(b, st, "bench", queue.Options{})
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Send(context.Background(), benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

// send32 sends b.N messages from 32 goroutines.
func send32(b *testing.B, q queue.Sender) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := q.Send(context.Background(), benchBody); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkSendConcurrent32 is the throughput of 32 senders (their writes
// share fsyncs).
func BenchmarkSendConcurrent32(b *testing.B) {
	st := openStore(b, filepath.Join(b.TempDir(), "db"))
	b.Cleanup(func() { st.Close() })
	q := newQueue(b, st, "bench", queue.Options{})
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	send32(b, q)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkSendConsume is end-to-end throughput: 32 senders and a consumer
// running 8 handlers; it ends when every message has been handled and
// acknowledged.
func BenchmarkSendConsume(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("handlers=%d", conc), func(b *testing.B) {
			st := openStore(b, filepath.Join(b.TempDir(), "db"))
			b.Cleanup(func() { st.Close() })
			q := newQueue(b, st, "bench", queue.Options{Concurrency: conc})
			var handled atomic.Int64
			all := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			go func() {
				done <- q.Consume(ctx, func(context.Context, queue.Message) error {
					if handled.Add(1) == int64(b.N) {
						close(all)
					}
					return nil
				})
			}()
			send32(b, q)
			<-all
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
