package billing

import (
	"context"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/google/uuid"
)

type readCounter struct {
	store.Store
	items atomic.Int64
}

func (c *readCounter) Query(ctx context.Context, q store.Query) (store.Page, error) {
	p, err := c.Store.Query(ctx, q)
	c.items.Add(int64(len(p.Items)))
	return p, err
}

func benchService(b *testing.B) (*Service, *readCounter) {
	bs, err := boltstore.Open(filepath.Join(b.TempDir(), "db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bs.Close() })
	rc := &readCounter{Store: bs}
	s, err := New(Options{Store: rc})
	if err != nil {
		b.Fatal(err)
	}
	return s, rc
}

// BenchmarkUsageYear: a 366-day query (not aligned on months) of an
// organization with 10 workspaces and 2 metrics used every day.
func BenchmarkUsageYear(b *testing.B) {
	s, rc := benchService(b)
	ctx := context.Background()
	org := uuid.NewString()
	var wss []string
	for range 10 {
		wss = append(wss, uuid.NewString())
	}
	first := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	for d := first; d.Before(first.AddDate(1, 1, 0)); d = d.AddDate(0, 0, 1) {
		var ops []store.TxOp
		for _, ws := range wss {
			for _, m := range []string{MetricTraces, "deployment_runtime_seconds"} {
				add := map[string]int64{numQty: 1}
				day := d.Format("2006-01-02")
				ops = append(ops,
					store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: dayKey(org, day, m, ws), Add: add}},
					store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: monthKey(org, day[:7], m, ws), Add: add}})
			}
		}
		if err := s.st.Transact(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
	q := Query{OrganizationID: org, AllWorkspaces: true,
		StartingOn: time.Date(2024, 3, 17, 6, 0, 0, 0, time.UTC), EndingBefore: time.Date(2025, 3, 17, 6, 0, 0, 0, time.UTC)}
	rc.items.Store(0)
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Usage(ctx, q)
		if err != nil || len(out) != 2 || out[0].Value != 10*366 {
			b.Fatalf("%+v %v", out, err)
		}
	}
	b.ReportMetric(float64(rc.items.Load())/float64(b.N), "items/op")
}

// BenchmarkRecord: one usage event, durably recorded (idempotency record
// and two counters in one transaction).
func BenchmarkRecord(b *testing.B) {
	s, _ := benchService(b)
	ctx := context.Background()
	org, ws := uuid.NewString(), uuid.NewString()
	now := time.Now()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ev := Event{ID: strconv.FormatInt(n.Add(1), 10), OrganizationID: org, WorkspaceID: ws, Metric: MetricTraces, Quantity: 1, At: now}
			if err := s.Record(ctx, ev); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
