package threads_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

// Benchmarks of the thread service on the local (bbolt) store. Reported
// in docs/threads.md. Writes on a disk directory pay bbolt's fsync per
// transaction; seeding 100,000 threads uses a tmpfs directory when there
// is one (/dev/shm), where fsync is free, so the seed takes seconds, not
// minutes. Reads are served from the page cache either way.

const benchDep = "0b3d6a4e-5c2f-4e8a-9d1b-7f6e5d4c3b2a"

// benchService opens a service on a bbolt store in a temporary directory:
// on disk, or on tmpfs when fast and /dev/shm exists.
func benchService(b *testing.B, fast bool) *threads.Service {
	b.Helper()
	dir := b.TempDir()
	if fast {
		if d, err := os.MkdirTemp("/dev/shm", "threads-bench-"); err == nil {
			dir = d
			b.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	st, bucket := openLocal(b, dir)
	svc, err := threads.New(threads.Options{Store: st, Blobs: bucket, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return svc
}

// openLocal opens the local store and blob folder in dir, closed when the
// test ends.
func openLocal(tb testing.TB, dir string) (*boltstore.Store, blobs.Bucket) {
	tb.Helper()
	st, err := boltstore.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	bucket, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
	if err != nil {
		tb.Fatal(err)
	}
	return st, bucket
}

func node(s string) *string { return &s }

// docsSteps is the docs example: __input__, a human message as __start__,
// an AI message as call_model.
func docsSteps() []threads.SuperstepIn {
	msg := func(typ, content string) map[string]any {
		return map[string]any{"messages": []any{map[string]any{"type": typ, "content": content}}}
	}
	return []threads.SuperstepIn{
		{Updates: []threads.UpdateIn{{Values: map[string]any{}, AsNode: node("__input__")}}},
		{Updates: []threads.UpdateIn{{Values: msg("human", "hello"), AsNode: node("__start__")}}},
		{Updates: []threads.UpdateIn{{Values: msg("ai", "Hello! How can I assist you today?"), AsNode: node("call_model")}}},
	}
}

// chatSteps is n supersteps of a constant-size state (the last-value
// channels "turn" and "text" overwritten by alternating nodes), so that
// costs measured against it depend on the number of checkpoints, not on
// the size of the state.
func chatSteps(n int) []threads.SuperstepIn {
	out := make([]threads.SuperstepIn, n)
	for i := range out {
		as := "__start__"
		if i%2 == 1 {
			as = "call_model"
		}
		out[i] = threads.SuperstepIn{Updates: []threads.UpdateIn{{AsNode: node(as),
			Values: map[string]any{"turn": i, "text": fmt.Sprintf("message %d", i)}}}}
	}
	return out
}

func mustCreate(b *testing.B, svc *threads.Service, in threads.CreateIn) string {
	b.Helper()
	th, err := svc.Create(context.Background(), benchDep, in)
	if err != nil {
		b.Fatal(err)
	}
	return th.ThreadID
}

func BenchmarkCreate(b *testing.B) {
	svc := benchService(b, false)
	ctx := context.Background()
	for b.Loop() {
		if _, err := svc.Create(ctx, benchDep, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent", "user": "u1"}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCreateSupersteps(b *testing.B) {
	svc := benchService(b, false)
	ctx := context.Background()
	for b.Loop() {
		if _, err := svc.Create(ctx, benchDep, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: docsSteps()}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	svc := benchService(b, false)
	id := mustCreate(b, svc, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: docsSteps()})
	ctx := context.Background()
	for b.Loop() {
		if _, err := svc.Get(ctx, benchDep, id, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetState(b *testing.B) {
	svc := benchService(b, false)
	id := mustCreate(b, svc, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: docsSteps()})
	ctx := context.Background()
	for b.Loop() {
		if _, err := svc.GetState(ctx, benchDep, id, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdateState(b *testing.B) {
	svc := benchService(b, false)
	id := mustCreate(b, svc, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: docsSteps()})
	ctx := context.Background()
	in := threads.UpdateStateIn{Update: threads.UpdateIn{AsNode: node("call_model"), Values: map[string]any{"topic": "x"}}}
	for b.Loop() {
		if _, err := svc.UpdateState(ctx, benchDep, id, in, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// searchSeed is 100,000 threads of one deployment, made once per run.
var searchSeed struct {
	once sync.Once
	svc  *threads.Service
	err  error
}

const seedThreads = 100_000

// seeded returns the service holding the 100,000 threads: metadata
// graph_id (agent, other), user (u0..u999: 100 threads each), parity (0,
// 1); every 10th thread has the docs example's state and a "topic" value
// (t0..t99: 100 threads each), every 7th is interrupted (an __input__
// superstep alone).
func seeded(b *testing.B) *threads.Service {
	searchSeed.once.Do(func() {
		// The store outlives this benchmark: later ones reuse it. The
		// process exit removes nothing in /dev/shm, so clean up here.
		dir, err := os.MkdirTemp("/dev/shm", "threads-seed-")
		if err != nil {
			dir, err = os.MkdirTemp("", "threads-seed-")
		}
		if err != nil {
			searchSeed.err = err
			return
		}
		st, err := boltstore.Open(filepath.Join(dir, "store.db"))
		if err != nil {
			searchSeed.err = err
			return
		}
		bucket, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
		if err != nil {
			searchSeed.err = err
			return
		}
		seedCleanup = func() { st.Close(); os.RemoveAll(dir) }
		svc, err := threads.New(threads.Options{Store: st, Blobs: bucket, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			searchSeed.err = err
			return
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for w := 0; w < runtime.GOMAXPROCS(0)+2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= seedThreads {
						return
					}
					in := threads.CreateIn{Metadata: map[string]any{
						"graph_id": []string{"agent", "other"}[i%2], "user": fmt.Sprintf("u%d", i%1000), "parity": i % 2,
					}}
					switch {
					case i%10 == 0:
						in.Supersteps = append(docsSteps(), threads.SuperstepIn{Updates: []threads.UpdateIn{{
							AsNode: node("call_model"), Values: map[string]any{"topic": fmt.Sprintf("t%d", (i/10)%100)}}}})
					case i%7 == 0:
						in.Supersteps = docsSteps()[:1]
					}
					if _, err := svc.Create(context.Background(), benchDep, in); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		searchSeed.svc, searchSeed.err = svc, <-errs
	})
	if searchSeed.err != nil {
		b.Fatal(searchSeed.err)
	}
	return searchSeed.svc
}

var seedCleanup = func() {}

func TestMain(m *testing.M) {
	code := m.Run()
	seedCleanup()
	os.Exit(code)
}

// BenchmarkSearch100k searches 100,000 threads with limit 10 and reports
// the items each search reads (items/op) and its plan.
func BenchmarkSearch100k(b *testing.B) {
	svc := seeded(b)
	cases := []struct {
		name string
		in   threads.SearchIn
	}{
		{"default", threads.SearchIn{}},
		{"created_at_asc", threads.SearchIn{SortBy: threads.SortCreatedAt}},
		{"thread_id_desc", threads.SearchIn{SortBy: threads.SortThreadID, Desc: true}},
		{"status_interrupted", threads.SearchIn{Filter: threads.Filter{Status: threads.StatusInterrupted}}},
		{"metadata_rare", threads.SearchIn{Filter: threads.Filter{Metadata: map[string]any{"user": "u42"}}}},
		{"metadata_common", threads.SearchIn{Filter: threads.Filter{Metadata: map[string]any{"graph_id": "agent"}}}},
		{"metadata_two_pairs", threads.SearchIn{Filter: threads.Filter{Metadata: map[string]any{"user": "u42", "parity": 0}}}},
		{"values", threads.SearchIn{Filter: threads.Filter{Values: map[string]any{"topic": "t42"}}}},
		{"offset_1000", threads.SearchIn{Offset: 1000}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			in := c.in
			in.Limit = 10
			if in.SortBy == "" {
				in.SortBy, in.Desc = threads.DefaultSortBy, threads.DefaultSortOrder == "desc"
			}
			var st threads.Stats
			for b.Loop() {
				st = threads.Stats{}
				res, err := svc.Search(threads.WithStats(context.Background(), &st), benchDep, in)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Threads) != 10 && res.Total >= 10+in.Offset {
					b.Fatalf("%d threads of %d", len(res.Threads), res.Total)
				}
			}
			b.ReportMetric(float64(st.ItemsRead), "items/op")
			b.Logf("plan %s, %d items read", st.Plan, st.ItemsRead)
		})
	}
}

// BenchmarkCount100k counts among the 100,000 threads.
func BenchmarkCount100k(b *testing.B) {
	svc := seeded(b)
	cases := []struct {
		name string
		f    threads.Filter
		want int
	}{
		{"all", threads.Filter{}, seedThreads},
		{"status", threads.Filter{Status: threads.StatusIdle}, -1},
		{"metadata", threads.Filter{Metadata: map[string]any{"user": "u42"}}, 100},
		{"metadata_two_pairs", threads.Filter{Metadata: map[string]any{"user": "u42", "parity": 0}}, 100},
		{"values", threads.Filter{Values: map[string]any{"topic": "t42"}}, 100},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var st threads.Stats
			for b.Loop() {
				st = threads.Stats{}
				n, err := svc.Count(threads.WithStats(context.Background(), &st), benchDep, c.f)
				if err != nil {
					b.Fatal(err)
				}
				if c.want >= 0 && n != c.want {
					b.Fatalf("count %d, want %d", n, c.want)
				}
			}
			b.ReportMetric(float64(st.ItemsRead), "items/op")
			b.Logf("plan %s, %d items read", st.Plan, st.ItemsRead)
		})
	}
}

// longThread makes a thread with n checkpoints (one per superstep).
func longThread(b *testing.B, svc *threads.Service, n int) string {
	return mustCreate(b, svc, threads.CreateIn{Metadata: map[string]any{"graph_id": "agent"}, Supersteps: chatSteps(n)})
}

func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("checkpoints=%d", n), func(b *testing.B) {
			svc := benchService(b, false)
			id := longThread(b, svc, n)
			ctx := context.Background()
			for b.Loop() {
				h, err := svc.History(ctx, benchDep, id, threads.HistoryIn{Limit: 10})
				if err != nil || len(h) != 10 {
					b.Fatal(len(h), err)
				}
			}
		})
	}
}

// BenchmarkCopy copies a thread of 10 and of 10,000 checkpoints: the cost
// is flat (copy-on-write: a head chain item, the new thread and a
// reference count, whatever the history).
func BenchmarkCopy(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("checkpoints=%d", n), func(b *testing.B) {
			svc := benchService(b, false)
			id := longThread(b, svc, n)
			ctx := context.Background()
			var last string
			for b.Loop() {
				th, err := svc.Copy(ctx, benchDep, id)
				if err != nil {
					b.Fatal(err)
				}
				last = th.ThreadID
			}
			// The last copy has the whole history.
			st, err := svc.GetState(ctx, benchDep, last, "")
			if err != nil || st.Metadata["step"] != n-1 {
				b.Fatalf("copy state step %v, want %d: %v", st.Metadata["step"], n-1, err)
			}
		})
	}
}
