package ratelimits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Config is what the composition decides.
type Config struct {
	// Enabled turns limiting on: always in AWS mode; locally with
	// AGENTPLANE_RATE_LIMITS=on (off by default: a laptop is not the
	// hosted platform).
	Enabled bool
	// Region selects the table's column (AGENTPLANE_REGION_NAME, us or eu).
	Region Region
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// (AGENTPLANE_TRUSTED_PROXIES, comma-separated CIDRs or addresses).
	TrustedProxies Proxies
}

// Environment variables read by ConfigFromEnv.
const (
	EnvRateLimits     = "AGENTPLANE_RATE_LIMITS"
	EnvRegion         = "AGENTPLANE_REGION_NAME"
	EnvTrustedProxies = "AGENTPLANE_TRUSTED_PROXIES"
)

// ConfigFromEnv reads the configuration through getenv (os.Getenv). In
// AWS mode limiting is always on, and AGENTPLANE_RATE_LIMITS=off is an
// error rather than silently ignored.
func ConfigFromEnv(getenv func(string) string, awsMode bool) (Config, error) {
	var c Config
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvRateLimits))); v {
	case "":
		c.Enabled = awsMode
	case "on", "true", "1":
		c.Enabled = true
	case "off", "false", "0":
		if awsMode {
			return c, fmt.Errorf("%s=%s: rate limits are always on in AWS mode", EnvRateLimits, v)
		}
	default:
		return c, fmt.Errorf("%s=%q: want on or off", EnvRateLimits, v)
	}
	region := getenv(EnvRegion)
	if strings.TrimSpace(region) == "" {
		region = string(US)
	}
	var err error
	if c.Region, err = ParseRegion(region); err != nil {
		return c, fmt.Errorf("%s: %w", EnvRegion, err)
	}
	if c.TrustedProxies, err = ParseProxies(getenv(EnvTrustedProxies)); err != nil {
		return c, fmt.Errorf("%s: %w", EnvTrustedProxies, err)
	}
	return c, nil
}

// Options configure a Service.
type Options struct {
	Config Config
	// Limiter counts: NewMemoryLimiter locally, NewStoreLimiter in AWS.
	// Required when Config.Enabled.
	Limiter Limiter
	// Logger receives the warnings of limiter faults; default slog.Default.
	Logger *slog.Logger
	// Now paces those warnings; default time.Now.
	Now func() time.Time
}

// Service is the HTTP edge of the rate limits.
type Service struct {
	cfg     Config
	lim     Limiter
	log     *slog.Logger
	now     func() time.Time
	limits  [][]string // per row: the RateLimit-Limit header value
	wrapped atomic.Bool
	outer   atomic.Bool
	// fault warnings: at most one per warnEvery, with the count skipped.
	lastWarn atomic.Int64
	skipped  atomic.Int64
}

const warnEvery = 10 * time.Second

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Config.Region == "" {
		o.Config.Region = US
	}
	if _, err := ParseRegion(string(o.Config.Region)); err != nil {
		return nil, err
	}
	if o.Config.Enabled && o.Limiter == nil {
		return nil, errors.New("ratelimits: Options.Limiter is required when rate limits are enabled")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{cfg: o.Config, lim: o.Limiter, log: o.Logger, now: o.Now}
	for _, r := range rows {
		if err := checkRate(r.Rate(o.Config.Region)); err != nil {
			return nil, fmt.Errorf("row %d: %w", r.Seq, err)
		}
		s.limits = append(s.limits, []string{strconv.FormatInt(r.Rate(o.Config.Region).Count, 10)})
	}
	s.lastWarn.Store(-int64(warnEvery))
	return s, nil
}

// Enabled reports whether requests are limited.
func (s *Service) Enabled() bool { return s.cfg.Enabled }

// Region is the column in use.
func (s *Service) Region() Region { return s.cfg.Region }

