// Package web is the HTTP kernel shared by every route group: the interface's
// error shapes (FastAPI style), strict JSON decoding into 422 errors with a
// loc into the body, path and query parameter parsing, and middleware
// (request id, access log, panic recovery, body limit).
package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"log/slog"
	"net/http"
	"strconv"
)

// Error is an HTTP error answered as {"detail": "..."}.
type Error struct {
	Status int
	Detail string
	// Header holds extra response headers (e.g. Retry-After).
	Header http.Header
}

func (e *Error) Error() string { return fmt.Sprintf("%d: %s", e.Status, e.Detail) }

// Errorf builds an *Error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Detail: fmt.Sprintf(format, args...)}
}

// Common errors.
func BadRequest(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, format, args...)
}
func NotFound(format string, args ...any) *Error { return Errorf(http.StatusNotFound, format, args...) }
func Conflict(format string, args ...any) *Error { return Errorf(http.StatusConflict, format, args...) }
func Forbidden(format string, args ...any) *Error {
	return Errorf(http.StatusForbidden, format, args...)
}

// Unauthorized answers 401.
func Unauthorized(detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, Detail: detail}
}

// The validation vocabulary is the fault package's: domains build it
// without importing the HTTP kernel, and WriteError answers it as 422.
type (
	FieldError      = fault.FieldError
	ValidationError = fault.ValidationError
	Problems        = fault.Problems
)

// Invalid returns a ValidationError with one entry.
func Invalid(loc []any, msg, typ string) *ValidationError { return fault.Invalid(loc, msg, typ) }

// Loc builds a loc path: Loc("body", "source_config", "cpu").
func Loc(parts ...any) []any { return parts }

// statusOf maps a fault kind to its HTTP status.
var statusOf = map[fault.Kind]int{
	fault.BadRequest:      http.StatusBadRequest,
	fault.Unauthenticated: http.StatusUnauthorized,
	fault.Forbidden:       http.StatusForbidden,
	fault.NotFound:        http.StatusNotFound,
	fault.Conflict:        http.StatusConflict,
	fault.TooLarge:        http.StatusRequestEntityTooLarge,
	fault.Unavailable:     http.StatusServiceUnavailable,
}

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error gets here (unmarshalable value).
		status = http.StatusInternalServerError
		b = []byte(`{"detail":"Internal server error"}`)
	}
	WriteJSONBytes(w, status, b)
}

// WriteJSONBytes writes b, an encoded JSON value, with status.
func WriteJSONBytes(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	// Canonical keys assigned directly: Set would canonicalize them again.
	// The two values share one allocation; each slice's capacity ends at
	// its own value, so appending to one never writes over the other.
	v := []string{"application/json", strconv.Itoa(len(b))}
	h["Content-Type"] = v[0:1:1]
	h["Content-Length"] = v[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// NoContent writes 204 with no body (WriteHeader is always called, so the
// Lambda proxy never sees an unset status).
func NoContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

// WriteError answers err in the interface's shapes. Unknown errors are
// logged and answered as a 500 without internals.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var he *Error
	var ve *ValidationError
	var fe *fault.Error
	switch {
	case errors.As(err, &fe) && statusOf[fe.Kind] != 0:
		if fe.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(fe.RetryAfter))
		}
		WriteJSON(w, statusOf[fe.Kind], map[string]string{"detail": fe.Detail})
	case errors.As(err, &he):
		for k, vs := range he.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		WriteJSON(w, he.Status, map[string]string{"detail": he.Detail})
	case errors.As(err, &ve):
		WriteJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": ve.Errors})
	default:
		Logger(r.Context()).Error("request failed", slog.String("error", err.Error()))
		WriteJSON(w, http.StatusInternalServerError, map[string]string{"detail": "Internal server error"})
	}
}

// HandlerFunc is an http handler that may return an error, answered with
// WriteError. It implements http.Handler.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

func (f HandlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		WriteError(w, r, err)
	}
}
