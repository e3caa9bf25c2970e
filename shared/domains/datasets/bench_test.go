package datasets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

// versioned builds a dataset of 100 examples and then edits them in turn
// until it has the given number of versions; it returns the service, its
// counting store, the dataset and every version's timestamp (oldest
// first).
func versioned(b *testing.B, versions int) (*datasets.Service, *countingStore, string, []time.Time) {
	dir := b.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "dsbench"); err == nil {
			dir = d
			b.Cleanup(func() { _ = os.RemoveAll(d) })
		}
	}
	st, err := boltstore.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st}
	svc, _ := datasets.New(datasets.Options{Store: cs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	const ws = "bench-ws"
	d, err := svc.CreateDataset(ctx, ws, datasets.CreateDataset{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var news []datasets.NewExample
	for i := range 100 {
		news = append(news, datasets.NewExample{Inputs: json.RawMessage(fmt.Sprintf(`{"question": "q%d", "context": "some text of an ordinary size for an example input"}`, i)),
			Outputs: json.RawMessage(`{"answer": "a"}`)})
	}
	exs, err := svc.CreateExamples(ctx, ws, d.ID, news)
	if err != nil {
		b.Fatal(err)
	}
	vs, _ := svc.ListVersions(ctx, ws, d.ID, 100, 0)
	for i := len(vs); i < versions; i++ {
		ex := exs[i%len(exs)]
		_, err := svc.UpdateExamples(ctx, ws, d.ID, []datasets.ExamplePatch{{ID: ex.ID, Outputs: json.RawMessage(fmt.Sprintf(`{"answer": "a%d"}`, i))}})
		if err != nil {
			b.Fatal(err)
		}
	}
	var all []time.Time
	for off := 0; ; off += 100 {
		page, err := svc.ListVersions(ctx, ws, d.ID, 100, off)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range page {
			all = append([]time.Time{v.AsOf}, all...)
		}
		if len(page) < 100 {
			break
		}
	}
	if len(all) != versions {
		b.Fatalf("%d versions, want %d", len(all), versions)
	}
	return svc, cs, d.ID, all
}

// BenchmarkVersionRead reads all 100 examples of a dataset as of its first
// complete version (every later version is history after it), of its
// middle version, and of its latest, with 10 and 1,000 versions. items/op
// is the store items read: it follows the examples returned, not the
// number of versions.
func BenchmarkVersionRead(b *testing.B) {
	for _, versions := range []int{10, 1000} {
		svc, cs, ds, vs := versioned(b, versions)
		first := 0
		for i, v := range vs {
			// The bulk load may take a few versions: the first complete one.
			n, _ := svc.ListExamples(context.Background(), "bench-ws", datasets.ExampleQuery{Dataset: ds, AsOf: v.Format(time.RFC3339Nano), Limit: 100})
			if len(n) == 100 {
				first = i
				break
			}
		}
		for _, c := range []struct {
			name string
			asOf string
		}{
			{"first", vs[first].Format(time.RFC3339Nano)},
			{"middle", vs[len(vs)/2].Format(time.RFC3339Nano)},
			{"latest", ""},
		} {
			b.Run(fmt.Sprintf("versions=%d/%s", versions, c.name), func(b *testing.B) {
				ctx := context.Background()
				cs.reads.Store(0)
				b.ResetTimer()
				for b.Loop() {
					out, err := svc.ListExamples(ctx, "bench-ws", datasets.ExampleQuery{Dataset: ds, AsOf: c.asOf, Limit: 100})
					if err != nil || len(out) != 100 {
						b.Fatalf("%d examples, %v", len(out), err)
					}
				}
				b.ReportMetric(float64(cs.reads.Load())/float64(b.N), "items/op")
			})
		}
		b.Run(fmt.Sprintf("versions=%d/one-example-first", versions), func(b *testing.B) {
			ctx := context.Background()
			exs, _ := svc.ListExamples(ctx, "bench-ws", datasets.ExampleQuery{Dataset: ds, Limit: 1})
			cs.reads.Store(0)
			b.ResetTimer()
			for b.Loop() {
				if _, err := svc.GetExample(ctx, "bench-ws", exs[0].ID, vs[first].Format(time.RFC3339Nano)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cs.reads.Load())/float64(b.N), "items/op")
		})
	}
}
