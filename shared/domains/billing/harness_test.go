package billing_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

// edgeAuth adapts identity.Service to api.Authenticator (its request
// authenticator is named AuthenticateRequest).
type edgeAuth struct{ *identity.Service }

func (a edgeAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	return a.AuthenticateRequest(r)
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// countingStore counts the items queries return (the cost of a read).
type countingStore struct {
	store.Store
	read atomic.Int64
}

func (c *countingStore) Query(ctx context.Context, q store.Query) (store.Page, error) {
	p, err := c.Store.Query(ctx, q)
	c.read.Add(int64(len(p.Items)))
	return p, err
}

const adminKey = "ap_test_admin_key_0123456789abcdef"

// env is the billing API over HTTP on 127.0.0.1, with a real identity
// service, a bbolt store and the route mounted as the composition mounts it.
type env struct {
	t     testing.TB
	st    *countingStore
	idn   *identity.Service
	svc   *billing.Service
	srv   *httptest.Server
	clock *clock
	org   string
	ws    string
}

// now0 is today, noon UTC: idempotency records expire by the store's
// wall clock, so tests of redelivery run at the real date.
var now0 = time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)

// w0 and w1 bound a range around now0.
var w0, w1 = now0.Add(-36 * time.Hour), now0.Add(36 * time.Hour)

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith builds an env; home, when set, makes it a non-home region.
func newEnvWith(t testing.TB, home billing.Home) *env {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	e := &env{t: t, st: &countingStore{Store: bs}, clock: &clock{t: now0}}
	e.idn = identity.New(bs)
	boot, err := e.idn.Bootstrap(context.Background(), adminKey)
	if err != nil {
		t.Fatal(err)
	}
	e.org, e.ws = boot.Organization.ID, boot.Workspace.ID
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.svc, err = billing.New(billing.Options{Store: e.st, Home: home, Logger: logger, Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	api.Mount(mux, billing.Routes, billing.NewHandler(e.svc), api.Edge{Auth: edgeAuth{e.idn}})
	e.srv = httptest.NewServer(web.Chain(mux, web.Observe(logger)))
	t.Cleanup(e.srv.Close)
	return e
}

// event is a valid usage event of the env's organization at the clock.
func (e *env) event(ws string, qty int64) billing.Event {
	return billing.Event{ID: uuid.NewString(), OrganizationID: e.org, WorkspaceID: ws, Metric: billing.MetricTraces, Quantity: qty, At: e.clock.now()}
}

// consume delivers ev as the queue would: its JSON payload to Consume.
func (e *env) consume(ev any) error {
	if raw, ok := ev.(json.RawMessage); ok {
		return e.svc.Consume(context.Background(), raw)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.svc.Consume(context.Background(), b)
}

func (e *env) mustConsume(ev any) {
	e.t.Helper()
	if err := e.consume(ev); err != nil {
		e.t.Fatalf("consume: %v", err)
	}
}

// get calls the usage route with the raw query string.
func (e *env) get(key, rawQuery string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+billing.UsagePath+"?"+rawQuery, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, body
}

// usage reads usage between two instants and returns it by metric name.
func (e *env) usage(key string, from, to time.Time) map[string]billing.MetricUsage {
	e.t.Helper()
	q := url.Values{"starting_on": {from.Format(time.RFC3339)}, "ending_before": {to.Format(time.RFC3339)}, "on_current_plan": {"true"}}
	status, body := e.get(key, q.Encode())
	if status != http.StatusOK {
		e.t.Fatalf("usage: %d %s", status, body)
	}
	var list []billing.MetricUsage
	if err := json.Unmarshal(body, &list); err != nil {
		e.t.Fatalf("usage body %s: %v", body, err)
	}
	out := map[string]billing.MetricUsage{}
	for _, m := range list {
		out[m.BillableMetricName] = m
	}
	return out
}

// newOrg creates another organization with a workspace and an admin key.
func (e *env) newOrg(name string) (org, ws, key string) {
	e.t.Helper()
	ctx := context.Background()
	o, err := e.idn.CreateOrganization(ctx, identity.Organization{DisplayName: name})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := e.idn.CreateWorkspace(ctx, o.ID, name+" ws")
	if err != nil {
		e.t.Fatal(err)
	}
	_, key, err = e.idn.CreateAPIKey(ctx, identity.NewKey{OrganizationID: o.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		e.t.Fatal(err)
	}
	return o.ID, w.ID, key
}

// day is midnight UTC of a date.
func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func storeQuery(pk string) store.Query { return store.Query{PK: pk} }
