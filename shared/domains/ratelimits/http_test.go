package ratelimits_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

var localProxy, _ = ratelimits.ParseProxies("127.0.0.0/8")

// crossLimit drives one row of one identity across its limit over HTTP:
// every admitted answer carries the headers, the request past the count
// gets 429, waiting Retry-After admits one again, and the next interval
// admits the whole count.
func crossLimit(t *testing.T, h *harness, s sample, via string, rate ratelimits.Rate) {
	t.Helper()
	c := rate.Count
	secs := int64(rate.Interval / time.Second)
	limit := strconv.FormatInt(c, 10)
	ok := func(a answer, remaining int64) {
		t.Helper()
		if a.status != http.StatusOK || a.limit != limit || a.int(a.remaining) != remaining || a.remaining == "" {
			t.Fatalf("%s %s: %+v, want 200 with limit %s remaining %d", s.method, s.path, a, limit, remaining)
		}
		if r := a.int(a.reset); r < 1 || r > secs {
			t.Fatalf("%s %s: RateLimit-Reset %q outside 1..%d", s.method, s.path, a.reset, secs)
		}
	}
	ok(h.do(s, via), c-1)
	if c <= 100 {
		for i := int64(2); i <= c; i++ {
			ok(h.do(s, via), c-i)
		}
	} else {
		h.spend(s, via, c-2)
		ok(h.do(s, via), 0)
	}
	over := h.do(s, via)
	if over.status != http.StatusTooManyRequests || over.limit != limit || over.remaining != "0" {
		t.Fatalf("%s %s past the limit: %+v", s.method, s.path, over)
	}
	retry := over.int(over.retryAfter)
	if retry < 1 || retry > secs || over.int(over.reset) < 1 {
		t.Fatalf("%s %s: Retry-After %q, RateLimit-Reset %q", s.method, s.path, over.retryAfter, over.reset)
	}
	if !strings.Contains(over.detail, "Rate limit exceeded") {
		t.Fatalf("detail %q", over.detail)
	}
	// Retry-After is the wait rounded up: a second less is still refused
	// (and a refused request costs nothing), the whole wait is admitted.
	h.clk.Advance(time.Duration(retry-1) * time.Second)
	if a := h.do(s, via); a.status != http.StatusTooManyRequests {
		t.Fatalf("%s %s %ds before Retry-After ends: %+v", s.method, s.path, 1, a)
	}
	h.clk.Advance(time.Second)
	if a := h.do(s, via); a.status != http.StatusOK {
		t.Fatalf("%s %s after Retry-After %ds: %+v", s.method, s.path, retry, a)
	}
	h.clk.Advance(rate.Interval)
	ok(h.do(s, via), c-1)
}

// TestEveryRowOverHTTP is the conformance suite: each row (each category
// and identity) against both limiters, in both regions.
func TestEveryRowOverHTTP(t *testing.T) {
	for _, kind := range limiterKinds {
		for _, region := range ratelimits.Regions {
			t.Run(kind.name+"/"+string(region), func(t *testing.T) {
				h := newHarness(t, kind, ratelimits.Config{Region: region, TrustedProxies: localProxy})
				for _, row := range ratelimits.Rows() {
					s := sampleFor(row)
					s.key, s.user = strings.Replace(s.key, "row", strconv.Itoa(row.Seq), 1), strings.Replace(s.user, "row", strconv.Itoa(row.Seq), 1)
					via := fmt.Sprintf("203.0.113.%d", row.Seq)
					if got, _, _ := h.svc.Classify(withAddr(request(s, via))); got.Seq != row.Seq {
						t.Fatalf("row %d: sample selects row %d", row.Seq, got.Seq)
					}
					crossLimit(t, h, s, via, row.Rate(region))
				}
			})
		}
	}
}

func withAddr(r *http.Request) *http.Request {
	r.RemoteAddr = "127.0.0.1:1"
	return r
}

func TestEUFigures(t *testing.T) {
	h := newHarness(t, limiterKinds[0], ratelimits.Config{Region: ratelimits.EU})
	if a := h.do(sample{method: "GET", path: "/commits/o/r", key: "k"}, ""); a.limit != "2000" {
		t.Errorf("EU /commits: %+v", a)
	}
	if a := h.do(sample{method: "POST", path: "/runs/stats", key: "k"}, ""); a.limit != "20" {
		t.Errorf("EU /runs/stats: %+v", a)
	}
	us := newHarness(t, limiterKinds[0], ratelimits.Config{})
	if a := us.do(sample{method: "GET", path: "/commits/o/r", key: "k"}, ""); a.limit != "10000" {
		t.Errorf("US /commits: %+v", a)
	}
	if a := us.do(sample{method: "POST", path: "/runs/stats", key: "k"}, ""); a.limit != "1" {
		t.Errorf("US /runs/stats: %+v", a)
	}
}

