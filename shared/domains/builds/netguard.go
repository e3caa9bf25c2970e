package builds

import (
	"errors"
	"fmt"
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

// guardedHTTPClient is the HTTP client of every clone: the kernel's guarded
// transport (connect-time address checks, no proxy from the environment, a
// response size cap), and redirects only to https unless local
// repositories are allowed.
func guardedHTTPClient() *http.Client {
	return &http.Client{
		Transport: netguard.NewTransport(netguard.TransportOptions{
			MaxResponseBytes:      MaxDownloadBytes,
			DialTimeout:           30 * time.Second,
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
		}),
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
