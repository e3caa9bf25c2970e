package web

import (
	"context"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

type ctxKey int

const (
	loggerKey ctxKey = iota
	requestKey
)

// requestInfo is what Observe puts in a request's context: its id, and
// the logger carrying it, made only when something asks for it (most
// requests log nothing but their access line).
type requestInfo struct {
	id   string
	base *slog.Logger
	once sync.Once
	log  *slog.Logger
}

func (ri *requestInfo) logger() *slog.Logger {
	ri.once.Do(func() { ri.log = ri.base.With(slog.String("request_id", ri.id)) })
	return ri.log
}

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "X-Request-Id"

// Logger returns the request-scoped logger (with request_id), or the default.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	if ri, ok := ctx.Value(requestKey).(*requestInfo); ok {
		return ri.logger()
	}
	return slog.Default()
}

// RequestID returns the request id of ctx, or "".
func RequestID(ctx context.Context) string {
	if ri, ok := ctx.Value(requestKey).(*requestInfo); ok {
		return ri.id
	}
	return ""
}

// WithLogger returns ctx carrying l (for background work).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

// newRequestID returns 96 random bits in hex. A request id needs to be
// unique, not secret: the runtime's per-thread generator is enough and
// costs no system call.
func newRequestID() string {
	var b [12]byte
	x, y := rand.Uint64(), rand.Uint32()
	for i := 0; i < 8; i++ {
		b[i] = byte(x >> (8 * i))
	}
	for i := 0; i < 4; i++ {
		b[8+i] = byte(y >> (8 * i))
	}
	var out [2 * len(b)]byte
	hex.Encode(out[:], b[:])
	return string(out[:])
}

// validRequestID accepts a caller's id only when it is short and printable,
// so it cannot inject into logs or headers.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// statusWriter records the status and size for the access log and makes
// sure a status is always written.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Middleware wraps a handler.
type Middleware func(http.Handler) http.Handler

// Chain applies mws so that the first is outermost.
func Chain(h http.Handler, mws ...Middleware) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// Observe assigns a request id (kept from X-Request-Id when well-formed),
// echoes it on the response, puts a logger carrying it in the context, logs
// one access line per request, turns panics into a 500 JSON body without a
// stack trace (the stack goes to the log only), and always writes a status.
func Observe(base *slog.Logger) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			id := r.Header.Get(RequestIDHeader)
			if !validRequestID(id) {
				id = newRequestID()
			}
			w.Header()[RequestIDHeader] = []string{id}
			// One allocation for both.
			obs := &struct {
				ri requestInfo
				sw statusWriter
			}{ri: requestInfo{id: id, base: base}, sw: statusWriter{ResponseWriter: w}}
			ri, sw := &obs.ri, &obs.sw
			r = r.WithContext(context.WithValue(r.Context(), requestKey, ri))
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					ri.logger().Error("panic", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
					if sw.status == 0 {
						WriteJSON(sw, http.StatusInternalServerError, map[string]string{"detail": "Internal server error"})
					}
				}
				if sw.status == 0 {
					sw.WriteHeader(http.StatusOK)
				}
				// The path is logged without the query string: queries may
				// carry tokens, and headers (API keys) are never logged.
				// LogAttrs and the level check keep the line's cost to its
				// encoding (nothing at all when info is off).
				if base.Enabled(r.Context(), slog.LevelInfo) {
					base.LogAttrs(r.Context(), slog.LevelInfo, "request",
						slog.String("request_id", id),
						slog.String("method", r.Method),
						slog.String("path", r.URL.Path),
						slog.Int("status", sw.status),
						slog.Int("bytes", sw.bytes),
						slog.Duration("duration", time.Since(start)))
				}
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// MaxBody limits request bodies to n bytes (413 when exceeded, see DecodeJSON).
func MaxBody(n int64) Middleware {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				WriteError(w, r, Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", n))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}
