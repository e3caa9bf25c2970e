package ratelimits

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/agentplane/agentplane/shared/kernel/auth"
)

// Key is what a limiter counts: one row and one identity. ID is the
// client address (IPv6 reduced to its /64) for IP rows, and a SHA-256
// digest, truncated to 128 bits, of the API key or of the x-user-id and
// address for the others: keys never sit in memory or in the store in the
// clear. Key is comparable and fixed-size, so counting allocates nothing.
type Key struct {
	Row  uint8 // Row.Seq
	Kind Identity
	ID   [16]byte
}

func (k Key) String() string {
	return fmt.Sprintf("%02d#%c%x", k.Row, "?iku"[min(int(k.Kind), 3)], k.ID)
}

// Domain-separated hashes: a digest here is useless anywhere else.
const (
	keyHashPrefix  = "agentplane/ratelimits/api-key\x00"
	userHashPrefix = "agentplane/ratelimits/user-ip\x00"
)

func digest(prefix, s string, extra []byte) (id [16]byte) {
	var buf [256]byte // on the stack for ordinary header sizes
	b := append(buf[:0], prefix...)
	b = append(b, s...)
	b = append(b, 0)
	b = append(b, extra...)
	sum := sha256.Sum256(b)
	copy(id[:], sum[:16])
	return id
}

// apiKeyID is the identity of an API key credential.
func apiKeyID(cred string) [16]byte { return digest(keyHashPrefix, cred, nil) }

// userIPID is the identity of an x-user-id from one client address.
func userIPID(user string, ip [16]byte) [16]byte {
	return digest(userHashPrefix, user, ip[:])
}

// addrID is the identity of a client address. An IPv6 client controls the
// low 64 bits of its address, so it counts by its /64.
func addrID(a netip.Addr) (id [16]byte) {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			a = p.Addr()
		}
	}
	if a.IsValid() {
		id = a.As16()
	}
	return id
}

// Proxies is the list of trusted proxy networks.
type Proxies []netip.Prefix

// ParseProxies reads comma-separated CIDRs or addresses
// ("10.0.0.0/8, 192.0.2.7").
func ParseProxies(s string) (Proxies, error) {
	var out Proxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Contains(f, "/") {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("ratelimits: trusted proxy %q: %w", f, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("ratelimits: trusted proxy %q: %w", f, err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (ps Proxies) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address of whoever connected to us: API Gateway's
// requestContext.identity.sourceIp when the request came through the
// Lambda proxy adapter (only the adapter can put that context value there),
// else the socket's remote address.
func peerAddr(r *http.Request) netip.Addr {
	if rc, ok := core.GetAPIGatewayContextFromContext(r.Context()); ok {
		return parseHost(rc.Identity.SourceIP)
	}
	return parseHost(r.RemoteAddr)
}

// parseHost reads "ip", "ip:port" or "[ip]:port"; the zero Addr when none.
func parseHost(s string) netip.Addr {
	s = strings.TrimSpace(s)
	// Try the likely form first: a failed parse allocates its error.
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if ap, err := netip.ParseAddrPort(s); err == nil {
			return ap.Addr().Unmap()
		}
		return netip.Addr{}
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap()
	}
	return netip.Addr{}
}

// ClientAddr is the client's address as the trusted proxy chain tells it:
// the peer, unless the peer is a trusted proxy; then X-Forwarded-For is
// read from the right, skipping trusted proxies, and the first address
// that is not one is the client. An entry that does not parse ends the
// walk at the last trusted hop. A client that is not behind a trusted
// proxy cannot change its identity with the header.
func ClientAddr(r *http.Request, trusted Proxies) netip.Addr {
	client := peerAddr(r)
	if len(trusted) == 0 || !trusted.trusted(client) {
		return client
	}
	hdr := r.Header["X-Forwarded-For"]
	for i := len(hdr) - 1; i >= 0; i-- {
		v := hdr[i]
		for v != "" {
			var e string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				e, v = v[j+1:], v[:j]
			} else {
				e, v = v, ""
			}
			a := parseHost(e)
			if !a.IsValid() {
				return client
			}
			client = a
			if !trusted.trusted(a) {
				return client
			}
		}
	}
	return client
}

// presence reads which identity headers r carries. The API key is the
// credential the edge authenticates (X-Api-Key, or Authorization: Bearer),
// so switching headers does not escape the key's count.
func presence(r *http.Request) (p Presence, cred, user string) {
	cred = auth.Credential(r)
	user = strings.TrimSpace(r.Header.Get("X-User-Id"))
	return Presence{Key: cred != "", User: user != ""}, cred, user
}
