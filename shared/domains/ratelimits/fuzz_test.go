package ratelimits_test

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

// FuzzClientAddr: any peer address and X-Forwarded-For header gives the
// peer, or (behind a trusted proxy only) an address from the header.
func FuzzClientAddr(f *testing.F) {
	f.Add("10.0.0.1:80", "203.0.113.9, 10.0.0.2")
	f.Add("[2001:db8::1]:443", "[2001:db8:ffff::1]:1234,, 203.0.113.9:80")
	f.Add("198.51.100.1:5000", "1.1.1.1")
	f.Add("10.0.0.1", "garbage, ,\x00, 10.1.1.1")
	f.Add("", "")
	trusted := mustProxies("10.0.0.0/8, 2001:db8::/32")
	f.Fuzz(func(t *testing.T, remote, xff string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		r.Header["X-Forwarded-For"] = []string{xff}
		got := ratelimits.ClientAddr(r, trusted)
		peer := ratelimits.ClientAddr(r, nil)
		if got == peer {
			return
		}
		if !peer.IsValid() || !containsAddr(trusted, peer) {
			t.Fatalf("an untrusted peer %v got %v from its header", peer, got)
		}
		if !strings.Contains(xff, strings.TrimPrefix(strings.TrimSuffix(got.String(), "]"), "[")) && !got.Is4() {
			t.Fatalf("%v is neither the peer nor in %q", got, xff)
		}
	})
}

func containsAddr(ps ratelimits.Proxies, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// FuzzSelect: any method and path selects a row, deterministically, and
// Category never panics on arbitrary patterns.
func FuzzSelect(f *testing.F) {
	f.Add("GET", "/runs/0f8fad5b-d9cb-469f-a165-70867728950e", true, false)
	f.Add("POST", "/api/v1/runs/query", false, true)
	f.Add("DELETE", "/sessions/{id}", true, true)
	f.Add("OPTIONS", "", false, false)
	f.Add("PATCH", "/api/v1", true, false)
	f.Add("HEAD", "/{a}/{b...}", false, false)
	f.Fuzz(func(t *testing.T, method, path string, key, user bool) {
		p := ratelimits.Presence{Key: key, User: user}
		r := ratelimits.Select(method, path, p)
		if r.Seq < 1 || r.Seq > 29 || ratelimits.Select(method, path, p).Seq != r.Seq {
			t.Fatalf("row %d", r.Seq)
		}
		switch r.Identity {
		case ratelimits.ByAPIKey:
			if !key {
				t.Fatalf("an API-key row for a request without a key")
			}
		case ratelimits.ByUserIP:
			if !user {
				t.Fatalf("a user row for a request without x-user-id")
			}
		}
		_ = ratelimits.Category(method, path)
	})
}