// Wrap is an api.Edge.Wrap: it counts each request of a declared route
// before authentication and the handler run. The row comes from the
// request's method and path (not from spec), so a route is limited by the
// table whatever it declares; the composition checks spec.Limit against
// Category.
func (s *Service) Wrap(_ api.Spec, next http.Handler) http.Handler {
	if !s.cfg.Enabled {
		return next
	}
	s.wrapped.Store(true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.outer.Load() && r.Context().Value(countedKey{}) != nil {
			next.ServeHTTP(w, r) // already counted by Handler
			return
		}
		s.serve(w, r, next, false)
	})
}

// Handler counts every request that reaches next: put it around the whole
// mux so paths outside the route table (404, 405) are limited too. Used
// together with Wrap, a request is counted once.
func (s *Service) Handler(next http.Handler) http.Handler {
	if !s.cfg.Enabled {
		return next
	}
	s.outer.Store(true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, next, true)
	})
}

type countedKey struct{}

func (s *Service) serve(w http.ResponseWriter, r *http.Request, next http.Handler, outer bool) {
	row, d, err := s.take(r)
	if outer && s.wrapped.Load() {
		r = r.WithContext(context.WithValue(r.Context(), countedKey{}, true))
	}
	if err != nil {
		s.warn(r, row, err)
		next.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h["Ratelimit-Limit"] = s.limits[row]
	h["Ratelimit-Remaining"] = []string{strconv.FormatInt(d.Remaining, 10)}
	h["Ratelimit-Reset"] = []string{strconv.FormatInt(seconds(d.Reset), 10)}
	if !d.Allowed {
		rt := max(seconds(d.RetryAfter), 1)
		h["Retry-After"] = []string{strconv.FormatInt(rt, 10)}
		rate := rows[row].Rate(s.cfg.Region)
		web.WriteJSON(w, http.StatusTooManyRequests, map[string]string{"detail": fmt.Sprintf(
			"Rate limit exceeded: %s allows %d requests per %d seconds. Retry in %d seconds.",
			rows[row].Category, rate.Count, int64(rate.Interval/time.Second), rt)})
		return
	}
	next.ServeHTTP(w, r)
}

// seconds rounds up: a client that waits that long is admitted.
func seconds(d time.Duration) int64 {
	return int64((max(d, 0) + time.Second - 1) / time.Second)
}

// Classify returns the row r is counted against, the limiter key (row and
// identity) and the rate that applies in the configured region.
func (s *Service) Classify(r *http.Request) (Row, Key, Rate) {
	i, k := s.classify(r)
	return rowAt(i), k, rows[i].Rate(s.cfg.Region)
}

func (s *Service) classify(r *http.Request) (int, Key) {
	p, cred, user := presence(r)
	i := selectRow(r.Method, r.URL.Path, p, false)
	row := &rows[i]
	k := Key{Row: uint8(row.Seq), Kind: row.Identity}
	switch row.Identity {
	case ByAPIKey:
		k.ID = apiKeyID(cred)
	case ByUserIP:
		k.ID = userIPID(user, addrID(ClientAddr(r, s.cfg.TrustedProxies)))
	default:
		k.ID = addrID(ClientAddr(r, s.cfg.TrustedProxies))
	}
	return i, k
}

// take selects r's row and counts r against it.
func (s *Service) take(r *http.Request) (int, Decision, error) {
	i, k := s.classify(r)
	d, err := s.lim.Take(r.Context(), k, rows[i].Rate(s.cfg.Region))
	return i, d, err
}

// warn logs a limiter fault (the request is admitted), at most once per
// warnEvery, with how many were not logged since.
func (s *Service) warn(r *http.Request, row int, err error) {
	now := s.now().UnixNano()
	last := s.lastWarn.Load()
	if now-last < int64(warnEvery) || !s.lastWarn.CompareAndSwap(last, now) {
		s.skipped.Add(1)
		return
	}
	s.log.Warn("rate limiter unavailable: request admitted without counting",
		slog.String("row", rows[row].Name()), slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.String("error", err.Error()), slog.Int64("unlogged_since_last", s.skipped.Swap(0)))
}
