package billing_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/google/uuid"
)

func TestUsageThroughHTTP(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ws2, err := e.idn.CreateWorkspace(ctx, e.org, "second")
	if err != nil {
		t.Fatal(err)
	}
	// July 20 to September 10, at the clock of each event.
	at := func(d time.Time, ws string, metric string, qty int64) {
		e.clock.set(d.Add(13 * time.Hour))
		ev := e.event(ws, qty)
		ev.Metric = metric
		e.mustConsume(ev)
	}
	at(day(2025, 7, 19), e.ws, "traces", 1000) // before the range
	at(day(2025, 7, 20), e.ws, "traces", 1)
	at(day(2025, 7, 31), ws2.ID, "traces", 2)
	at(day(2025, 8, 1), e.ws, "traces", 10)
	at(day(2025, 8, 31), ws2.ID, "traces", 20)
	at(day(2025, 8, 15), e.ws, "deployment_runtime_seconds", 3600)
	at(day(2025, 9, 9), e.ws, "traces", 100)
	at(day(2025, 9, 10), e.ws, "traces", 5000) // on ending_before: outside
	e.clock.set(now0)

	got := e.usage(adminKey, day(2025, 7, 20), day(2025, 9, 10))
	tr := got["traces"]
	if tr.Value != 133 || tr.Groups[e.ws] != 111 || tr.Groups[ws2.ID] != 22 || len(tr.Groups) != 2 {
		t.Errorf("traces %+v", tr)
	}
	if tr.StartTimestamp != "2025-07-20T00:00:00Z" || tr.EndTimestamp != "2025-09-10T00:00:00Z" {
		t.Errorf("timestamps %s %s", tr.StartTimestamp, tr.EndTimestamp)
	}
	if tr.CustomerID != e.org || tr.BillableMetricID != billing.MetricID("traces") {
		t.Errorf("ids %s %s", tr.CustomerID, tr.BillableMetricID)
	}
	if rt := got["deployment_runtime_seconds"]; rt.Value != 3600 || rt.Groups[e.ws] != 3600 {
		t.Errorf("runtime %+v", rt)
	}
	// A day is counted when the range overlaps it; the answer says so.
	got = e.usage(adminKey, day(2025, 8, 31).Add(23*time.Hour), day(2025, 9, 9).Add(time.Minute))
	if tr := got["traces"]; tr.Value != 120 || tr.StartTimestamp != "2025-08-31T00:00:00Z" || tr.EndTimestamp != "2025-09-10T00:00:00Z" {
		t.Errorf("unaligned range: %+v", tr)
	}
	// Nothing in range: the traces metric is still reported, with zero.
	status, body := e.get(adminKey, "starting_on=2024-01-01&ending_before=2024-02-01")
	if status != http.StatusOK || !strings.Contains(string(body), `"billable_metric_name":"traces","start_timestamp":"2024-01-01T00:00:00Z","end_timestamp":"2024-02-01T00:00:00Z","value":0,"groups":{}`) {
		t.Errorf("empty range: %d %s", status, body)
	}
	// The query forms clients send: dates, offsets (encoded or not),
	// fractions, Python's True.
	for _, q := range []string{
		"starting_on=2025-07-20&ending_before=2025-09-10",
		"starting_on=2025-07-20T02:00:00%2B02:00&ending_before=2025-09-10T00:00:00.000Z&on_current_plan=True",
		"starting_on=2025-07-20T02:00:00+02:00&ending_before=2025-09-10T00:00:00&on_current_plan=false",
	} {
		status, body := e.get(adminKey, q)
		var list []billing.MetricUsage
		if status != http.StatusOK || json.Unmarshal(body, &list) != nil || len(list) != 2 || list[1].Value != 133 {
			t.Errorf("%s: %d %s", q, status, body)
		}
	}
}

