package regions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Options configure a Region.
type Options struct {
	// Client makes the calls to the other region (default: an
	// http.Client with a 10 s timeout).
	Client *http.Client
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock of the lookup cache (default time.Now).
	Now func() time.Time
	// MaxLookups bounds the concurrent lookups in the other region
	// (default 16): beyond it a credential unknown here is answered as
	// unknown at once, so a flood of bad keys cannot pile up calls.
	MaxLookups int
	// LookupTimeout bounds one lookup (default 3 s).
	LookupTimeout time.Duration
}

// Region is this process's region at run time: its configuration and its
// link to the other region. A nil *Region is a region-unaware process (no
// checks, no link).
type Region struct {
	cfg      Config
	linkHash [sha256.Size]byte
	client   *http.Client
	log      *slog.Logger
	now      func() time.Time
	sem      chan struct{}
	timeout  time.Duration

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	home    Name // "" when the other region does not know it
	expires time.Time
}

// Cache bounds of lookups in the other region. A found credential stays
// found for a while (an organization's region never changes; a revoked
// key is then answered 421 for at most foundTTL, and 401 in its region);
// an unknown one is asked again soon (it may have just been created).
const (
	foundTTL   = 10 * time.Minute
	unknownTTL = 30 * time.Second
	maxCached  = 10000
)

// New returns the Region of cfg (which Check validates here too).
func New(cfg Config, o Options) (*Region, error) {
	if err := cfg.Check(cfg.Hosted.Of(cfg.Region).APIURL, false); err != nil {
		return nil, err
	}
	r := &Region{cfg: cfg, client: o.Client, log: o.Logger, now: o.Now, timeout: o.LookupTimeout, cache: map[string]cached{}}
	r.linkHash = sha256.Sum256([]byte(cfg.LinkToken))
	if r.client == nil {
		r.client = &http.Client{Timeout: 10 * time.Second}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.timeout <= 0 {
		r.timeout = 3 * time.Second
	}
	n := o.MaxLookups
	if n <= 0 {
		n = 16
	}
	r.sem = make(chan struct{}, n)
	return r, nil
}

// Name is this region's name.
func (r *Region) Name() Name { return r.cfg.Region }

// Config returns the configuration.
func (r *Region) Config() Config { return r.cfg }

// Document is what GET /api/v1/regions publishes.
func (r *Region) Document() Document { return r.cfg.Document() }

// Linked reports whether the other region is reachable over the link.
func (r *Region) Linked() bool { return r.cfg.PeerURL != "" }

// Misdirected is the error for a request about something whose home is
// region home; what names it ("This API key's organization"), cause is the
// local error it replaces (may be nil).
func (r *Region) Misdirected(home Name, what string, cause error) *MisdirectedError {
	return &MisdirectedError{Home: home, Here: r.cfg.Region, APIURL: r.cfg.Hosted.Of(home).APIURL, What: what, cause: cause}
}

// CheckHome returns a MisdirectedError when home is set and is not this
// region. An empty home is this region: records written before regions
// existed live in the store they were written to.
func (r *Region) CheckHome(home Name, what string) error {
	if r == nil || home == "" || home == r.cfg.Region {
		return nil
	}
	return r.Misdirected(home, what, nil)
}

// --- the link: authenticated calls between the regions ---

// LinkPrefix starts every route of the region link. They are served on
// the public API, but each answers only a caller holding the link token.
const LinkPrefix = "/internal/regions/v1"

// ErrNoLink: the regions are not linked (no peer configured).
var ErrNoLink = errors.New("regions: the other region is not configured (AGENTPLANE_PEER_URL)")

// VerifyLink checks a region link request's token
// (Authorization: Bearer <AGENTPLANE_REGION_LINK_TOKEN>), compared as a
// SHA-256 digest in constant time. Without a link the routes do not exist
// (404).
func (r *Region) VerifyLink(req *http.Request) error {
	if r == nil || !r.Linked() {
		return web.NotFound("Not Found")
	}
	h := req.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return web.Unauthorized("Missing region link token")
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(h[7:])))
	if subtle.ConstantTimeCompare(got[:], r.linkHash[:]) != 1 {
		return web.Unauthorized("Invalid region link token")
	}
	return nil
}

// PeerError is an answer of the other region that is not a success.
type PeerError struct {
	Status int
	Detail string
}

func (e *PeerError) Error() string {
	return fmt.Sprintf("regions: the other region answered %d: %s", e.Status, e.Detail)
}

// Call sends in as JSON to the other region's path (under LinkPrefix) and
// decodes a 200 answer into out. Other answers are *PeerError.
func (r *Region) Call(ctx context.Context, path string, in, out any) error {
	if r == nil || !r.Linked() {
		return ErrNoLink
	}
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.PeerURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.cfg.LinkToken)
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("regions: calling the %s region: %w", r.cfg.Region.Other().Label(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("regions: reading the %s region's answer: %w", r.cfg.Region.Other().Label(), err)
	}
	if resp.StatusCode != http.StatusOK {
		pe := &PeerError{Status: resp.StatusCode}
		var d struct {
			Detail json.RawMessage `json:"detail"`
		}
		if json.Unmarshal(raw, &d) == nil && len(d.Detail) > 0 {
			var s string
			if json.Unmarshal(d.Detail, &s) == nil {
				pe.Detail = s
			} else {
				pe.Detail = string(d.Detail)
			}
		}
		if len(pe.Detail) > 500 {
			pe.Detail = pe.Detail[:500]
		}
		return pe
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("regions: the %s region's answer: %w", r.cfg.Region.Other().Label(), err)
	}
	return nil
}
