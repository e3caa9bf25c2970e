package billing

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the billing routes.
type Handler struct{ svc *Service }

// NewHandler returns the HTTP handler of svc.
func NewHandler(svc *Service) *Handler { return &Handler{svc: svc} }

// UsagePath is where the tool server's get_billing_usage reads usage.
const UsagePath = "/api/v1/orgs/current/billing/usage"

// Routes are the billing routes: one Lambda group, "billing". Any key of the
// organization may read usage (Viewer and up); an organization admin sees
// every workspace, other keys only the workspaces they were granted.
var Routes = api.Group[*Handler]{
	Name:        "billing",
	Description: "Organization billing usage, counted from ingest and kept in the billing home region (US)",
	Routes: []api.Route[*Handler]{{
		Method: http.MethodGet, Path: UsagePath,
		Summary: "Usage of the caller's organization per billable metric, grouped by workspace",
		Auth:    api.Key, Role: auth.RoleViewer,
		Result: []MetricUsage{},
		Query: []api.Param{
			{Name: "starting_on", Type: "string", Required: true, Description: "Start of the range (ISO 8601 date or date-time; UTC when no offset is given)."},
			{Name: "ending_before", Type: "string", Required: true, Description: "End of the range, exclusive; after starting_on, at most 366 days later."},
			{Name: "on_current_plan", Type: "boolean", Description: "Accepted for compatibility (default true); an organization has a single plan, so it does not change the answer."},
		},
		Handle: (*Handler).usage,
	}},
}

func (h *Handler) usage(w http.ResponseWriter, r *http.Request) error {
	var problems web.Problems
	start, ok := queryTime(r, "starting_on", &problems)
	end, ok2 := queryTime(r, "ending_before", &problems)
	if _, err := web.QueryBool(r, "on_current_plan", true); err != nil {
		problems.Add(web.Loc("query", "on_current_plan"), "Input should be a valid boolean, unable to interpret input", "bool_parsing")
	}
	if ok && ok2 {
		if !end.After(start) {
			problems.Add(web.Loc("query", "ending_before"), "Value error, ending_before must be after starting_on", "value_error")
		} else if end.Sub(start) > MaxRange {
			problems.Add(web.Loc("query", "ending_before"), "Value error, the range may span at most 366 days", "value_error")
		}
	}
	if err := problems.Err(); err != nil {
		return err
	}
	p := api.Caller(r)
	q := Query{OrganizationID: p.OrganizationID, StartingOn: start, EndingBefore: end}
	if p.OrgRole == auth.RoleAdmin {
		q.AllWorkspaces = true
	} else {
		q.Workspaces = p.Reachable()
	}
	out, err := h.svc.Usage(r.Context(), q)
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		return web.Invalid(web.Loc("query", fe.Field), "Value error, "+fe.Msg, "value_error")
	case errors.Is(err, ErrHomeUnavailable):
		return web.Errorf(http.StatusServiceUnavailable, "Billing usage is kept in the billing home region, which did not answer; try again later")
	case err != nil:
		return err
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

// queryTime parses a required date or date-time query parameter the way
// the Python and JS clients send them: RFC 3339, a date-time without offset
// (UTC), or a date (UTC midnight). A '+' of an offset that arrived
// unencoded (and so as a space) is restored.
func queryTime(r *http.Request, name string, p *web.Problems) (time.Time, bool) {
	raw := strings.TrimSpace(r.URL.Query().Get(name))
	if raw == "" {
		p.Add(web.Loc("query", name), "Field required", "missing")
		return time.Time{}, false
	}
	if i := strings.LastIndexByte(raw, ' '); i > 10 {
		raw = raw[:i] + "+" + raw[i+1:]
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		t, err := time.Parse(layout, raw)
		if err != nil {
			continue
		}
		if t.Year() < 1970 {
			p.Add(web.Loc("query", name), "Input should be a datetime after 1970-01-01", "datetime_past")
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	p.Add(web.Loc("query", name), "Input should be a valid datetime or date, invalid format", "datetime_from_date_parsing")
	return time.Time{}, false
}
