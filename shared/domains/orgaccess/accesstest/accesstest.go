// Package accesstest starts an agentplane installation for the
// organization-access and SCIM tests and talks to it over HTTP.
package accesstest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/scim"
)

// AdminKey is the bootstrap admin key of the default organization.
const AdminKey = "ap_accesstest_admin_key_0123456789"

// Options select the installation's mode.
type Options struct {
	// SelfHosted is AGENTPLANE_SELF_HOSTED=true.
	SelfHosted bool
	// JITDisabled is SELF_HOSTED_JIT_PROVISIONING_ENABLED=false.
	JITDisabled bool
}

// Env is a running installation.
type Env struct {
	t   testing.TB
	URL string
	// Org and Workspace are the bootstrapped defaults.
	Org       identity.Organization
	Workspace identity.Workspace
	IDs       *identity.Service
}

// New starts the real app (every module, local mode, bbolt store in a
// temporary directory) on 127.0.0.1 for the duration of the test.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx := context.Background()
	cfg := compose.Config{
		Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: AdminKey, AllowLocalRepos: true, LogLevel: "error",
		SelfHosted: opts.SelfHosted, SelfHostedJITEnabled: !opts.JITDisabled,
	}
	app, err := local.New(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.P.Identity.Bootstrap(ctx, app.P.Config.BootstrapAPIKey)
	if err != nil {
		app.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := app.Close(); err != nil {
			t.Errorf("close app: %v", err)
		}
	})
	return &Env{t: t, URL: srv.URL, Org: b.Organization, Workspace: b.Workspace, IDs: app.P.Identity}
}

// Response is a decoded HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   any
	Raw    string
}

// M returns the body as an object (failing the test otherwise).
func (r Response) M(t testing.TB) map[string]any {
	t.Helper()
	m, ok := r.Body.(map[string]any)
	if !ok {
		t.Fatalf("body is not an object (status %d): %s", r.Status, r.Raw)
	}
	return m
}

// Request sends a request. body is sent as-is when it is a string, else
// encoded as JSON; nil sends no body. headers are name, value pairs.
func (e *Env) Request(method, path string, body any, headers ...string) Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			e.t.Fatalf("%s %s: body is not JSON (status %d): %s", method, path, resp.StatusCode, raw)
		}
	}
	return out
}

// Do sends a request with an API key as Authorization: Bearer.
func (e *Env) Do(method, path, key string, body any) Response {
	e.t.Helper()
	if key == "" {
		return e.Request(method, path, body)
	}
	return e.Request(method, path, body, "Authorization", "Bearer "+key)
}

// Must is Do that fails the test unless the status is want.
func (e *Env) Must(want int, method, path, key string, body any) Response {
	e.t.Helper()
	r := e.Do(method, path, key, body)
	if r.Status != want {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// Key creates an API key of the default organization with an org role.
func (e *Env) Key(role identity.Role, grants ...identity.Grant) string {
	e.t.Helper()
	_, raw, err := e.IDs.CreateAPIKey(context.Background(), identity.NewKey{OrganizationID: e.Org.ID, OrgRole: role, Workspaces: grants})
	if err != nil {
		e.t.Fatal(err)
	}
	return raw
}

// NewOrg creates another organization with one workspace and returns it
// with an admin key.
func (e *Env) NewOrg(name string) (identity.Organization, identity.Workspace, string) {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.IDs.CreateOrganization(ctx, identity.Organization{DisplayName: name, JITProvisioningEnabled: true, InvitesEnabled: true})
	if err != nil {
		e.t.Fatal(err)
	}
	ws, err := e.IDs.CreateWorkspace(ctx, org.ID, name+" workspace")
	if err != nil {
		e.t.Fatal(err)
	}
	_, raw, err := e.IDs.CreateAPIKey(ctx, identity.NewKey{OrganizationID: org.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		e.t.Fatal(err)
	}
	return org, ws, raw
}

// Workspace creates a workspace in the default organization.
func (e *Env) NewWorkspace(name string) string {
	e.t.Helper()
	r := e.Must(201, "POST", "/api/v1/workspaces", AdminKey, map[string]any{"display_name": name})
	return r.M(e.t)["id"].(string)
}

// Settings sets the default organization's JIT and invite settings.
func (e *Env) Settings(jit, invites bool) {
	e.t.Helper()
	e.Must(200, "PATCH", "/api/v1/organizations/current/info", AdminKey,
		map[string]any{"jit_provisioning_enabled": jit, "invites_enabled": invites})
}

// SignIn relays a verified identity to the sign-in endpoint of slug.
func (e *Env) SignIn(slug, key, email, subject string) Response {
	e.t.Helper()
	return e.Do("POST", "/api/v1/sso/"+slug+"/sign-in", key,
		map[string]any{"email": email, "email_verified": true, "idp_subject": subject, "name": "Test " + subject})
}

// SCIMToken creates a SCIM token of the organization of adminKey.
func (e *Env) SCIMToken(adminKey string) string {
	e.t.Helper()
	r := e.Must(201, "POST", "/api/v1/orgs/current/scim-tokens", adminKey, map[string]any{"description": "test IdP"})
	return r.M(e.t)["token"].(string)
}

// SCIM sends a SCIM request with a token.
func (e *Env) SCIM(method, path, token string, body any, headers ...string) Response {
	e.t.Helper()
	h := append([]string{"Authorization", "Bearer " + token}, headers...)
	if body != nil {
		h = append(h, "Content-Type", scim.ContentType)
	}
	return e.Request(method, "/scim/v2"+path, body, h...)
}

// Audit lists the default organization's audit records of one action.
func (e *Env) Audit(action string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		path := "/api/v1/orgs/current/audit?limit=100&action=" + action
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.Must(200, "GET", path, AdminKey, nil)
		for _, it := range r.M(e.t)["items"].([]any) {
			out = append(out, it.(map[string]any))
		}
		next, _ := r.M(e.t)["next_cursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}
