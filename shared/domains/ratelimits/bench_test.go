package ratelimits_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/kernel/api"
)

// discard is a ResponseWriter that keeps one header map, like a server's
// per-connection writer, so the benchmark measures the middleware.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

// tick is a clock that moves 10 ms per reading, so every request of a
// 1000-per-10-s row is admitted and the benchmark measures the admit path.
func tick() func() time.Time {
	var n atomic.Int64
	start := time.Now()
	return func() time.Time { return start.Add(time.Duration(n.Add(1)) * 10 * time.Millisecond) }
}

var noop = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

func benchRequests() map[string]*http.Request {
	key := httptest.NewRequest("GET", "/v2/deployments", nil)
	key.Header.Set("X-Api-Key", "ap_0123456789abcdef0123456789abcdef")
	user := httptest.NewRequest("GET", "/v2/deployments", nil)
	user.Header.Set("X-User-Id", "user-1234")
	ip := httptest.NewRequest("GET", "/info", nil)
	return map[string]*http.Request{"api-key": key, "user-ip": user, "ip": ip}
}

// BenchmarkMiddleware is the whole per-request cost of the in-memory
// limiter: row selection, identity (SHA-256 of the key), GCRA, headers.
// Subtract BenchmarkBaseline (the bare handler) for what it adds.
func BenchmarkMiddleware(b *testing.B) {
	for name, r := range benchRequests() {
		b.Run(name, func(b *testing.B) {
			now := tick()
			svc, _ := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Enabled: true},
				Limiter: ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: now})})
			h := svc.Handler(noop)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
			reportCPU(b, cpu)
			if w.h.Get("Retry-After") != "" {
				b.Fatal("refused: the benchmark measures the admit path")
			}
		})
	}
}

// BenchmarkMiddlewareOuterAndWrap: Handler around the mux and Wrap on a
// route, as the composition may wire both (the request is counted once).
func BenchmarkMiddlewareOuterAndWrap(b *testing.B) {
	now := tick()
	svc, _ := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Enabled: true},
		Limiter: ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: now})})
	h := svc.Handler(svc.Wrap(api.Spec{}, noop))
	r := benchRequests()["api-key"]
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
	reportCPU(b, cpu)
}

func BenchmarkMiddlewareParallel(b *testing.B) {
	now := tick()
	svc, _ := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Enabled: true},
		Limiter: ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: now})})
	h := svc.Handler(noop)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRequests()["ip"]
		w := &discard{h: http.Header{}}
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

func BenchmarkBaseline(b *testing.B) {
	r := benchRequests()["api-key"]
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		noop.ServeHTTP(w, r)
	}
	reportCPU(b, cpu)
}

// cpuTime is the process's CPU time (user + system). The machine is
// shared, so wall time per op (ns/op) includes waiting for a core;
// cpu-ns/op is the work itself.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkMemoryLimiterTake(b *testing.B) {
	lim := ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: tick()})
	rate := ratelimits.Rate{Count: 1000, Interval: 10 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		lim.Take(context.Background(), keyN(1), rate)
	}
}

// BenchmarkStoreLimiterBolt is one request counted through boltstore (one
// conditional Update, a bbolt write transaction with its fsync).
func BenchmarkStoreLimiterBolt(b *testing.B) {
	st := openBolt(b)
	lim, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: tick()})
	rate := ratelimits.Rate{Count: 1000, Interval: 10 * time.Second}
	b.ReportAllocs()
	for b.Loop() {
		if d, err := lim.Take(context.Background(), keyN(1), rate); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
}

// BenchmarkStoreLimiterDynamoDB is one request counted through the DynamoDB
// adapter against minidyn on loopback: the SDK's and the adapter's work per
// request (real DynamoDB adds its network round trip).
func BenchmarkStoreLimiterDynamoDB(b *testing.B) {
	st := openDynamo(b)
	lim, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: tick()})
	rate := ratelimits.Rate{Count: 1000, Interval: 10 * time.Second}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		if d, err := lim.Take(context.Background(), keyN(1), rate); err != nil || !d.Allowed {
			b.Fatal(d, err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkStoreLimiterRefused is a refused request after the window's
// first refusal: no store write.
func BenchmarkStoreLimiterRefused(b *testing.B) {
	st := openBolt(b)
	clk := newClock()
	lim, _ := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now})
	rate := ratelimits.Rate{Count: 1, Interval: time.Hour}
	lim.Take(context.Background(), keyN(1), rate)
	lim.Take(context.Background(), keyN(1), rate)
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := lim.Take(context.Background(), keyN(1), rate); d.Allowed {
			b.Fatal("admitted")
		}
	}
}
