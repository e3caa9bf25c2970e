package builds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/netguard"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// ErrNonPublic: a hosted build refused to connect to a loopback, private,
// link-local or otherwise non-public address, or to follow a redirect off
// https.
var ErrNonPublic = netguard.ErrNonPublic

// errTooBig: the repository download exceeded MaxDownloadBytes.
var errTooBig = netguard.ErrTooLarge

// MaxDownloadBytes bounds one clone's HTTP responses.
var MaxDownloadBytes int64 = 1 << 30

// withNetPolicy marks ctx: allowLocal lets the clone reach non-public
// addresses (the local integration). Without a mark, only public addresses
// are reached.
var withNetPolicy = netguard.WithAllowLocal

// quietErrors records each answer's status in the clone's httpTrace and
// drops the body of error answers: go-git appends an error answer's whole
// body to its error, which would end in the revision's status and build
// log, and the body of whatever server the URL named (an internal one,
// locally) must not.
type quietErrors struct{ next http.RoundTripper }

func (t quietErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if tr := traceFrom(req.Context()); tr != nil {
		tr.record(resp)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		_ = resp.Body.Close()
		resp.Body = http.NoBody
	}
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

// guardedHTTPClient is the HTTP client of every clone: the kernel's guarded
// transport (connect-time address checks, no proxy from the environment, a
// response size cap), and redirects only to https unless local
// repositories are allowed.
func guardedHTTPClient() *http.Client {
	return &http.Client{
		Transport: quietErrors{netguard.NewTransport(netguard.TransportOptions{
			MaxResponseBytes:      MaxDownloadBytes,
			DialTimeout:           30 * time.Second,
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
		})},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if !netguard.AllowLocal(req.Context()) && req.URL.Scheme != "https" {
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
