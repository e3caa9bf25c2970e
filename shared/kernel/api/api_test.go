package api_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// keys is a two-key authenticator: "admin" is an organization admin,
// "viewer" a viewer in workspace ws-1 only.
type keys struct{}

func (keys) AuthenticateRequest(r *http.Request) (auth.Principal, error) {
	switch auth.Credential(r) {
	case "admin":
		return auth.NewPrincipal("org", auth.RoleAdmin, "k1", nil), nil
	case "viewer":
		return auth.NewPrincipal("org", auth.RoleViewer, "k2", map[string]auth.Role{"ws-1": auth.RoleViewer}), nil
	}
	return auth.Principal{}, web.Unauthorized("Invalid API key")
}

func (keys) InWorkspace(r *http.Request, p auth.Principal) (auth.Principal, error) {
	ws := r.Header.Get(auth.TenantHeader)
	if ws == "" {
		ws = "ws-1"
	}
	role, ok := p.RoleIn(ws)
	if !ok {
		return p, web.Forbidden("no access to %s", ws)
	}
	return p.In(ws, role), nil
}

type handler struct{ prefix string }

func (h *handler) echo(w http.ResponseWriter, r *http.Request) error {
	p := api.Caller(r)
	_, _ = io.WriteString(w, h.prefix+p.KeyID+"@"+p.WorkspaceID)
	return nil
}

var group = api.Group[*handler]{
	Name:   "test",
	Mounts: []string{"/api/v1"},
	Routes: []api.Route[*handler]{
		{Method: "GET", Path: "/open", Auth: api.Public, Handle: (*handler).echo},
		{Method: "GET", Path: "/org", Auth: api.Key, Role: auth.RoleAdmin, Handle: (*handler).echo},
		{Method: "POST", Path: "/ws", Auth: api.Workspace, Role: auth.RoleEditor, Handle: (*handler).echo},
		{Method: "GET", Path: "/ws", Auth: api.Workspace, Role: auth.RoleViewer, Handle: (*handler).echo},
		{Method: "GET", Path: "/v1/only-here", Auth: api.Public, Unmounted: true, Handle: (*handler).echo},
	},
}

func TestSpecsExpandMounts(t *testing.T) {
	var got []string
	for _, s := range group.Specs() {
		if s.Group != "test" {
			t.Errorf("%s: group %q", s.Pattern(), s.Group)
		}
		got = append(got, s.Pattern())
	}
	want := "GET /open,GET /org,POST /ws,GET /ws,GET /v1/only-here,GET /api/v1/open,GET /api/v1/org,POST /api/v1/ws,GET /api/v1/ws"
	if strings.Join(got, ",") != want {
		t.Fatalf("specs\n got %s\nwant %s", strings.Join(got, ","), want)
	}
}

func TestMountAuthenticates(t *testing.T) {
	mux := web.NewMux()
	var wrapped []string
	api.Mount(mux, group, &handler{prefix: "h:"}, api.Edge{Auth: keys{}, Wrap: func(s api.Spec, h http.Handler) http.Handler {
		wrapped = append(wrapped, s.Pattern())
		return h
	}})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if len(wrapped) != len(group.Specs()) {
		t.Errorf("wrapped %d routes of %d", len(wrapped), len(group.Specs()))
	}
	for _, tc := range []struct {
		method, path, key string
		status            int
		body              string
	}{
		{"GET", "/open", "", 200, "h:@"},
		{"GET", "/api/v1/open", "", 200, "h:@"},
		{"GET", "/v1/only-here", "", 200, "h:@"},
		{"GET", "/api/v1/v1/only-here", "", 404, ""},
		{"GET", "/org", "", 401, ""},
		{"GET", "/org", "nope", 401, ""},
		{"GET", "/org", "viewer", 403, ""},
		{"GET", "/org", "admin", 200, "h:k1@"},
		{"GET", "/ws", "viewer", 200, "h:k2@ws-1"},
		{"POST", "/ws", "viewer", 403, ""},
		{"POST", "/api/v1/ws", "admin", 200, "h:k1@ws-1"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if tc.key != "" {
			req.Header.Set("X-Api-Key", tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || tc.body != "" && string(b) != tc.body {
			t.Errorf("%s %s key %q: %d %s, want %d %s", tc.method, tc.path, tc.key, resp.StatusCode, b, tc.status, tc.body)
		}
		if resp.StatusCode >= 400 && !strings.Contains(string(b), `"detail"`) {
			t.Errorf("%s %s: error without detail: %s", tc.method, tc.path, b)
		}
	}
}
