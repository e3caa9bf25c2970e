package builds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrNonPublic: a hosted build refused to connect to a loopback, private,
// link-local or otherwise non-public address, or to follow a redirect off
// https.
var ErrNonPublic = errors.New("refusing to connect to a non-public address")

// errTooBig: the repository download exceeded MaxDownloadBytes.
var errTooBig = errors.New("repository download too large")

// MaxDownloadBytes bounds one clone's HTTP responses.
var MaxDownloadBytes int64 = 1 << 30

type policyKey struct{}

// withNetPolicy marks ctx: allowLocal lets the clone reach non-public
// addresses (the local integration). Without a mark, only public addresses
// are reached.
func withNetPolicy(ctx context.Context, allowLocal bool) context.Context {
	return context.WithValue(ctx, policyKey{}, allowLocal)
}

func allowLocalFrom(ctx context.Context) bool {
	v, _ := ctx.Value(policyKey{}).(bool)
	return v
}

// guardedDial resolves the host itself and dials only addresses the policy
// allows, so a name that resolves (or re-resolves, DNS rebinding) to a
// private address is refused at connect time.
func guardedDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port in %s", addr)
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		allowLocal := allowLocalFrom(ctx)
		if !allowLocal {
			for _, ip := range ips {
				if !deployments.PublicAddr(ip) {
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

// limitedTransport caps response bodies.
type limitedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if tr := traceFrom(req.Context()); tr != nil {
		tr.record(resp)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// go-git appends an error answer's whole body to its error, which
		// ends in the revision's status and build log: the body of
		// whatever server the URL named (an internal one, locally) must
		// not. The status is kept (httpTrace).
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		_ = resp.Body.Close()
		resp.Body = http.NoBody
		return resp, nil
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.limit}
	return resp, nil
}

// httpTrace keeps the last HTTP answer of one clone: what its failure
// reports instead of the server's words.
type httpTrace struct {
	mu          sync.Mutex
	status      int
	contentType string
}

type traceKey struct{}

func withTrace(ctx context.Context, tr *httpTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, tr)
}

func traceFrom(ctx context.Context) *httpTrace {
	tr, _ := ctx.Value(traceKey{}).(*httpTrace)
	return tr
}

func (tr *httpTrace) record(resp *http.Response) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.status = resp.StatusCode
	tr.contentType = resp.Header.Get("Content-Type")
	if len(tr.contentType) > 100 {
		tr.contentType = tr.contentType[:100]
	}
}

// last returns the status and content type of the last answer (0 when
// none came).
func (tr *httpTrace) last() (int, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.status, tr.contentType
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooBig
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// guardedHTTPClient is the HTTP client of every clone: no proxy from the
// environment (it would bypass the address check), the guarded dialer, a
// response size cap, and redirects only to https unless local repositories
// are allowed.
func guardedHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           guardedDial(d),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	return &http.Client{
		Transport: limitedTransport{next: tr, limit: MaxDownloadBytes},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if !allowLocalFrom(req.Context()) && req.URL.Scheme != "https" {
				return fmt.Errorf("%w: redirect to %s", ErrNonPublic, req.URL.Scheme)
			}
			return nil
		},
	}
}

var installOnce sync.Once

// installTransports makes go-git's http and https clones use the guarded
// client (go-git keeps one protocol table per process). file, ssh and git
// URLs never reach go-git's transports: local repositories are opened
// directly, and other schemes are refused before cloning.
func installTransports() {
	installOnce.Do(func() {
		c := githttp.NewClient(guardedHTTPClient())
		client.InstallProtocol("https", c)
		client.InstallProtocol("http", c)
	})
}
