// Package fault is how domains say what went wrong, without speaking HTTP:
// a kind (not found, conflict, invalid input, ...) and a detail for the
// caller, or field problems with the location of each bad input. The HTTP
// edge (shared/kernel/web) maps kinds to status codes and the interface's
// error shapes; other edges (the CLI, the tool server) can map them their
// own way.
package fault

import "fmt"

// Kind classifies an error for the edges.
type Kind int

const (
	// BadRequest: the request cannot be done as asked (400).
	BadRequest Kind = iota + 1
	// Unauthenticated: no or a bad credential (401).
	Unauthenticated
	// Forbidden: the caller may not do this (403).
	Forbidden
	// NotFound: no such object, or one the caller may not see (404).
	NotFound
	// Conflict: the object's state does not allow it (409).
	Conflict
	// TooLarge: the input or the result is too large to store (413).
	TooLarge
	// Unavailable: try again later (503), after RetryAfter seconds.
	Unavailable
)

// Error is a domain error with a detail for the caller.
type Error struct {
	Kind   Kind
	Detail string
	// RetryAfter, in seconds, for Unavailable (0: not said).
	RetryAfter int
}

func (e *Error) Error() string { return e.Detail }

func newf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// Constructors, one per kind.
func Bad(format string, args ...any) *Error       { return newf(BadRequest, format, args...) }
func Denied(format string, args ...any) *Error    { return newf(Forbidden, format, args...) }
func Missing(format string, args ...any) *Error   { return newf(NotFound, format, args...) }
func Clash(format string, args ...any) *Error     { return newf(Conflict, format, args...) }
func Oversize(format string, args ...any) *Error  { return newf(TooLarge, format, args...) }
func Anonymous(format string, args ...any) *Error { return newf(Unauthenticated, format, args...) }

// Busy is an Unavailable error that asks to retry after seconds.
func Busy(seconds int, format string, args ...any) *Error {
	e := newf(Unavailable, format, args...)
	e.RetryAfter = seconds
	return e
}

// FieldError is one bad input: where (loc, e.g. ["body", "name"]), what,
// and a machine-readable type.
type FieldError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// ValidationError lists bad inputs (answered as 422 over HTTP).
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

// Problems collects bad inputs; Err returns nil when there are none.
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

// Loc builds a location: Loc("body", "source_config", "cpu").
func Loc(parts ...any) []any { return parts }