func TestIdempotentAndConcurrent(t *testing.T) {
	e := newEnv(t)
	ev := e.event(e.ws, 7)
	for range 3 {
		e.mustConsume(ev)
	}
	// The same id with other content is a publisher bug: not counted again.
	reused := ev
	reused.Quantity = 1000
	e.mustConsume(reused)
	if err := e.svc.Record(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got := e.usage(adminKey, w0, w1)["traces"].Value; got != 7 {
		t.Fatalf("after redeliveries: %d, want 7", got)
	}

	// 64 distinct events, each delivered twice, all at once.
	var events []billing.Event
	var want int64 = 7
	for i := range 64 {
		ev := e.event(e.ws, int64(i+1))
		events = append(events, ev, ev)
		want += int64(i + 1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(events))
	for _, ev := range events {
		wg.Go(func() {
			if err := e.consume(ev); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := e.usage(adminKey, w0, w1)["traces"].Value; got != want {
		t.Fatalf("after concurrent events: %d, want %d", got, want)
	}
}

func TestInvalidEvents(t *testing.T) {
	e := newEnv(t)
	good := func() map[string]any {
		return map[string]any{
			"id": "evt-1", "organization_id": e.org, "workspace_id": e.ws, "metric": "traces",
			"quantity": 1, "at": now0.Format(time.RFC3339),
		}
	}
	with := func(k string, v any) map[string]any {
		m := good()
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := map[string]any{
		"not json":      json.RawMessage(`{"id":`),
		"array":         []any{good()},
		"no id":         with("id", nil),
		"empty id":      with("id", ""),
		"long id":       with("id", strings.Repeat("x", 201)),
		"control id":    with("id", "a\nb"),
		"no org":        with("organization_id", nil),
		"bad org":       with("organization_id", "acme"),
		"bad ws":        with("workspace_id", "12345678123456781234567812345678"),
		"no metric":     with("metric", nil),
		"bad metric":    with("metric", "Traces!"),
		"zero quantity": with("quantity", 0),
		"negative":      with("quantity", -5),
		"fractional":    with("quantity", 1.5),
		"string qty":    with("quantity", "3"),
		"huge":          with("quantity", 1e15),
		"no at":         with("at", nil),
		"bad at":        with("at", "yesterday"),
		"old":           with("at", now0.Add(-31*24*time.Hour).Format(time.RFC3339)),
		"future":        with("at", now0.Add(25*time.Hour).Format(time.RFC3339)),
	}
	for name, payload := range cases {
		err := e.consume(payload)
		var fe *billing.FieldError
		if !errors.Is(err, billing.ErrInvalidEvent) || !errors.As(err, &fe) {
			t.Errorf("%s: %v, want ErrInvalidEvent", name, err)
		}
	}
	if got := e.usage(adminKey, w0, w1)["traces"]; got.Value != 0 || len(got.Groups) != 0 {
		t.Errorf("invalid events were counted: %+v", got)
	}
	// Unknown fields are ignored (another region may run a newer version).
	e.mustConsume(with("source", "eu"))
	if got := e.usage(adminKey, w0, w1)["traces"].Value; got != 1 {
		t.Errorf("valid event with an extra field: %d", got)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	type check struct {
		key, query string
		status     int
		loc        string
	}
	okRange := "starting_on=2025-09-01&ending_before=2025-10-01"
	cases := []check{
		{"", okRange, 401, ""},
		{"ap_wrong_key_0123456789abcdefghij", okRange, 401, ""},
		{adminKey, "", 422, "starting_on"},
		{adminKey, "starting_on=2025-09-01", 422, "ending_before"},
		{adminKey, "ending_before=2025-09-01", 422, "starting_on"},
		{adminKey, "starting_on=yesterday&ending_before=2025-10-01", 422, "starting_on"},
		{adminKey, "starting_on=2025-13-01&ending_before=2025-10-01", 422, "starting_on"},
		{adminKey, "starting_on=2025-09-01&ending_before=2025-09-01", 422, "ending_before"},
		{adminKey, "starting_on=2025-10-01&ending_before=2025-09-01", 422, "ending_before"},
		{adminKey, "starting_on=2024-01-01&ending_before=2025-01-02", 422, "ending_before"},
		{adminKey, "starting_on=0001-01-01&ending_before=2025-01-02", 422, "starting_on"},
		{adminKey, okRange + "&on_current_plan=maybe", 422, "on_current_plan"},
		{adminKey, "starting_on=%ff&ending_before=%00", 422, "starting_on"},
		{adminKey, "starting_on=2024-01-01&ending_before=2025-01-01", 200, ""},
	}
	for _, c := range cases {
		status, body := e.get(c.key, c.query)
		if status != c.status {
			t.Errorf("%q: %d %s, want %d", c.query, status, body, c.status)
			continue
		}
		if status == 200 {
			continue
		}
		var detail struct {
			Detail json.RawMessage `json:"detail"`
		}
		if err := json.Unmarshal(body, &detail); err != nil || len(detail.Detail) == 0 {
			t.Errorf("%q: body %s is not a detail", c.query, body)
		}
		if c.loc != "" && !strings.Contains(string(detail.Detail), `["query","`+c.loc+`"]`) {
			t.Errorf("%q: %s, want loc query.%s", c.query, body, c.loc)
		}
	}
	// Odd inputs never get a server error.
	for _, v := range []string{"", " ", "+", "2025", "2025-09", "2025-09-01T", "2025-09-01T25:00:00Z", "9999-12-31T23:59:59Z",
		"2025-09-01T00:00:00+99:00", "1970-01-01", "2025-09-01 00:00:00", strings.Repeat("9", 500), "\x00", "2025-09-01T00:00:00.1234567891234Z"} {
		for _, q := range []string{
			url.Values{"starting_on": {v}, "ending_before": {"2025-10-01"}}.Encode(),
			url.Values{"starting_on": {"2025-01-01"}, "ending_before": {v}}.Encode(),
			"starting_on=" + url.QueryEscape(v) + "&ending_before=" + url.QueryEscape(v),
		} {
			if status, body := e.get(adminKey, q); status >= 500 {
				t.Errorf("%q: %d %s", q, status, body)
			}
		}
	}
}

func TestTenantIsolationAndRoles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ws2, err := e.idn.CreateWorkspace(ctx, e.org, "second")
	if err != nil {
		t.Fatal(err)
	}
	e.mustConsume(e.event(e.ws, 3))
	e.mustConsume(e.event(ws2.ID, 4))

	// Another organization sees nothing of this one, and the reverse.
	org2, ws3, key2 := e.newOrg("Other")
	got := e.usage(key2, w0, w1)["traces"]
	if got.Value != 0 || len(got.Groups) != 0 || got.CustomerID != org2 {
		t.Errorf("other org sees %+v", got)
	}
	ev := e.event(ws3, 50)
	ev.OrganizationID = org2
	e.mustConsume(ev)
	if got := e.usage(key2, w0, w1)["traces"]; got.Value != 50 || got.Groups[ws3] != 50 {
		t.Errorf("other org's own usage: %+v", got)
	}
	if got := e.usage(adminKey, w0, w1)["traces"]; got.Value != 7 || len(got.Groups) != 2 {
		t.Errorf("first org after the other's event: %+v", got)
	}
	// The same event id in two organizations is two events.
	same := e.event(e.ws, 1)
	other := same
	other.OrganizationID, other.WorkspaceID = org2, ws3
	e.mustConsume(same)
	e.mustConsume(other)
	if a, b := e.usage(adminKey, w0, w1)["traces"].Value, e.usage(key2, w0, w1)["traces"].Value; a != 8 || b != 51 {
		t.Errorf("shared id: %d %d", a, b)
	}

	// A key that is not an org admin sees only the workspaces it reaches.
	_, viewerKey, err := e.idn.CreateAPIKey(ctx, identity.NewKey{OrganizationID: e.org, OrgRole: identity.RoleViewer,
		Workspaces: []identity.Grant{{WorkspaceID: ws2.ID, Role: identity.RoleViewer}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.usage(viewerKey, w0, w1)["traces"]; got.Value != 4 || len(got.Groups) != 1 || got.Groups[ws2.ID] != 4 {
		t.Errorf("viewer sees %+v", got)
	}
	_, noneKey, err := e.idn.CreateAPIKey(ctx, identity.NewKey{OrganizationID: e.org, OrgRole: identity.RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.usage(noneKey, w0, w1)["traces"]; got.Value != 0 || len(got.Groups) != 0 {
		t.Errorf("a key without workspaces sees %+v", got)
	}
}

func TestQueryCost(t *testing.T) {
	e := newEnv(t)
	ws2, err := e.idn.CreateWorkspace(context.Background(), e.org, "second")
	if err != nil {
		t.Fatal(err)
	}
	wss := []string{e.ws, ws2.ID}
	// A year of usage, every other day, in 2 workspaces.
	var want, edgeDays int64
	for d := day(2024, 9, 1); d.Before(day(2025, 9, 1)); d = d.AddDate(0, 0, 2) {
		e.clock.set(d.Add(time.Hour))
		for _, ws := range wss {
			e.mustConsume(e.event(ws, 1))
		}
		if !d.Before(day(2024, 9, 15)) {
			want += 2
			if d.Before(day(2024, 10, 1)) {
				edgeDays++
			}
		}
	}
	e.clock.set(now0)
	e.st.read.Store(0)
	got := e.usage(adminKey, day(2024, 9, 15), day(2025, 9, 1))["traces"]
	if got.Value != want {
		t.Fatalf("value %d, want %d", got.Value, want)
	}
	// The September 2024 days in range, then 11 whole months, per
	// workspace: not every day of the year.
	if read, plan := e.st.read.Load(), (edgeDays+11)*2; read != plan {
		t.Errorf("read %d items, want %d", read, plan)
	}
}

// link stands in for the regions' link: events and queries cross it as
// JSON, as they would over a queue and an HTTP call.
type link struct {
	us   *billing.Service
	down bool
}

func (l *link) Forward(ctx context.Context, ev billing.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return l.us.Consume(ctx, b)
}

func (l *link) Usage(ctx context.Context, q billing.Query) ([]billing.MetricUsage, error) {
	if l.down {
		return nil, errors.New("dial tcp: connection refused")
	}
	b, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	var remote billing.Query
	if err := json.Unmarshal(b, &remote); err != nil {
		return nil, err
	}
	return l.us.Usage(ctx, remote)
}

// TestDataResidency: a region that is not the billing home records
// nothing; its events are counted in the home region, and its usage route
// reads from there.
func TestDataResidency(t *testing.T) {
	us := newEnv(t)
	l := &link{us: us.svc}
	eu := newEnvWith(t, l)
	if eu.svc.IsHome() || !us.svc.IsHome() {
		t.Fatal("IsHome")
	}
	// An EU organization (its identity lives in the EU store) ingests.
	ev := eu.event(eu.ws, 9)
	eu.mustConsume(ev)
	eu.mustConsume(ev) // redelivered in the EU: still one event in the US
	if err := eu.svc.Record(context.Background(), eu.event(eu.ws, 1)); !errors.Is(err, billing.ErrNotHome) {
		t.Errorf("Record in the EU: %v", err)
	}
	// No billing item in the EU store.
	for _, pk := range []string{"billing#" + eu.org, "billing#evt#" + eu.org + "#" + ev.ID} {
		page, err := eu.st.Store.Query(context.Background(), storeQuery(pk))
		if err != nil || len(page.Items) != 0 {
			t.Errorf("EU store partition %s: %d items, %v", pk, len(page.Items), err)
		}
	}
	// The US store has them.
	page, err := us.st.Store.Query(context.Background(), storeQuery("billing#"+eu.org))
	if err != nil || len(page.Items) != 2 {
		t.Errorf("US store: %d items, %v", len(page.Items), err)
	}
	// The EU organization reads its usage through the EU API.
	got := eu.usage(adminKey, w0, w1)["traces"]
	if got.Value != 9 || got.Groups[eu.ws] != 9 || got.CustomerID != eu.org {
		t.Errorf("EU usage: %+v", got)
	}
	// Invalid events never leave the region.
	bad := ev
	bad.ID = uuid.NewString()
	bad.Quantity = 0
	if err := eu.consume(bad); !errors.Is(err, billing.ErrInvalidEvent) {
		t.Errorf("invalid EU event: %v", err)
	}
	// The home region unreachable: 503, not 500.
	l.down = true
	status, body := eu.get(adminKey, url.Values{"starting_on": {w0.Format(time.RFC3339)}, "ending_before": {w1.Format(time.RFC3339)}}.Encode())
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "billing home region") {
		t.Errorf("home down: %d %s", status, body)
	}
	// A non-home region needs no store; the home region does.
	if _, err := billing.New(billing.Options{Home: l}); err != nil {
		t.Error(err)
	}
	if _, err := billing.New(billing.Options{}); err == nil {
		t.Error("a home region without a store")
	}
}
