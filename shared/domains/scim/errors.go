package scim

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// scimType values of RFC 7644 §3.12.
const (
	InvalidFilter = "invalidFilter"
	TooMany       = "tooMany"
	Uniqueness    = "uniqueness"
	Mutability    = "mutability"
	InvalidSyntax = "invalidSyntax"
	InvalidPath   = "invalidPath"
	NoTarget      = "noTarget"
	InvalidValue  = "invalidValue"
	InvalidVers   = "invalidVers"
)

// Error is a SCIM error, answered with the RFC 7644 §3.12 body.
type Error struct {
	Status   int
	ScimType string
	Detail   string
	Header   http.Header
}

func (e *Error) Error() string { return fmt.Sprintf("scim %d %s: %s", e.Status, e.ScimType, e.Detail) }

func errorf(status int, scimType, format string, args ...any) *Error {
	return &Error{Status: status, ScimType: scimType, Detail: fmt.Sprintf(format, args...)}
}

func badRequest(scimType, format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, scimType, format, args...)
}

type errorBody struct {
	Schemas  []string `json:"schemas"`
	ScimType string   `json:"scimType,omitempty"`
	Detail   string   `json:"detail"`
	// Status is the HTTP status as a string, as RFC 7644 requires.
	Status string `json:"status"`
}

// ContentType is the media type of every SCIM response.
const ContentType = "application/scim+json"

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"schemas":["`+URNError+`"],"detail":"Internal server error","status":"500"}`)
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers err as a SCIM error; errors that are not *Error are
// logged and answered as a 500 without internals.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	var se *Error
	if !errors.As(err, &se) {
		web.Logger(r.Context()).Error("scim request failed", slog.String("error", err.Error()))
		se = &Error{Status: http.StatusInternalServerError, Detail: "Internal server error"}
	}
	for k, vs := range se.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	writeJSON(w, se.Status, errorBody{Schemas: []string{URNError}, ScimType: se.ScimType, Detail: se.Detail, Status: strconv.Itoa(se.Status)})
}

// handlerFunc is a SCIM handler that may return an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (f handlerFunc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		writeError(w, r, err)
	}
}
