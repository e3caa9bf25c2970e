package ratelimits_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

func keyN(i int) ratelimits.Key {
	k := ratelimits.Key{Row: 12, Kind: ratelimits.ByAPIKey}
	k.ID[0], k.ID[1], k.ID[2] = byte(i), byte(i>>8), byte(i>>16)
	return k
}

// Concurrent requests of one key at one instant: exactly the count is
// admitted, by both limiters (the store one with conditional writes only).
func TestConcurrentExactness(t *testing.T) {
	for _, kind := range limiterKinds {
		t.Run(kind.name, func(t *testing.T) {
			clk := newClock()
			lim, _ := kind.new(t, clk)
			rate := ratelimits.Rate{Count: 40, Interval: time.Minute}
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 10; i++ {
						d, err := lim.Take(context.Background(), keyN(1), rate)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							admitted.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if n := admitted.Load(); n != rate.Count {
				t.Fatalf("admitted %d of 80, want %d", n, rate.Count)
			}
		})
	}
}

// GCRA: a burst of the count, then one request back every interval/count,
// exactly, for a count that does not divide the interval.
func TestGCRASpacing(t *testing.T) {
	clk := newClock()
	lim := ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now})
	rate := ratelimits.Rate{Count: 15, Interval: 10 * time.Second} // 666.67 ms each
	take := func() ratelimits.Decision {
		d, err := lim.Take(context.Background(), keyN(1), rate)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := 0; i < 15; i++ {
		if d := take(); !d.Allowed || d.Remaining != int64(14-i) {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	d := take()
	if d.Allowed || d.RetryAfter != 666667*time.Microsecond || d.Reset != 10*time.Second {
		t.Fatalf("16th: %+v", d)
	}
	clk.Advance(666666 * time.Microsecond)
	if d := take(); d.Allowed {
		t.Fatalf("1 µs early: %+v", d)
	}
	clk.Advance(time.Microsecond)
	if d := take(); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("on time: %+v", d)
	}
	// Over a long run the average is exactly count per interval.
	admitted := 0
	for i := 0; i < 3000; i++ {
		clk.Advance(100 * time.Millisecond)
		if take().Allowed {
			admitted++
		}
	}
	if admitted != 15*30 && admitted != 15*30+1 {
		t.Fatalf("300 s admitted %d, want 450", admitted)
	}
}

// Memory stays bounded; identities whose bucket is full again go first,
// so a key still being limited survives a flood of one-off identities.
func TestMemoryBounded(t *testing.T) {
	clk := newClock()
	lim := ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now, MaxKeys: 64 * 4})
	hot := ratelimits.Key{Row: 29, Kind: ratelimits.ByIP, ID: [16]byte{15: 1}}
	rate := ratelimits.Rate{Count: 5, Interval: time.Hour}
	for i := 0; i < 5; i++ {
		lim.Take(context.Background(), hot, rate)
	}
	for i := 0; i < 20000; i++ {
		clk.Advance(time.Millisecond)
		lim.Take(context.Background(), keyN(i+2), ratelimits.Rate{Count: 100, Interval: time.Millisecond})
	}
	if n := lim.Len(); n > 64*4 {
		t.Fatalf("holds %d identities, bound %d", n, 64*4)
	}
	if d, _ := lim.Take(context.Background(), hot, rate); d.Allowed {
		t.Fatal("the limited identity was forgotten")
	}
}

func TestRateBounds(t *testing.T) {
	clk := newClock()
	st := openBolt(t)
	sl, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now})
	for _, lim := range []ratelimits.Limiter{ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now}), sl} {
		for _, r := range []ratelimits.Rate{{0, time.Second}, {1, 0}, {2_000_000, time.Second}, {1, 48 * time.Hour}} {
			if _, err := lim.Take(context.Background(), keyN(1), r); err == nil {
				t.Errorf("%T accepted %+v", lim, r)
			}
		}
	}
	if _, err := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{}); err == nil {
		t.Error("a store limiter without a store")
	}
	if _, err := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Enabled: true}}); err == nil {
		t.Error("an enabled service without a limiter")
	}
	if _, err := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Region: "ap"}}); err == nil {
		t.Error("an unknown region")
	}
}

// countingStore counts writes, to show refused windows cost nothing more.
type countingStore struct {
	store.Store
	writes atomic.Int64
}

func (c *countingStore) Update(ctx context.Context, u store.Update) (store.Item, error) {
	c.writes.Add(1)
	return c.Store.Update(ctx, u)
}

// The store limiter's window: one item per key and window, expiring after
// it; after one refusal the process stops writing until the window ends.
func TestStoreWindow(t *testing.T) {
	clk := newClock()
	st := &countingStore{Store: openBolt(t)}
	lim, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now})
	rate := ratelimits.Rate{Count: 3, Interval: time.Minute}
	k := keyN(7)
	var last ratelimits.Decision
	for i := 0; i < 3; i++ {
		last, _ = lim.Take(context.Background(), k, rate)
		if !last.Allowed || last.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v", i+1, last)
		}
	}
	it, err := st.Get(context.Background(), ratelimits.StoreKey(k, rate.Interval, clk.Now()))
	if err != nil || it.Nums[ratelimits.CounterName] != 3 {
		t.Fatalf("counter item: %+v %v", it, err)
	}
	end := clk.Now().Add(last.Reset)
	if !it.ExpiresAt.After(end) || it.ExpiresAt.After(end.Add(2*time.Minute)) {
		t.Fatalf("expires %v, window ends %v", it.ExpiresAt, end)
	}
	for i := 0; i < 5; i++ {
		if d, _ := lim.Take(context.Background(), k, rate); d.Allowed || d.RetryAfter != last.Reset {
			t.Fatalf("refused: %+v", d)
		}
	}
	if n := st.writes.Load(); n != 4 {
		t.Fatalf("%d writes, want 3 admitted + 1 refused", n)
	}
	// A second process sharing the store refuses too.
	other, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now})
	if d, _ := other.Take(context.Background(), k, rate); d.Allowed {
		t.Fatal("another process admitted past the shared count")
	}
	clk.Advance(last.Reset)
	if d, _ := lim.Take(context.Background(), k, rate); !d.Allowed || d.Remaining != 2 || d.Reset != rate.Interval {
		t.Fatalf("next window: %+v", d)
	}
}
