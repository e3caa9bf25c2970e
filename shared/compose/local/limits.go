package local

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Limits bound what one client can hold on the server: how long its
// request may take to arrive, and how many connections it may keep open.
// A request body has no overall deadline, so a long upload that keeps
// sending is never cut; a body that stalls or trickles is.
type Limits struct {
	// HeaderTimeout bounds reading a request's line and headers
	// (AGENTPLANE_HEADER_TIMEOUT, default 10s).
	HeaderTimeout time.Duration
	// BodyIdleTimeout is the longest wait for the next bytes of a request
	// body (AGENTPLANE_BODY_IDLE_TIMEOUT, default 30s; 0 disables).
	BodyIdleTimeout time.Duration
	// BodyMinRate is the least average rate of a body in bytes per second,
	// once BodyIdleTimeout has passed (AGENTPLANE_BODY_MIN_RATE, default
	// 1024; 0 disables). With the 8 MiB body limit, a body therefore
	// takes at most 30s + 8 MiB / 1 KiB/s, about 2.3 hours, even sent
	// as slowly as allowed.
	BodyMinRate int64
	// IdleTimeout closes a kept-alive connection without requests
	// (AGENTPLANE_IDLE_TIMEOUT, default 120s).
	IdleTimeout time.Duration
	// MaxConnsPerClient bounds the open connections of one client address
	// (an IPv6 /64 counts as one); more are answered 429 and closed
	// (AGENTPLANE_MAX_CONNS_PER_CLIENT, default 128; 0 disables).
	MaxConnsPerClient int
	// MaxHeaderBytes bounds the request line and headers; larger requests
	// are answered 431 (AGENTPLANE_MAX_HEADER_BYTES, default 1 MiB).
	MaxHeaderBytes int
}

// DefaultLimits are the limits of an unconfigured server.
func DefaultLimits() Limits {
	return Limits{
		HeaderTimeout:     10 * time.Second,
		BodyIdleTimeout:   30 * time.Second,
		BodyMinRate:       1024,
		IdleTimeout:       120 * time.Second,
		MaxConnsPerClient: 128,
		MaxHeaderBytes:    1 << 20,
	}
}

// LimitsFromEnv reads the AGENTPLANE_* overrides of DefaultLimits.
// Durations are Go durations ("30s", "2m").
func LimitsFromEnv() (Limits, error) {
	l := DefaultLimits()
	var errs []error
	dur := func(name string, dst *time.Duration, zeroOK bool) {
		raw := os.Getenv(name)
		if raw == "" {
			return
		}
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 || (d == 0 && !zeroOK) {
			errs = append(errs, fmt.Errorf("%s must be a positive duration such as 30s, not %q", name, raw))
			return
		}
		*dst = d
	}
	num := func(name string, dst *int64, min int64) {
		raw := os.Getenv(name)
		if raw == "" {
			return
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("%s must be an integer of at least %d, not %q", name, min, raw))
			return
		}
		*dst = n
	}
	dur("AGENTPLANE_HEADER_TIMEOUT", &l.HeaderTimeout, false)
	dur("AGENTPLANE_BODY_IDLE_TIMEOUT", &l.BodyIdleTimeout, true)
	dur("AGENTPLANE_IDLE_TIMEOUT", &l.IdleTimeout, false)
	num("AGENTPLANE_BODY_MIN_RATE", &l.BodyMinRate, 0)
	conns, header := int64(l.MaxConnsPerClient), int64(l.MaxHeaderBytes)
	num("AGENTPLANE_MAX_CONNS_PER_CLIENT", &conns, 0)
	num("AGENTPLANE_MAX_HEADER_BYTES", &header, 4096)
	if header > 64<<20 {
		errs = append(errs, fmt.Errorf("AGENTPLANE_MAX_HEADER_BYTES must be at most %d", 64<<20))
	}
	l.MaxConnsPerClient, l.MaxHeaderBytes = int(min(conns, 1<<30)), int(min(header, 64<<20))
	if len(errs) > 0 {
		return l, errs[0]
	}
	return l, nil
}

func (l Limits) bodyTimeouts() web.BodyTimeouts {
	return web.BodyTimeouts{Idle: l.BodyIdleTimeout, MinRate: l.BodyMinRate, Grace: max(l.BodyIdleTimeout, time.Second)}
}