func TestIdentitiesAreSeparate(t *testing.T) {
	for _, kind := range limiterKinds {
		t.Run(kind.name, func(t *testing.T) {
			h := newHarness(t, kind, ratelimits.Config{TrustedProxies: localProxy})
			exhaust := func(s sample, via string, c int64) {
				t.Helper()
				h.spend(s, via, c)
				if a := h.do(s, via); a.status != http.StatusTooManyRequests {
					t.Fatalf("%+v via %s not limited: %+v", s, via, a)
				}
			}
			admitted := func(s sample, via string) {
				t.Helper()
				if a := h.do(s, via); a.status != http.StatusOK {
					t.Fatalf("%+v via %s: %+v", s, via, a)
				}
			}
			// Two keys.
			q := sample{method: "POST", path: "/runs/query", key: "key-a"}
			exhaust(q, "198.51.100.1", 15)
			q.key = "key-b"
			admitted(q, "198.51.100.1")
			// The same key from another address is the same identity, and a
			// Bearer credential is the same key.
			q.key = "key-a"
			if a := h.do(q, "198.51.100.2"); a.status != http.StatusTooManyRequests {
				t.Fatalf("key-a from another IP: %+v", a)
			}
			r := request(sample{method: "POST", path: "/runs/query"}, "198.51.100.3")
			r.Header.Set("Authorization", "Bearer key-a")
			r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(h.srv.URL, "http://")
			resp, err := h.srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("Bearer key-a: %d", resp.StatusCode)
			}
			// Two addresses.
			anon := sample{method: "GET", path: "/nowhere"}
			exhaust(anon, "198.51.100.10", 100)
			admitted(anon, "198.51.100.11")
			// An IPv6 client's /64 is one identity.
			exhaust(anon, "2001:db8:1:2::1", 100)
			if a := h.do(anon, "2001:db8:1:2:ffff::9"); a.status != http.StatusTooManyRequests {
				t.Fatalf("same /64: %+v", a)
			}
			admitted(anon, "2001:db8:1:3::1")
			// User id + address: the same user from another address, and
			// another user from the same address, are separate.
			u := sample{method: "POST", path: "/runs/stats", user: "u1"} // Default (User), 1000/10
			exhaust(u, "198.51.100.20", 1000)
			admitted(u, "198.51.100.21")
			u.user = "u2"
			admitted(u, "198.51.100.20")
			// A key and a user id are separate rows.
			admitted(sample{method: "GET", path: "/nowhere", key: "key-a"}, "198.51.100.10")
		})
	}
}

// Without trusted proxies, X-Forwarded-For changes nothing.
func TestSpoofedForwardedForChangesNothing(t *testing.T) {
	for _, kind := range limiterKinds {
		t.Run(kind.name, func(t *testing.T) {
			h := newHarness(t, kind, ratelimits.Config{})
			anon := sample{method: "GET", path: "/nowhere"}
			h.spend(anon, "", 99)
			if a := h.do(anon, "203.0.113.1"); a.status != http.StatusOK || a.remaining != "0" {
				t.Fatalf("100th: %+v", a)
			}
			for i := 2; i < 6; i++ {
				if a := h.do(anon, fmt.Sprintf("203.0.113.%d, 10.0.0.%d", i, i)); a.status != http.StatusTooManyRequests {
					t.Fatalf("spoofed X-Forwarded-For escaped the limit: %+v", a)
				}
			}
		})
	}
}

// A trusted proxy's X-Forwarded-For is honoured; one from a peer outside
// the list is not, even when it names a trusted proxy.
func TestTrustedProxy(t *testing.T) {
	h := newHarness(t, limiterKinds[0], ratelimits.Config{TrustedProxies: localProxy})
	anon := sample{method: "GET", path: "/nowhere"}
	h.spend(anon, "203.0.113.1", 100)
	if a := h.do(anon, "203.0.113.1"); a.status != http.StatusTooManyRequests {
		t.Fatalf("%+v", a)
	}
	if a := h.do(anon, "203.0.113.2"); a.status != http.StatusOK {
		t.Fatalf("%+v", a)
	}
	other := newHarness(t, limiterKinds[0], ratelimits.Config{TrustedProxies: mustProxies("10.0.0.0/8")})
	other.spend(anon, "", 100)
	if a := other.do(anon, "10.0.0.1, 203.0.113.2"); a.status != http.StatusTooManyRequests {
		t.Fatalf("untrusted peer's header honoured: %+v", a)
	}
}

func mustProxies(s string) ratelimits.Proxies {
	p, err := ratelimits.ParseProxies(s)
	if err != nil {
		panic(err)
	}
	return p
}

// faultStore fails every write, or blocks until the deadline.
type faultStore struct{ block bool }

func (f faultStore) Update(ctx context.Context, u store.Update) (store.Item, error) {
	if f.block {
		<-ctx.Done()
		return store.Item{}, ctx.Err()
	}
	return store.Item{}, errors.New("dynamodb: service unavailable")
}

func TestStoreFaultAdmits(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(fmt.Sprintf("block=%v", block), func(t *testing.T) {
			clk := newClock()
			lim, err := ratelimits.NewStoreLimiter(ratelimits.StoreOptions{Store: faultStore{block: block}, Now: clk.Now, Timeout: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			h := (&harness{t: t, clk: clk, lim: lim, logs: &bytes.Buffer{}}).start(ratelimits.Config{})
			s := sample{method: "POST", path: "/runs/stats", key: "secret-key-value-0123456789"} // 1 per 10 s
			for i := 0; i < 3; i++ {
				a := h.do(s, "")
				if a.status != http.StatusOK || a.limit != "" || a.remaining != "" {
					t.Fatalf("store fault: %+v (want 200 without RateLimit headers)", a)
				}
			}
			logs := h.logs.String()
			if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "rate limiter unavailable") || strings.Count(logs, "\n") != 1 {
				t.Fatalf("want one warning (the others paced), got %q", logs)
			}
			if strings.Contains(logs, s.key) {
				t.Fatalf("the key leaked into the log: %q", logs)
			}
			h.clk.Advance(11 * time.Second)
			h.do(s, "")
			if logs := h.logs.String(); !strings.Contains(logs, "unlogged_since_last=2") {
				t.Fatalf("the next warning does not count the skipped ones: %q", logs)
			}
		})
	}
}
