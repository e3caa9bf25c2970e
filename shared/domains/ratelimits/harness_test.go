package ratelimits_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	minidyn "github.com/truora/minidyn/server"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
)

// clock is the injected time: tests move it, nothing sleeps.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock starts in the future (the next hour): boltstore checks expiry
// against the real time, so items must not look expired to it.
func newClock() *clock { return &clock{t: time.Now().Truncate(time.Hour).Add(time.Hour)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// limiterKind builds one of the two limiters; the conformance scenarios run
// against each.
type limiterKind struct {
	name string
	new  func(t testing.TB, clk *clock) (ratelimits.Limiter, store.Store)
}

var limiterKinds = []limiterKind{
	{"memory", func(t testing.TB, clk *clock) (ratelimits.Limiter, store.Store) {
		return ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now}), nil
	}},
	{"boltstore", func(t testing.TB, clk *clock) (ratelimits.Limiter, store.Store) {
		st := openBolt(t)
		l, err := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		return l, st
	}},
}

// The store limiter through the DynamoDB adapter, against minidyn served
// in process on 127.0.0.1: the conditional UpdateItem the Lambdas send.
func init() {
	limiterKinds = append(limiterKinds, limiterKind{"dynamostore", func(t testing.TB, clk *clock) (ratelimits.Limiter, store.Store) {
		st := openDynamo(t)
		l, err := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: st, Now: clk.Now, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l, st
	}})
}

var tables atomic.Int64

func openDynamo(t testing.TB) store.Store {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(minidyn.NewServer())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), Logger: logging.Nop{}})
	table := fmt.Sprintf("rl%d", tables.Add(1))
	if err := dynamostore.CreateTable(context.Background(), c, table); err != nil {
		t.Fatal(err)
	}
	return dynamostore.New(c, table)
}

func openBolt(t testing.TB) store.Store {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "rl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// harness is an httptest server with the middleware in front of a
// handler that answers 200 with the path.
type harness struct {
	t    *testing.T
	clk  *clock
	lim  ratelimits.Limiter
	st   store.Store
	svc  *ratelimits.Service
	h    http.Handler
	srv  *httptest.Server
	logs *bytes.Buffer
}

func newHarness(t *testing.T, kind limiterKind, cfg ratelimits.Config) *harness {
	t.Helper()
	h := &harness{t: t, clk: newClock(), logs: &bytes.Buffer{}}
	h.lim, h.st = kind.new(t, h.clk)
	return h.start(cfg)
}

func (h *harness) start(cfg ratelimits.Config) *harness {
	cfg.Enabled = true
	svc, err := ratelimits.New(ratelimits.Options{Config: cfg, Limiter: h.lim, Now: h.clk.Now,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: h.logs}, nil))})
	if err != nil {
		h.t.Fatal(err)
	}
	h.svc = svc
	h.h = svc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path)
	}))
	h.srv = httptest.NewServer(h.h)
	h.t.Cleanup(h.srv.Close)
	return h
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// answer is what the test reads of a response.
type answer struct {
	status                              int
	limit, remaining, reset, retryAfter string
	detail                              string
}

func (a answer) int(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func request(s sample, via string) *http.Request {
	r, _ := http.NewRequest(s.method, "http://limits.test"+s.path, nil)
	if s.key != "" {
		r.Header.Set("X-Api-Key", s.key)
	}
	if s.user != "" {
		r.Header.Set("X-User-Id", s.user)
	}
	if via != "" {
		r.Header.Set("X-Forwarded-For", via)
	}
	return r
}

// do sends s over HTTP; via, when set, is the X-Forwarded-For header.
func (h *harness) do(s sample, via string) answer {
	h.t.Helper()
	r := request(s, via)
	u := h.srv.URL + s.path
	r.URL, _ = r.URL.Parse(u)
	r.Host = ""
	resp, err := h.srv.Client().Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, limit: resp.Header.Get("RateLimit-Limit"), remaining: resp.Header.Get("RateLimit-Remaining"),
		reset: resp.Header.Get("RateLimit-Reset"), retryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode == http.StatusTooManyRequests {
		var e struct {
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Detail == "" || resp.Header.Get("Content-Type") != "application/json" {
			h.t.Fatalf("429 body %q (%s): %v", body, resp.Header.Get("Content-Type"), err)
		}
		a.detail = e.Detail
	}
	return a
}

// spend counts n requests of s without the network: against the limiter
// directly for the memory one, one counter write for the store one (the
// same item the middleware writes). The requests that cross the limit
// still go over HTTP.
func (h *harness) spend(s sample, via string, n int64) {
	h.t.Helper()
	if n <= 0 {
		return
	}
	r := request(s, via)
	r.RemoteAddr = "127.0.0.1:1"
	_, k, rate := h.svc.Classify(r)
	if h.st == nil {
		for i := int64(0); i < n; i++ {
			if d, err := h.lim.Take(context.Background(), k, rate); err != nil || !d.Allowed {
				h.t.Fatalf("spend: %+v %v", d, err)
			}
		}
		return
	}
	_, err := h.st.Update(context.Background(), store.Update{Key: ratelimits.StoreKey(k, rate.Interval, h.clk.Now()),
		Add: map[string]int64{ratelimits.CounterName: n}, Cond: store.NumBelow(ratelimits.CounterName, rate.Count-n+1)})
	if err != nil {
		h.t.Fatal(err)
	}
}
