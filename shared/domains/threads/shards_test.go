package threads_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/threads"
)

// Counts stay exact when a store written with one counter shard count is
// then written with another (a local data folder from before the
// embedded store's one shard): a thread counted in one shard is
// uncounted in another, and only the sum means anything.
func TestCountsAcrossCounterShardCounts(t *testing.T) {
	ctx := context.Background()
	st, bucket := openLocal(t, t.TempDir())
	service := func(shards int) *threads.Service {
		svc, err := threads.New(threads.Options{Store: st, Blobs: bucket, CounterShards: shards, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	const dep = "0a8a7c9e-5d8f-4c51-9d2e-3f5c1b2a4d60"
	eight, one := service(8), service(1)
	owner := func(i int) map[string]any { return map[string]any{"owner": fmt.Sprintf("u%d", i%3)} }
	// 30 threads counted in eight shards.
	var ids []string
	for i := 0; i < 30; i++ {
		th, err := eight.Create(ctx, dep, threads.CreateIn{Metadata: owner(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, th.ThreadID)
	}
	// Then, with one shard: 12 more, 10 of the first deleted, 5 moved to
	// another owner.
	for i := 30; i < 42; i++ {
		if _, err := one.Create(ctx, dep, threads.CreateIn{Metadata: owner(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[:10] {
		if err := one.Delete(ctx, dep, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[10:15] {
		if _, err := one.Patch(ctx, dep, id, threads.PatchIn{Metadata: map[string]any{"owner": "moved"}}); err != nil {
			t.Fatal(err)
		}
	}
	// What each filter should count, from the threads themselves.
	want := map[string]int{"": 32}
	for i := 10; i < 42; i++ {
		o := fmt.Sprintf("u%d", i%3)
		if i < 15 {
			o = "moved"
		}
		want[o]++
	}
	for _, svc := range []*threads.Service{one, eight} {
		for o, n := range want {
			f := threads.Filter{}
			if o != "" {
				f.Metadata = map[string]any{"owner": o}
			}
			got, err := svc.Count(ctx, dep, f)
			if err != nil || got != n {
				t.Errorf("count of owner %q: %d %v, want %d", o, got, err, n)
			}
			res, err := svc.Search(ctx, dep, threads.SearchIn{Filter: f, Limit: 100, SortBy: "created_at"})
			if err != nil || len(res.Threads) != n {
				t.Errorf("search of owner %q: %d threads %v, want %d", o, len(res.Threads), err, n)
			}
		}
	}
}
