package deployments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/controlplanegroup"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const adminKey = "ap_test_controlplane_key_0123456789"

// env is a running all-in-one app over a data directory.
type env struct {
	t      testing.TB
	dir    string
	cfg    compose.Config
	app    *compose.Process
	srv    *httptest.Server
	cancel context.CancelFunc
	done   chan struct{}
	ws     string
}

func quiet() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }

func baseConfig(dir string) compose.Config {
	return compose.Config{Mode: compose.ModeLocal, DataDir: dir, Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error",
		WebhookSecret: "webhook-secret-for-tests"}
}

// start opens the app on dir (a new one when ""), serves it, and runs its
// background work (queue consumer, workflow runner resume, recovery).
func start(t testing.TB, dir string, mutate ...func(*compose.Config)) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := baseConfig(dir)
	for _, m := range mutate {
		m(&cfg)
	}
	app, err := local.New(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.P.Identity.Bootstrap(context.Background(), app.P.Config.BootstrapAPIKey)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, cfg: app.P.Config, app: app, ws: b.Workspace.ID, done: make(chan struct{})}
	e.srv = httptest.NewServer(app.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { defer close(e.done); _ = app.RunBackground(ctx) }()
	t.Cleanup(e.stop)
	return e
}

// stop shuts the app down as a process exit would: no new requests, the
// background work stops, the runner stops executions at their current step.
func (e *env) stop() {
	if e.app == nil {
		return
	}
	e.srv.Close()
	e.cancel()
	<-e.done
	if err := e.app.Close(); err != nil {
		e.t.Errorf("close: %v", err)
	}
	e.app = nil
}

func (e *env) service() *deployments.Service {
	svc, err := controlplanegroup.NewService(context.Background(), e.app.P)
	if err != nil {
		e.t.Fatal(err)
	}
	return svc
}

type resp struct {
	Code int
	Body string
}

func (r resp) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("not a JSON object (%d): %s", r.Code, r.Body)
	}
	return m
}

func (e *env) call(method, path string, body any, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = strings.NewReader(string(raw))
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	req.Header.Set("X-Api-Key", adminKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return resp{Code: res.StatusCode, Body: string(raw)}
}

// must calls and checks the status.
func (e *env) must(code int, method, path string, body any) map[string]any {
	e.t.Helper()
	r := e.call(method, path, body)
	if r.Code != code {
		e.t.Fatalf("%s %s: %d, want %d: %s", method, path, r.Code, code, r.Body)
	}
	if r.Body == "" {
		return nil
	}
	return r.JSON(e.t)
}

func (e *env) revision(dep, rev string) map[string]any {
	e.t.Helper()
	return e.must(200, "GET", "/v2/deployments/"+dep+"/revisions/"+rev, nil)
}

// waitRevision polls until the revision's status is one of want, and fails
// on any other terminal status.
func (e *env) waitRevision(dep, rev string, want ...string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := e.revision(dep, rev)
		st := r["status"].(string)
		for _, w := range want {
			if st == w {
				return r
			}
		}
		if terminal(st) {
			e.t.Fatalf("revision %s ended %s (%v), want %v; log:\n%s", rev, st, r["status_message"], want, e.logText(dep, rev))
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("revision %s still %s, want %v", rev, st, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func terminal(st string) bool {
	return deployments.RevisionStatus(st).Terminal()
}

func (e *env) logText(dep, rev string) string {
	r := e.call("GET", "/v2/deployments/"+dep+"/revisions/"+rev+"/logs?limit=1000", nil)
	if r.Code != 200 {
		return r.Body
	}
	var page struct {
		Resources []deployments.LogLine `json:"resources"`
	}
	_ = json.Unmarshal([]byte(r.Body), &page)
	var b strings.Builder
	for _, l := range page.Resources {
		fmt.Fprintf(&b, "[%s] %s\n", l.Step, l.Message)
	}
	return b.String()
}

// agentRepo makes a repository with a valid graph configuration.
func agentRepo(t testing.TB) *gittest.Repo {
	t.Helper()
	r := gittest.NewRepo(t, filepath.Join(t.TempDir(), "agent-repo"))
	r.Commit("initial agent", gittest.Agent("agent"))
	return r
}

func repoHostBody(name, repoURL string) map[string]any {
	return map[string]any{
		"name":   name,
		"source": "repo_host",
		"source_config": map[string]any{
			"repo_url": repoURL, "deployment_type": "dev", "build_on_push": false,
		},
		"source_revision_config": map[string]any{"repo_ref": "main", "graph_config_path": "langgraph.json"},
		"secrets":                []any{map[string]any{"name": "OPENAI_API_KEY", "value": "sk-test-123"}},
	}
}

func imageBody(name string) map[string]any {
	return map[string]any{
		"name": name, "source": "external_container",
		"source_config":          map[string]any{},
		"source_revision_config": map[string]any{"image_uri": "ghcr.io/acme/agent:1.0"},
		"secrets":                []any{},
	}
}

func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

func (e *env) revisions(dep string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	for offset := 0; ; {
		page := e.must(200, "GET", fmt.Sprintf("/v2/deployments/%s/revisions?limit=100&offset=%d", dep, offset), nil)
		res := page["resources"].([]any)
		for _, r := range res {
			out = append(out, r.(map[string]any))
		}
		if len(res) < 100 {
			return out
		}
		offset = int(page["offset"].(float64))
	}
}

func mustLocalKeeper(t testing.TB) secrets.Keeper {
	k, err := secrets.OpenLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func netLookup(host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
}

func anyPublic(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if deployments.PublicAddr(a) {
			return true
		}
	}
	return false
}

// httptestHandler serves the control-plane API of svc (authenticating with
// e's identity service) and returns a caller for it.
func httptestHandler(t testing.TB, svc *deployments.Service, e *env) *env {
	mux := web.NewMux()
	api.Mount(mux, deployments.Routes, deployments.NewHandler(svc), api.Edge{Auth: e.app.P.Identity})
	srv := httptest.NewServer(web.Chain(mux, web.Observe(quiet())))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, ws: e.ws}
}

// tracingProject waits (the control plane asks the tracing domain through
// the queue) until the workspace's project of that name exists, or is gone
// when !present, and returns it.
func (e *env) tracingProject(name string, present bool) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.call("GET", "/sessions?name="+url.QueryEscape(name), nil, "X-Tenant-Id", e.ws)
		var list []map[string]any
		if r.Code == 200 && json.Unmarshal([]byte(r.Body), &list) == nil && (len(list) == 1) == present {
			if present {
				return list[0]
			}
			return nil
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("tracing project %q present=%v: %d %s", name, present, r.Code, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
