package netguard_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/netguard"
)

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "140.82.112.3": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::1": false,
		"fe80::1": false, "fc00::1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
		"224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false, "::": false,
		"fd00:ec2::254": false, "192.0.2.1": false, "2001:db8::1": false,
	} {
		if got := netguard.PublicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

func TestCheckHost(t *testing.T) {
	for host, ok := range map[string]bool{
		"api.example.com": true, "8.8.8.8": true, "2606:4700::1111": true,
		"localhost": false, "LOCALHOST.": false, "app.localhost": false, "127.0.0.1": false,
		"::1": false, "[::1]": false, "169.254.169.254": false, "10.0.0.1": false, "": false,
	} {
		err := netguard.CheckHost(host)
		if (err == nil) != ok {
			t.Errorf("%q: %v", host, err)
		}
		if err != nil && !errors.Is(err, netguard.ErrNonPublic) {
			t.Errorf("%q: not ErrNonPublic: %v", host, err)
		}
	}
}

// resolver answers from a table, counting lookups; a name may answer a
// public address first and a private one after (DNS rebinding).
type resolver struct {
	answers map[string][]netip.Addr
	calls   atomic.Int32
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n := r.calls.Add(1)
	if host == "rebind.test" {
		if n == 1 {
			return []netip.Addr{netip.MustParseAddr("203.0.113.10")}, nil // refused too: documentation range
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	if a, ok := r.answers[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// The dialer checks every address a name resolves to at connect time: a
// name that passes any static check but resolves to loopback (or to a mix
// of public and private addresses) never reaches the server, unless the
// context allows local destinations.
func TestDialRefusesNonPublicAtConnect(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	res := &resolver{answers: map[string][]netip.Addr{
		"loop.test":  {netip.MustParseAddr("127.0.0.1")},
		"mixed.test": {netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("127.0.0.1")},
	}}
	c := &http.Client{Transport: netguard.NewTransport(netguard.TransportOptions{Resolver: res})}
	get := func(ctx context.Context, host string) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+host+":"+port+"/", nil)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	for _, host := range []string{"loop.test", "mixed.test", "rebind.test", "rebind.test", "127.0.0.1"} {
		for _, ctx := range []context.Context{context.Background(), netguard.WithAllowLocal(context.Background(), false)} {
			if _, err := get(ctx, host); !errors.Is(err, netguard.ErrNonPublic) {
				t.Fatalf("%s: %v", host, err)
			}
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the loopback server was reached")
	}
	local := netguard.WithAllowLocal(context.Background(), true)
	if body, err := get(local, "loop.test"); err != nil || body != "ok" {
		t.Fatalf("local policy: %q %v", body, err)
	}
}

func TestLimitBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 100))
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	for limit, wantErr := range map[int64]bool{10: true, 99: true, 100: false, 1000: false} {
		c := &http.Client{Transport: netguard.LimitBody(http.DefaultTransport, limit)}
		resp, err := c.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if wantErr != errors.Is(err, netguard.ErrTooLarge) {
			t.Fatalf("limit %d: %d bytes, %v", limit, len(b), err)
		}
		if !wantErr && len(b) != 100 {
			t.Fatalf("limit %d: %d bytes", limit, len(b))
		}
	}
}
