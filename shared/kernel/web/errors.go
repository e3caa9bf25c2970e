// Package web is the HTTP kernel shared by every route group: the interface's
// error shapes (FastAPI style), strict JSON decoding into 422 errors with a
// loc into the body, path and query parameter parsing, and middleware
// (request id, access log, panic recovery, body limit).
package web

import (
	"encoding/json"
	"errors"
	"fmt"
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

// FieldError is one entry of an HTTPValidationError.
type FieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// ValidationError is answered as 422 {"detail": [FieldError...]}.
type ValidationError struct {
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Errors) == 0 {
		return "validation error"
	}
	return fmt.Sprintf("validation error at %v: %s", e.Errors[0].Loc, e.Errors[0].Msg)
}

// Invalid returns a ValidationError with one entry.
func Invalid(loc []any, msg, typ string) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Loc: loc, Msg: msg, Type: typ}}}
}

// Problems collects validation errors; Err returns nil when there are none.
type Problems struct {
	list []FieldError
}

// Add records a problem at loc.
func (p *Problems) Add(loc []any, msg, typ string) {
	p.list = append(p.list, FieldError{Loc: append([]any(nil), loc...), Msg: msg, Type: typ})
}

// Len is the number of problems recorded.
func (p *Problems) Len() int { return len(p.list) }

// Err returns a *ValidationError, or nil.
func (p *Problems) Err() error {
	if len(p.list) == 0 {
		return nil
	}
	return &ValidationError{Errors: p.list}
}

// Loc builds a loc path: Loc("body", "source_config", "cpu").
func Loc(parts ...any) []any { return parts }

// WriteJSON writes v with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error gets here (unmarshalable value).
		status = http.StatusInternalServerError
		b = []byte(`{"detail":"Internal server error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
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
	switch {
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
