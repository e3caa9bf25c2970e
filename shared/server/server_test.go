package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/routes"
	"github.com/agentplane/agentplane/shared/server"
)

const adminKey = "ap_test_admin_key_0123456789abcdef"

func newApp(t *testing.T, dir string) *server.App {
	t.Helper()
	cfg := server.Config{Mode: server.ModeLocal, DataDir: dir, Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	app, err := server.NewWithLogger(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Bootstrap(context.Background()); err != nil {
		t.Fatal(err)
	}
	return app
}

// Every route group in shared/routes is served by exactly one module, with
// exactly the table's routes: the table is what API Gateway is built from.
func TestRoutesMatchTable(t *testing.T) {
	app := newApp(t, t.TempDir())
	defer app.Close()
	served := map[string]bool{}
	for _, g := range app.Groups() {
		if served[g] {
			t.Errorf("group %s served by two modules", g)
		}
		served[g] = true
	}
	for _, g := range routes.Groups() {
		if !served[g.Name] {
			t.Errorf("route group %s has no module", g.Name)
			continue
		}
		got, err := app.GroupPatterns(g.Name)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, r := range g.Routes {
			want = append(want, r.Pattern())
		}
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("group %s:\n served %v\n table  %v", g.Name, got, want)
		}
		delete(served, g.Name)
	}
	for g := range served {
		t.Errorf("module group %s is missing from shared/routes", g)
	}
}

type client struct {
	t   *testing.T
	url string
}

func (c client) do(method, path, key, body string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAPI(t *testing.T) {
	app := newApp(t, t.TempDir())
	defer app.Close()
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	c := client{t, srv.URL}

	if code, body := c.do("GET", "/health", "", ""); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("health: %d %s", code, body)
	}
	for _, key := range []string{"", "ap_wrong_key_000000000000000000"} {
		code, body := c.do("GET", "/api/v1/workspaces", key, "")
		if code != 401 || !strings.Contains(body, `"detail"`) {
			t.Fatalf("key %q: %d %s", key, code, body)
		}
	}
	// Bearer works as well as X-Api-Key.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/workspaces", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bearer: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	code, body := c.do("POST", "/api/v1/workspaces", adminKey, `{"display_name":"team-a"}`)
	if code != 201 {
		t.Fatalf("create workspace: %d %s", code, body)
	}
	var ws struct{ ID string }
	_ = json.Unmarshal([]byte(body), &ws)
	if code, body := c.do("POST", "/api/v1/workspaces", adminKey, `{"display_name":5}`); code != 422 || !strings.Contains(body, `["body","display_name"]`) {
		t.Fatalf("bad workspace: %d %s", code, body)
	}

	code, body = c.do("POST", "/api/v1/api-key", adminKey, `{"description":"ci","workspaces":[{"workspace_id":"`+ws.ID+`","role":"Editor"}]}`)
	if code != 201 {
		t.Fatalf("create key: %d %s", code, body)
	}
	var created struct{ ID, Key string }
	_ = json.Unmarshal([]byte(body), &created)
	if !strings.HasPrefix(created.Key, "ap_") {
		t.Fatalf("no key in %s", body)
	}
	// The new key reaches only its workspace, and is not an org admin.
	code, body = c.do("GET", "/api/v1/workspaces", created.Key, "")
	if code != 200 || !strings.Contains(body, ws.ID) || strings.Count(body, `"id"`) != 1 {
		t.Fatalf("limited key workspaces: %d %s", code, body)
	}
	if code, _ := c.do("GET", "/api/v1/api-key", created.Key, ""); code != 403 {
		t.Fatalf("non-admin listing keys: %d", code)
	}
	// Listing never shows a key value.
	code, body = c.do("GET", "/api/v1/api-key", adminKey, "")
	if code != 200 || strings.Contains(body, created.Key) || strings.Contains(body, adminKey) || strings.Contains(body, `"hash"`) {
		t.Fatalf("list keys leaks: %d %s", code, body)
	}
	for _, bad := range []string{
		`{"workspaces":[{"workspace_id":"nope","role":"Editor"}]}`,
		`{"workspaces":[{"workspace_id":"` + ws.ID + `","role":"Owner"}]}`,
		`{"org_role":"Root"}`,
		`{"unknown":1}`,
	} {
		if code, body := c.do("POST", "/api/v1/api-key", adminKey, bad); code != 422 {
			t.Errorf("%s: %d %s", bad, code, body)
		}
	}
	if code, _ := c.do("POST", "/api/v1/api-key", adminKey, `{"workspaces":[{"workspace_id":"00000000-0000-4000-8000-000000000000","role":"Editor"}]}`); code != 404 {
		t.Errorf("unknown workspace: %d", code)
	}
	if code, _ := c.do("DELETE", "/api/v1/api-key/"+created.ID, adminKey, ""); code != 204 {
		t.Fatalf("revoke: %d", code)
	}
	if code, _ := c.do("GET", "/api/v1/workspaces", created.Key, ""); code != 401 {
		t.Fatalf("revoked key still works: %d", code)
	}
	if code, _ := c.do("DELETE", "/api/v1/api-key/"+created.ID, adminKey, ""); code != 404 {
		t.Fatalf("revoke twice: %d", code)
	}
	if code, _ := c.do("DELETE", "/api/v1/api-key/not-a-uuid", adminKey, ""); code != 422 {
		t.Fatalf("revoke bad id: %d", code)
	}
}

func TestRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	app := newApp(t, dir)
	srv := httptest.NewServer(app.Handler())
	c := client{t, srv.URL}
	if code, body := c.do("POST", "/api/v1/workspaces", adminKey, `{"display_name":"persisted"}`); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	srv.Close()
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	app = newApp(t, dir)
	defer app.Close()
	if app.Bootstrapped.Created {
		t.Fatal("second start bootstrapped again")
	}
	srv = httptest.NewServer(app.Handler())
	defer srv.Close()
	c = client{t, srv.URL}
	if code, body := c.do("GET", "/api/v1/workspaces", adminKey, ""); code != 200 || !strings.Contains(body, "persisted") {
		t.Fatalf("after restart: %d %s", code, body)
	}
}
