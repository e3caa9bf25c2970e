package local_test

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

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/compose/local"
)

const adminKey = "ap_test_admin_key_0123456789abcdef"

// bootstrapped is whether the last newApp created the installation.
var bootstrapped bool

func newApp(t *testing.T, dir string) *compose.Process {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: dir, Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	app, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.P.Identity.Bootstrap(context.Background(), adminKey)
	if err != nil {
		t.Fatal(err)
	}
	bootstrapped = b.Created
	return app
}

// Each group serves exactly its declared routes: the declarations are what
// API Gateway is built from.
func TestGroupsServeTheirRoutes(t *testing.T) {
	app := newApp(t, t.TempDir())
	defer app.Close()
	seen := map[string]string{}
	for _, g := range catalog.Groups() {
		pr, err := compose.Build(context.Background(), app.P, g)
		if err != nil {
			t.Fatal(err)
		}
		got := pr.Mux().Patterns()
		if g.Host != "" {
			// Served at its own address: not on the platform API.
			if len(got) != 0 {
				t.Errorf("group %s of host %s is mounted on the platform API: %v", g.Name, g.Host, got)
			}
			continue
		}
		var want []string
		for _, r := range g.Routes {
			want = append(want, r.Pattern())
			if other, dup := seen[r.Pattern()]; dup {
				t.Errorf("%s is declared by %s and %s", r.Pattern(), other, g.Name)
			}
			seen[r.Pattern()] = g.Name
			if r.Group != g.Name {
				t.Errorf("%s: spec group %q in group %s", r.Pattern(), r.Group, g.Name)
			}
		}
		sort.Strings(want)
		if len(got) != 0 || len(want) != 0 {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("group %s:\n served   %v\n declared %v", g.Name, got, want)
			}
		}
	}
	if got, want := len(app.Mux().Patterns()), len(seen); got != want {
		t.Errorf("the all-in-one server serves %d routes, the groups declare %d", got, want)
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
	if bootstrapped {
		t.Fatal("second start bootstrapped again")
	}
	srv = httptest.NewServer(app.Handler())
	defer srv.Close()
	c = client{t, srv.URL}
	if code, body := c.do("GET", "/api/v1/workspaces", adminKey, ""); code != 200 || !strings.Contains(body, "persisted") {
		t.Fatalf("after restart: %d %s", code, body)
	}
}
