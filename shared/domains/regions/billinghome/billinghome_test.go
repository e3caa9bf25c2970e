package billinghome_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/domains/regions/billinghome"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

var token = strings.Repeat("T", 40)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func region(t *testing.T, name regions.Name, peer string) *regions.Region {
	t.Helper()
	cfg := regions.Config{Region: name, PeerURL: peer, LinkToken: token}
	cfg.Hosted.US.APIURL = "https://api.us.example.com"
	cfg.Hosted.EU.APIURL = "https://api.eu.example.com"
	r, err := regions.New(cfg, regions.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// home is a billing home (US) serving the link routes over a bolt store.
type home struct {
	svc *billing.Service
	srv *httptest.Server
}

func newHome(t *testing.T) *home {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "us.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc, err := billing.New(billing.Options{Store: st, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	api.Mount(mux, billinghome.Routes, billinghome.NewHandler(svc, region(t, regions.US, "https://api.eu.example.com")), api.Edge{})
	h := &home{svc: svc, srv: httptest.NewServer(mux)}
	t.Cleanup(h.srv.Close)
	return h
}

// queue records what the AWS form would send to the US queue.
type queue struct{ sent []json.RawMessage }

func (q *queue) Enqueue(_ context.Context, topic string, payload any) error {
	if topic != billing.TopicUsage {
		return errors.New("wrong topic " + topic)
	}
	b, err := json.Marshal(payload)
	q.sent = append(q.sent, b)
	return err
}

func TestRemoteOverHTTP(t *testing.T) {
	us := newHome(t)
	remote, err := billinghome.NewRemote(region(t, regions.EU, us.srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	eu, err := billing.New(billing.Options{Home: remote, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	org, ws := uuid.NewString(), uuid.NewString()
	now := time.Now().UTC()
	ev := billing.Event{ID: "e1", OrganizationID: org, WorkspaceID: ws, Metric: billing.MetricTraces, Quantity: 4, At: now}
	for range 2 { // a redelivery is counted once
		b, _ := json.Marshal(ev)
		if err := eu.Consume(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	q := billing.Query{OrganizationID: org, StartingOn: now.Add(-time.Hour), EndingBefore: now.Add(time.Hour), AllWorkspaces: true}
	got, err := eu.Usage(ctx, q)
	if err != nil || len(got) != 1 || got[0].Value != 4 || got[0].Groups[ws] != 4 {
		t.Fatalf("usage through the link: %+v %v", got, err)
	}
	// The workspace filter decided in the EU holds in the US.
	q.AllWorkspaces, q.Workspaces = false, []string{uuid.NewString()}
	if got, err := eu.Usage(ctx, q); err != nil || got[0].Value != 0 {
		t.Fatalf("filtered: %+v %v", got, err)
	}
	// The US went away: events fail (the EU queue retries), usage is 503.
	us.srv.Close()
	b, _ := json.Marshal(billing.Event{ID: "e2", OrganizationID: org, WorkspaceID: ws, Metric: billing.MetricTraces, Quantity: 1, At: now})
	if err := eu.Consume(ctx, b); err == nil {
		t.Error("an event was dropped while the home was down")
	}
	if _, err := eu.Usage(ctx, q); !errors.Is(err, billing.ErrHomeUnavailable) {
		t.Errorf("usage with the home down: %v", err)
	}
}

func TestRemoteOverQueue(t *testing.T) {
	q := &queue{}
	remote, err := billinghome.NewRemote(region(t, regions.EU, "https://api.us.example.com"), q)
	if err != nil {
		t.Fatal(err)
	}
	ev := billing.Event{ID: "e1", OrganizationID: uuid.NewString(), WorkspaceID: uuid.NewString(), Metric: "traces", Quantity: 1, At: time.Now().UTC()}
	if err := remote.Forward(context.Background(), ev); err != nil || len(q.sent) != 1 {
		t.Fatalf("%v %d", err, len(q.sent))
	}
	var back billing.Event
	if err := json.Unmarshal(q.sent[0], &back); err != nil || back.ID != "e1" || back.Quantity != 1 {
		t.Errorf("sent %s", q.sent[0])
	}
}

func TestNewRemoteRefuses(t *testing.T) {
	if _, err := billinghome.NewRemote(nil, nil); err == nil || !strings.Contains(err.Error(), regions.EnvPeerURL) {
		t.Errorf("nil link: %v", err)
	}
	unlinked, err := regions.New(regions.Config{Region: regions.EU}, regions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := billinghome.NewRemote(unlinked, nil); err == nil || !strings.Contains(err.Error(), "EU region keeps no billing data") {
		t.Errorf("unlinked: %v", err)
	}
	if _, err := billinghome.NewRemote(region(t, regions.US, "https://api.eu.example.com"), nil); err == nil {
		t.Error("the home region made a remote of itself")
	}
}

func TestLinkRoutes(t *testing.T) {
	us := newHome(t)
	org, ws := uuid.NewString(), uuid.NewString()
	event := func(id string, qty any) string {
		b, _ := json.Marshal(map[string]any{"id": id, "organization_id": org, "workspace_id": ws, "metric": "traces", "quantity": qty, "at": time.Now().UTC()})
		return string(b)
	}
	post := func(srv *httptest.Server, path, auth, body string) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		path, auth, body string
		status           int
		contains         string
	}{
		{billinghome.EventsPath, token, event("a", 3), 200, `"recorded"`},
		{billinghome.EventsPath, token, event("a", 3), 200, `"recorded"`},
		{billinghome.EventsPath, "", event("b", 1), 401, "Missing region link token"},
		{billinghome.EventsPath, "wrong" + token, event("b", 1), 401, "Invalid region link token"},
		{billinghome.EventsPath, token, event("c", 0), 422, `"loc":["body","quantity"]`},
		{billinghome.EventsPath, token, `{"id":`, 422, "detail"},
		{billinghome.EventsPath, token, strings.Repeat(" ", 70<<10), 413, "larger"},
		{billinghome.UsagePath, token, `{"organization_id":"` + org + `","starting_on":"2000-01-01T00:00:00Z","ending_before":"2000-01-02T00:00:00Z","all_workspaces":true,"newer_field":1}`, 200, `"value":0`},
		{billinghome.UsagePath, token, `{"organization_id":"acme"}`, 422, `"loc":["body","organization_id"]`},
		{billinghome.UsagePath, token, `[1]`, 422, "Invalid JSON"},
		{billinghome.UsagePath, "", `{}`, 401, "Missing"},
	}
	for _, c := range cases {
		status, body := post(us.srv, c.path, c.auth, c.body)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s %.60q: %d %s, want %d with %q", c.path, c.body, status, body, c.status, c.contains)
		}
	}
	now := time.Now().UTC()
	got, err := us.svc.Usage(context.Background(), billing.Query{OrganizationID: org, StartingOn: now.Add(-time.Hour), EndingBefore: now.Add(time.Hour), AllWorkspaces: true})
	if err != nil || got[0].Value != 3 {
		t.Errorf("recorded %+v %v", got, err)
	}

	// A region that is not the billing home answers its link routes 421.
	remote, _ := billinghome.NewRemote(region(t, regions.EU, us.srv.URL), nil)
	euSvc, _ := billing.New(billing.Options{Home: remote, Logger: quiet})
	mux := web.NewMux()
	api.Mount(mux, billinghome.Routes, billinghome.NewHandler(euSvc, region(t, regions.EU, us.srv.URL)), api.Edge{})
	eu := httptest.NewServer(mux)
	defer eu.Close()
	if status, body := post(eu, billinghome.EventsPath, token, event("d", 1)); status != 421 || !strings.Contains(body, "US region") {
		t.Errorf("EU events route: %d %s", status, body)
	}
	// Without a link the routes do not exist.
	single, _ := regions.New(regions.Config{Region: regions.US}, regions.Options{})
	mux = web.NewMux()
	api.Mount(mux, billinghome.Routes, billinghome.NewHandler(us.svc, single), api.Edge{})
	alone := httptest.NewServer(mux)
	defer alone.Close()
	if status, _ := post(alone, billinghome.UsagePath, token, `{}`); status != 404 {
		t.Errorf("unlinked: %d", status)
	}
}
