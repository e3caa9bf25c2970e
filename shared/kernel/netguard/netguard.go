// Package netguard guards outbound HTTP to addresses chosen by callers (a
// repository URL to clone, a platform endpoint to query): it refuses
// loopback, private, link-local and otherwise non-public destinations at
// connect time, so a name that resolves (or re-resolves: DNS rebinding) to a
// private address is refused however it was spelled, and it bounds the size
// of responses.
//
// The policy travels in the request's context: without WithAllowLocal(ctx,
// true), only public addresses are reached. Local integrations (a laptop
// cloning from its own disk server, a local tool server calling its own
// platform) mark their contexts.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ErrNonPublic: a connection to a loopback, private, link-local or
// otherwise non-public address was refused.
var ErrNonPublic = errors.New("refusing to connect to a non-public address")

// ErrTooLarge: a response body exceeded the transport's size bound.
var ErrTooLarge = errors.New("response too large")

// nonPublic are ranges that netip's predicates do not cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// PublicAddr reports whether a is a public unicast address: not loopback,
// private, link-local, unspecified, multicast or otherwise reserved.
// IPv4-mapped IPv6 addresses are judged as their IPv4 address.
func PublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// CheckHost is the static check of a host name or IP literal (as in a URL,
// IPv6 without brackets): it refuses "localhost" names and non-public IP
// literals, so an obviously local URL is refused before any lookup. Names
// that resolve to non-public addresses pass here and are refused by the
// dialer.
func CheckHost(host string) error {
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if lower == "" {
		return fmt.Errorf("%w: empty host", ErrNonPublic)
	}
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return fmt.Errorf("%w: %s", ErrNonPublic, host)
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(lower, "["), "]")); err == nil && !PublicAddr(a) {
		return fmt.Errorf("%w: %s", ErrNonPublic, host)
	}
	return nil
}

type policyKey struct{}

// WithAllowLocal marks ctx: allow lets its connections reach non-public
// addresses. Unmarked contexts reach only public addresses.
func WithAllowLocal(ctx context.Context, allow bool) context.Context {
	return context.WithValue(ctx, policyKey{}, allow)
}

// AllowLocal reports the mark WithAllowLocal put on ctx (false without one).
func AllowLocal(ctx context.Context) bool {
	v, _ := ctx.Value(policyKey{}).(bool)
	return v
}

// Resolver looks up a host's addresses (net.DefaultResolver in production;
// tests substitute names).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialContext returns a dial function that resolves the host itself and
// connects only to addresses the context's policy allows. Every address of
// the name must be allowed, so a name cannot mix a public and a private
// answer to slip through on a retry. A nil resolver is net.DefaultResolver.
func DialContext(d *net.Dialer, r Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if r == nil {
		r = net.DefaultResolver
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port in %s", addr)
		}
		var ips []netip.Addr
		if a, perr := netip.ParseAddr(host); perr == nil {
			ips = []netip.Addr{a}
		} else if ips, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		if !AllowLocal(ctx) {
			for _, ip := range ips {
				if !PublicAddr(ip) {
					return nil, fmt.Errorf("%w: %s resolves to %s", ErrNonPublic, host, ip)
				}
			}
		}
		var last error = fmt.Errorf("no address for %s", host)
		for _, ip := range ips {
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
			if err == nil {
				return conn, nil
			}
			last = err
		}
		return nil, last
	}
}

// TransportOptions shape NewTransport. Zero durations take the defaults
// noted on each field.
type TransportOptions struct {
	// MaxResponseBytes bounds each response body; reading past it fails
	// with ErrTooLarge. Zero means no bound.
	MaxResponseBytes int64
	// DialTimeout bounds one connection attempt (default 10 s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout (default 10 s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for response headers after
	// the request is written (default 30 s).
	ResponseHeaderTimeout time.Duration
	// Resolver substitutes name resolution (tests); nil is the system's.
	Resolver Resolver
}

// NewTransport returns an HTTP transport with the guarded dialer, no proxy
// from the environment (a proxy would make the connection, bypassing the
// address check) and the response size bound.
func NewTransport(o TransportOptions) http.RoundTripper {
	dial := o.DialTimeout
	if dial == 0 {
		dial = 10 * time.Second
	}
	tlsT := o.TLSHandshakeTimeout
	if tlsT == 0 {
		tlsT = 10 * time.Second
	}
	hdr := o.ResponseHeaderTimeout
	if hdr == 0 {
		hdr = 30 * time.Second
	}
	d := &net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           DialContext(d, o.Resolver),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   tlsT,
		ResponseHeaderTimeout: hdr,
	}
	if o.MaxResponseBytes <= 0 {
		return tr
	}
	return LimitBody(tr, o.MaxResponseBytes)
}

// LimitBody wraps next so that every response body yields at most limit
// bytes; reading more fails with ErrTooLarge.
func LimitBody(next http.RoundTripper, limit int64) http.RoundTripper {
	return limitedTransport{next: next, limit: limit}
}

type limitedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.limit}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrTooLarge
		}
		if err == nil {
			return 0, nil
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
