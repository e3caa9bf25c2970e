// Package billinghome joins the billing domain across the regions: Remote
// is billing.Home for a region that is not the billing home (the EU), and
// Routes are the billing home's (the US) side of the region link. Usage
// events are forwarded to the home's billing.usage queue (SQS in AWS) or
// posted to its events route (locally); usage is read from its usage
// route. Billing records are written only in the home region.
package billinghome

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Routes of the billing home on the region link.
const (
	UsagePath  = regions.LinkPrefix + "/billing/usage"
	EventsPath = regions.LinkPrefix + "/billing/events"
)

// Publisher sends a topic's message to the billing home's queue.
type Publisher interface {
	Enqueue(ctx context.Context, topic string, payload any) error
}

// Remote is the billing home seen from another region.
type Remote struct {
	link   *regions.Region
	events Publisher
}

var _ billing.Home = (*Remote)(nil)

// NewRemote returns the billing home of a region that is not it, over
// link. events, when set, receives forwarded events (the home's SQS queue
// in AWS); when nil they are posted to the home's events route (locally).
func NewRemote(link *regions.Region, events Publisher) (*Remote, error) {
	if link == nil || !link.Linked() {
		return nil, fmt.Errorf("billinghome: the %s region keeps no billing data and must reach the billing home (%s): set %s and %s",
			nameOf(link), regions.BillingHome.Label(), regions.EnvPeerURL, regions.EnvLinkToken)
	}
	if link.Name() == regions.BillingHome {
		return nil, errors.New("billinghome: the billing home region records usage itself")
	}
	return &Remote{link: link, events: events}, nil
}

func nameOf(r *regions.Region) string {
	if r == nil {
		return "this"
	}
	return r.Name().Label()
}

// Forward hands ev to the billing home: onto its billing.usage queue, or
// to its events route, where it is recorded (idempotently, by its id).
func (h *Remote) Forward(ctx context.Context, ev billing.Event) error {
	if h.events != nil {
		return h.events.Enqueue(ctx, billing.TopicUsage, ev)
	}
	return h.link.Call(ctx, EventsPath, ev, nil)
}

// Usage runs q in the billing home. Any failure there is an unavailable
// home for the caller (q was validated here already).
func (h *Remote) Usage(ctx context.Context, q billing.Query) ([]billing.MetricUsage, error) {
	var out []billing.MetricUsage
	if err := h.link.Call(ctx, UsagePath, q, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("billinghome: the billing home answered no usage")
	}
	return out, nil
}

// Handler serves the billing home's link routes.
type Handler struct {
	svc  *billing.Service
	link *regions.Region
}

// NewHandler returns the link routes' handler over the home region's
// billing service.
func NewHandler(svc *billing.Service, link *regions.Region) *Handler {
	return &Handler{svc: svc, link: link}
}

// Routes are served by the billing group of every region; only the
// billing home answers them (another region answers 421), and only to a
// caller holding the region link token.
var Routes = api.Group[*Handler]{
	Name:        billing.Routes.Name,
	Description: billing.Routes.Description,
	Routes: []api.Route[*Handler]{
		{Method: http.MethodPost, Path: UsagePath, Summary: "Region link: an organization's usage, read in the billing home for another region",
			Auth: api.Own, Body: billing.Query{}, Result: []billing.MetricUsage{}, Handle: (*Handler).usage},
		{Method: http.MethodPost, Path: EventsPath, Summary: "Region link: record a usage event forwarded by another region",
			Auth: api.Own, Body: billing.Event{}, Result: recorded{}, Handle: (*Handler).event},
	},
}

type recorded struct {
	Status string `json:"status"`
}

// maxBody bounds a link request's body (a query or an event is small).
const maxBody = 64 << 10

func (h *Handler) check(r *http.Request) ([]byte, error) {
	if err := h.link.VerifyLink(r); err != nil {
		return nil, err
	}
	if !h.svc.IsHome() {
		return nil, h.link.Misdirected(regions.BillingHome, "Billing data", nil)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, web.BadRequest("Could not read the body")
	}
	if len(body) > maxBody {
		return nil, web.Errorf(http.StatusRequestEntityTooLarge, "The body is larger than %d bytes", maxBody)
	}
	return body, nil
}

func (h *Handler) usage(w http.ResponseWriter, r *http.Request) error {
	body, err := h.check(r)
	if err != nil {
		return err
	}
	// Not strict: a newer region may send fields this one ignores.
	var q billing.Query
	if err := json.Unmarshal(body, &q); err != nil {
		return web.Invalid(web.Loc("body"), "Invalid JSON: "+err.Error(), "json_invalid")
	}
	out, err := h.svc.Usage(r.Context(), q)
	var fe *billing.FieldError
	if errors.As(err, &fe) {
		return web.Invalid(web.Loc("body", fe.Field), "Value error, "+fe.Msg, "value_error")
	}
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) event(w http.ResponseWriter, r *http.Request) error {
	body, err := h.check(r)
	if err != nil {
		return err
	}
	err = h.svc.Consume(r.Context(), body)
	var fe *billing.FieldError
	switch {
	case errors.As(err, &fe):
		return web.Invalid(web.Loc("body", fe.Field), "Value error, "+fe.Msg, "value_error")
	case errors.Is(err, billing.ErrInvalidEvent):
		return web.Invalid(web.Loc("body"), "Value error, "+err.Error(), "value_error")
	case err != nil:
		return &web.Error{Status: http.StatusServiceUnavailable, Detail: "The usage event could not be recorded; retry", Header: http.Header{"Retry-After": {"1"}}}
	}
	web.WriteJSON(w, http.StatusOK, recorded{Status: "recorded"})
	return nil
}
