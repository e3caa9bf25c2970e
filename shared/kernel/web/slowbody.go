package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// BodyTimeouts bound how slowly a request body may arrive, without
// bounding how long it may take: a body that keeps arriving fast enough is
// read to its end, however long that is.
type BodyTimeouts struct {
	// Idle is the longest wait for the next bytes of a body (0: none).
	Idle time.Duration
	// MinRate, in bytes per second, is the least average rate of a body,
	// counted over the time spent waiting for it once Grace has passed
	// (0: none). A body of n bytes may thus wait Grace + n/MinRate in all.
	MinRate int64
	// Grace is the waiting time allowed before MinRate applies.
	Grace time.Duration
}

// ErrBodyTimeout is the error a body read returns when the client stopped
// sending (Idle) or sends too slowly (MinRate). DecodeJSON answers it 408.
var ErrBodyTimeout = errors.New("request body not received in time")

// SlowBodies enforces o on every request body with read deadlines on the
// connection (http.ResponseController): when the request arrives and
// before each read the deadline is set to the time the body may still
// wait, so a stalled or trickling client is cut off and its connection
// closed, while time the handler spends between reads does not count. Once
// the body is read to its end the deadline is lifted. Where the connection takes no
// deadlines (tests' recorders, the Lambda proxy, whose bodies are in
// memory) bodies are read as they are.
func SlowBodies(o BodyTimeouts) Middleware {
	return func(next http.Handler) http.Handler {
		if o.Idle <= 0 && o.MinRate <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
				b := &deadlineBody{rc: r.Body, ctl: http.NewResponseController(w), o: o}
				// Armed at once: a handler that answers without reading
				// the body makes net/http read (and discard) it before
				// the answer goes out, and that wait is bounded too.
				if d, ok := b.budget(); ok {
					b.set = b.ctl.SetReadDeadline(time.Now().Add(d)) == nil
				}
				r.Body = b
			}
			next.ServeHTTP(w, r)
		})
	}
}

type deadlineBody struct {
	rc  io.ReadCloser
	ctl *http.ResponseController
	o   BodyTimeouts
	// waited is the time spent in reads, n the bytes they returned.
	waited time.Duration
	n      int64
	// set: a deadline is on the connection; failed: the body timed out.
	set    bool
	failed error
}

// budget returns how long the next read may wait, or <= 0 when the body
// is already too slow; ok is false when nothing bounds it.
func (b *deadlineBody) budget() (d time.Duration, ok bool) {
	d, ok = b.o.Idle, b.o.Idle > 0
	if b.o.MinRate > 0 {
		allowed := b.o.Grace + time.Duration(float64(b.n)/float64(b.o.MinRate)*float64(time.Second))
		if left := allowed - b.waited; !ok || left < d {
			d, ok = left, true
		}
	}
	return d, ok
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.failed != nil {
		return 0, b.failed
	}
	d, bounded := b.budget()
	if bounded && d <= 0 {
		b.failed = fmt.Errorf("%w: it arrives slower than %d bytes per second", ErrBodyTimeout, b.o.MinRate)
		return 0, b.failed
	}
	start := time.Now()
	if bounded {
		// Unsupported (no connection to set it on): the body is read
		// as it is.
		b.set = b.ctl.SetReadDeadline(start.Add(d)) == nil
	}
	n, err := b.rc.Read(p)
	b.waited += time.Since(start)
	b.n += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		if b.o.Idle > 0 && d >= b.o.Idle {
			b.failed = fmt.Errorf("%w: no data for %s", ErrBodyTimeout, b.o.Idle)
		} else {
			b.failed = fmt.Errorf("%w: it arrives slower than %d bytes per second", ErrBodyTimeout, b.o.MinRate)
		}
		return n, b.failed
	case errors.Is(err, io.EOF):
		// The body is complete: the connection goes back to the
		// server's own deadlines (its background read must not time
		// out while the handler works).
		b.clear()
	}
	return n, err
}

func (b *deadlineBody) clear() {
	if b.set {
		_ = b.ctl.SetReadDeadline(time.Time{})
		b.set = false
	}
}

// Close leaves the deadline in place when the body was not read to its
// end: the server then discards what remains, and that must be bounded
// too.
func (b *deadlineBody) Close() error { return b.rc.Close() }

// BodyError turns an error reading a request body into the answer the
// client gets: 413 over the body limit (MaxBody), 408 when the body did
// not arrive in time (SlowBodies), else 400.
func BodyError(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", mbe.Limit)
	case errors.Is(err, ErrBodyTimeout):
		why := strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrBodyTimeout.Error()), ": ")
		if why == "" {
			why = "the client stopped sending"
		}
		return Errorf(http.StatusRequestTimeout, "Request body not received in time (%s): the connection is closed", why)
	}
	return BadRequest("Could not read request body")
}
