// Package billing counts an organization's billable usage (traces
// ingested, ...) from usage events that the ingesting domains publish on
// the billing.usage topic, and answers the LangSmith-compatible usage API,
// GET /api/v1/orgs/current/billing/usage.
//
// Billing data lives only in the billing home region (the US). A service
// built with Options.Home is a region that is not the home: it records
// nothing and keeps no billing item; it hands every usage event to the home
// region and reads usage from it (see docs/billing.md).
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// TopicUsage is the queue topic of usage events; Service.Consume is its
// consumer. Publishers send an Event as the payload.
const TopicUsage = "billing.usage"

// MetricTraces is the usage metric of traces ingested (root runs): the one
// every answer reports, zero when nothing was ingested.
const MetricTraces = "traces"

// Event is one usage event, the payload of TopicUsage:
//
//	{"id": "...", "organization_id": "<uuid>", "workspace_id": "<uuid>",
//	 "metric": "traces", "quantity": 3, "at": "2025-09-01T12:00:00Z"}
//
// id is the idempotency key: a redelivered event (same organization and id)
// is counted once. It must be stable across retries of what produced the
// event: "traces:<trace_id>" for one event per new trace, or the ingest
// message's own id with the number of traces it created.
type Event struct {
	ID             string    `json:"id"`
	OrganizationID string    `json:"organization_id"`
	WorkspaceID    string    `json:"workspace_id"`
	Metric         string    `json:"metric"`
	Quantity       int64     `json:"quantity"`
	At             time.Time `json:"at"`
}

// Home is the billing home region as seen from a region that is not it.
// The composition implements it over the regions' link: Forward sends the
// event to the home region's billing.usage queue, Usage runs the query
// there (where Service.Usage answers it) and returns its result.
type Home interface {
	Forward(ctx context.Context, ev Event) error
	Usage(ctx context.Context, q Query) ([]MetricUsage, error)
}

var (
	// ErrInvalidEvent: a usage event that cannot be recorded (malformed,
	// or outside the window in which its idempotency is guaranteed).
	// Retrying it cannot help.
	ErrInvalidEvent = errors.New("billing: invalid usage event")
	// ErrNotHome: this region is not the billing home; it records nothing.
	ErrNotHome = errors.New("billing: this region is not the billing home region")
	// ErrInvalidQuery: a usage query with bad dates.
	ErrInvalidQuery = errors.New("billing: invalid usage query")
	// ErrHomeUnavailable: the home region did not answer a usage query.
	ErrHomeUnavailable = errors.New("billing: the billing home region is unavailable")
)

// FieldError says which field of an event or query is wrong. It matches
// ErrInvalidEvent or ErrInvalidQuery with errors.Is.
type FieldError struct {
	Field string
	Msg   string
	kind  error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%v: %s: %s", e.kind, e.Field, e.Msg) }

func (e *FieldError) Is(target error) bool { return target == e.kind }

func eventError(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), kind: ErrInvalidEvent}
}

func queryError(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...), kind: ErrInvalidQuery}
}

// Options configure a Service.
type Options struct {
	// Store holds the billing records. Required in the home region; unused
	// (may be nil) when Home is set.
	Store store.Store
	// Home, when set, makes this service a region that is not the billing
	// home: events are forwarded to Home and usage is read from it.
	Home Home
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Service records usage events and answers usage queries.
type Service struct {
	st   store.Store
	home Home
	log  *slog.Logger
	now  func() time.Time
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Home == nil && o.Store == nil {
		return nil, errors.New("billing: the billing home region needs a store")
	}
	s := &Service{st: o.Store, home: o.Home, log: o.Logger, now: o.Now}
	if o.Home != nil {
		// A non-home region must never write billing items, whatever it
		// was given.
		s.st = nil
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// IsHome reports whether this service records billing data.
func (s *Service) IsHome() bool { return s.home == nil }
