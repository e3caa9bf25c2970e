package threads_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

// BenchmarkSearchScale is make bench-peer's search workload (metadata
// owner: one of 50 values, limit 10, created_at descending) and the
// default search, at several thread counts, to show the cost does not
// grow with the deployment. The threads have bench-peer's shape (graph_id,
// owner, a two-checkpoint state) and are seeded through the service on
// tmpfs. Sizes: AGENTPLANE_BENCH_SEARCH_SIZES (default 10000,100000;
// 1000000 takes about 15 minutes to seed on 2 cores).
func BenchmarkSearchScale(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("AGENTPLANE_BENCH_SEARCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("AGENTPLANE_BENCH_SEARCH_SIZES: %q", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("threads=%d", n), func(b *testing.B) {
			svc := scaleSeed(b, n)
			ctx := context.Background()
			for _, c := range []struct {
				name string
				in   threads.SearchIn
			}{
				{"metadata_owner", threads.SearchIn{Filter: threads.Filter{Metadata: map[string]any{"owner": "user-7"}},
					SortBy: threads.SortCreatedAt, Desc: true, Limit: 10}},
				{"default", threads.SearchIn{SortBy: threads.DefaultSortBy, Desc: true, Limit: 10}},
			} {
				b.Run(c.name, func(b *testing.B) {
					var st threads.Stats
					for b.Loop() {
						st = threads.Stats{}
						res, err := svc.Search(threads.WithStats(ctx, &st), benchDep, c.in)
						if err != nil || len(res.Threads) != 10 {
							b.Fatal(len(res.Threads), err)
						}
					}
					b.ReportMetric(float64(st.ItemsRead), "items/op")
				})
			}
		})
	}
}

// scaleSeed makes n threads of bench-peer's shape in a fresh store.
func scaleSeed(b *testing.B, n int) *threads.Service {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "threads-scale-")
	if err != nil {
		dir = b.TempDir()
	} else {
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	st, err := boltstore.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	bucket, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
	if err != nil {
		b.Fatal(err)
	}
	svc, err := threads.New(threads.Options{Store: st, Blobs: bucket, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := 0; w < runtime.GOMAXPROCS(0)*8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || firstErr.Load() != nil {
					return
				}
				in := threads.CreateIn{
					Metadata: map[string]any{"graph_id": "agent", "owner": fmt.Sprintf("user-%d", i%50)},
					Supersteps: []threads.SuperstepIn{
						{Updates: []threads.UpdateIn{{Values: map[string]any{}, AsNode: node("__input__")}}},
						{Updates: []threads.UpdateIn{{AsNode: node("__start__"), Values: map[string]any{"messages": []any{
							map[string]any{"type": "human", "content": fmt.Sprintf("hello %d", i)}}}}}},
					},
				}
				if _, err := svc.Create(context.Background(), benchDep, in); err != nil {
					firstErr.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d threads in %s", n, time.Since(start).Round(time.Second))
	return svc
}
