package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

type ctxKey int

const (
	loggerKey ctxKey = iota
	requestIDKey
)

// RequestIDHeader carries the request id on every response.
const RequestIDHeader = "X-Request-Id"

// Logger returns the request-scoped logger (with request_id), or the default.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// RequestID returns the request id of ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// WithLogger returns ctx carrying l (for background work).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey, l)
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
			w.Header().Set(RequestIDHeader, id)
			log := base.With(slog.String("request_id", id))
			ctx := context.WithValue(context.WithValue(r.Context(), requestIDKey, id), loggerKey, log)
			r = r.WithContext(ctx)
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					log.Error("panic", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
					if sw.status == 0 {
						WriteJSON(sw, http.StatusInternalServerError, map[string]string{"detail": "Internal server error"})
					}
				}
				if sw.status == 0 {
					sw.WriteHeader(http.StatusOK)
				}
				// The path is logged without the query string: queries may
				// carry tokens, and headers (API keys) are never logged.
				log.Info("request",
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.Int("status", sw.status),
					slog.Int("bytes", sw.bytes),
					slog.Duration("duration", time.Since(start)))
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
