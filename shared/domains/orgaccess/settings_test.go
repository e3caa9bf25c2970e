package orgaccess_test

import (
	"reflect"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const infoPath = "/api/v1/organizations/current/info"

func TestOrganizationInfo(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	viewer := env.Key("Viewer")

	// Any key of the organization reads it.
	org := env.Must(200, "GET", infoPath, viewer, nil).M(t)
	for _, f := range []string{"id", "display_name", "jit_provisioning_enabled", "invites_enabled", "sso_login_slug",
		"default_sso_provision", "is_personal", "created_at", "updated_at"} {
		if _, ok := org[f]; !ok {
			t.Errorf("organization record lacks %s: %v", f, org)
		}
	}
	if org["id"] != env.Org.ID || org["sso_login_slug"] != "default" || org["default_sso_provision"] != true {
		t.Errorf("record: %v", org)
	}
	// X-Api-Key works as well as Bearer.
	if r := env.Request("GET", infoPath, nil, "X-Api-Key", admin); r.Status != 200 {
		t.Errorf("X-Api-Key: %d", r.Status)
	}
	if r := env.Do("GET", infoPath, "", nil); r.Status != 401 {
		t.Errorf("no key: %d", r.Status)
	}

	r := env.Must(200, "PATCH", infoPath, admin, map[string]any{"jit_provisioning_enabled": false})
	got := r.M(t)
	if got["jit_provisioning_enabled"] != false || got["invites_enabled"] != true || got["id"] != env.Org.ID ||
		got["display_name"] != org["display_name"] || got["sso_login_slug"] != "default" {
		t.Fatalf("PATCH answer: %s", r.Raw)
	}
	r = env.Must(200, "PATCH", infoPath, admin, map[string]any{"invites_enabled": false})
	if r.M(t)["jit_provisioning_enabled"] != false || r.M(t)["invites_enabled"] != false {
		t.Fatalf("second PATCH: %s", r.Raw)
	}
	// An empty body changes nothing and is not audited.
	env.Must(200, "PATCH", infoPath, admin, map[string]any{})
	audit := env.Audit("organization.settings.updated")
	if len(audit) != 2 {
		t.Fatalf("%d settings audit records, want 2", len(audit))
	}
	changes := audit[0]["details"].(map[string]any)["changes"].(map[string]any)
	if !reflect.DeepEqual(changes["invites_enabled"], map[string]any{"from": true, "to": false}) {
		t.Errorf("audit changes: %v", changes)
	}
	if audit[0]["actor"].(map[string]any)["type"] != "api_key" {
		t.Errorf("audit actor: %v", audit[0]["actor"])
	}
}

// Non-admins get 403, and invalid bodies 422; neither changes anything.
func TestOrganizationInfoRejects(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	editor := env.Key("Editor")
	before := env.Must(200, "GET", infoPath, admin, nil).M(t)
	for _, c := range []struct {
		name   string
		key    string
		body   any
		status int
		loc    string
	}{
		{"non-admin", editor, map[string]any{"invites_enabled": false}, 403, ""},
		{"unknown field", admin, map[string]any{"invites_enabled": false, "display_name": "x"}, 422, "display_name"},
		{"read-only field", admin, map[string]any{"sso_login_slug": "x"}, 422, "sso_login_slug"},
		{"string for boolean", admin, map[string]any{"jit_provisioning_enabled": "false"}, 422, "jit_provisioning_enabled"},
		{"number for boolean", admin, map[string]any{"invites_enabled": 0}, 422, "invites_enabled"},
		{"null", admin, map[string]any{"invites_enabled": nil}, 422, "invites_enabled"},
		{"one valid one wrong", admin, map[string]any{"invites_enabled": false, "jit_provisioning_enabled": "no"}, 422, "jit_provisioning_enabled"},
		{"array body", admin, `[]`, 422, ""},
		{"malformed", admin, `{"invites_enabled": fals}`, 422, ""},
		{"empty body", admin, ``, 422, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := env.Do("PATCH", infoPath, c.key, c.body)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Raw)
			}
			if c.loc != "" {
				d := r.M(t)["detail"].([]any)[0].(map[string]any)
				if loc := d["loc"].([]any); len(loc) != 2 || loc[0] != "body" || loc[1] != c.loc {
					t.Errorf("loc %v, want [body %s]", loc, c.loc)
				}
			}
		})
	}
	after := env.Must(200, "GET", infoPath, admin, nil).M(t)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("rejected requests changed the organization:\n%v\n%v", before, after)
	}
	if n := len(env.Audit("organization.settings.updated")); n != 0 {
		t.Fatalf("%d audit records for rejected requests", n)
	}
}

// Concurrent PATCHes of different fields all land (versioned writes).
func TestOrganizationInfoConcurrent(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		field := "jit_provisioning_enabled"
		if i%2 == 1 {
			field = "invites_enabled"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			env.Do("PATCH", infoPath, admin, map[string]any{field: false})
		}()
	}
	wg.Wait()
	org := env.Must(200, "GET", infoPath, admin, nil).M(t)
	if org["jit_provisioning_enabled"] != false || org["invites_enabled"] != false {
		t.Fatalf("a concurrent change was lost: %v", org)
	}
	if n := len(env.Audit("organization.settings.updated")); n != 2 {
		t.Fatalf("%d settings changes audited, want 2 (one per field)", n)
	}
}

const ssoPath = "/api/v1/orgs/current/sso-settings"

func TestDefaultSSOSettings(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	viewer := env.Key("Viewer", identity.Grant{WorkspaceID: env.Workspace.ID, Role: "Viewer"})
	second := env.NewWorkspace("Second")
	_, foreignWS, _ := env.NewOrg("Foreign")

	// Readable by members; before configuration: Viewer in the first workspace.
	d := env.Must(200, "GET", ssoPath, viewer, nil).M(t)
	if d["default_workspace_role"] != "Viewer" || !reflect.DeepEqual(d["default_workspace_ids"], []any{env.Workspace.ID}) || d["configured"] != false {
		t.Fatalf("initial defaults: %v", d)
	}
	env.Must(403, "PATCH", ssoPath, viewer, map[string]any{"default_workspace_role": "Admin"})

	d = env.Must(200, "PATCH", ssoPath, admin, map[string]any{"default_workspace_role": "User",
		"default_workspace_ids": []string{env.Workspace.ID, second}}).M(t)
	if d["default_workspace_role"] != "User" || len(d["default_workspace_ids"].([]any)) != 2 || d["configured"] != true {
		t.Fatalf("set: %v", d)
	}
	// Partial update keeps the other field.
	d = env.Must(200, "PATCH", ssoPath, admin, map[string]any{"default_workspace_role": "Admin"}).M(t)
	if d["default_workspace_role"] != "Admin" || len(d["default_workspace_ids"].([]any)) != 2 {
		t.Fatalf("partial: %v", d)
	}
	before := env.Must(200, "GET", ssoPath, viewer, nil).M(t)
	audits := len(env.Audit("sso_defaults.updated"))

	for _, c := range []struct {
		name string
		body any
		loc  []any
	}{
		{"unknown role", map[string]any{"default_workspace_role": "Owner"}, []any{"body", "default_workspace_role"}},
		{"lower-case role", map[string]any{"default_workspace_role": "viewer"}, []any{"body", "default_workspace_role"}},
		{"role not a string", map[string]any{"default_workspace_role": 3}, []any{"body", "default_workspace_role"}},
		{"no workspaces", map[string]any{"default_workspace_ids": []string{}}, []any{"body", "default_workspace_ids"}},
		{"null workspaces", map[string]any{"default_workspace_ids": nil}, []any{"body", "default_workspace_ids"}},
		{"not a uuid", map[string]any{"default_workspace_ids": []string{"default"}}, []any{"body", "default_workspace_ids", 0.0}},
		{"missing workspace", map[string]any{"default_workspace_ids": []string{env.Workspace.ID, "00000000-0000-4000-8000-000000000000"}}, []any{"body", "default_workspace_ids", 1.0}},
		{"workspace of another organization", map[string]any{"default_workspace_ids": []string{foreignWS.ID}}, []any{"body", "default_workspace_ids", 0.0}},
		{"duplicate", map[string]any{"default_workspace_ids": []string{second, second}}, []any{"body", "default_workspace_ids", 1.0}},
		{"unknown field", map[string]any{"default_role": "Admin"}, []any{"body", "default_role"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := env.Must(422, "PATCH", ssoPath, admin, c.body)
			d := r.M(t)["detail"].([]any)[0].(map[string]any)
			if !reflect.DeepEqual(d["loc"], c.loc) {
				t.Errorf("loc %v, want %v (%s)", d["loc"], c.loc, r.Raw)
			}
		})
	}
	if after := env.Must(200, "GET", ssoPath, viewer, nil).M(t); !reflect.DeepEqual(before, after) {
		t.Fatalf("rejected requests changed the defaults: %v → %v", before, after)
	}
	if n := len(env.Audit("sso_defaults.updated")); n != audits {
		t.Fatalf("rejected requests were audited")
	}

	// JIT uses them: Admin in both workspaces.
	m := member(t, env.SignIn("default", admin, "new@example.com", "sub-new"))
	ws := workspaces(m)
	if len(ws) != 2 || ws[env.Workspace.ID] != "Admin/jit" || ws[second] != "Admin/jit" {
		t.Fatalf("JIT member: %v", m)
	}
}

// A key that is not an organization admin reads the default SSO role, but
// only those default workspaces it reaches itself.
func TestDefaultSSOSettingsShowOnlyReachableWorkspaces(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	second := env.NewWorkspace("Second")
	env.Must(200, "PATCH", ssoPath, admin, map[string]any{"default_workspace_role": "Editor",
		"default_workspace_ids": []string{env.Workspace.ID, second}})
	for _, c := range []struct {
		name string
		key  string
		want []any
	}{
		{"admin", admin, []any{env.Workspace.ID, second}},
		{"reaches the second", env.Key("User", identity.Grant{WorkspaceID: second, Role: "Editor"}), []any{second}},
		{"reaches the first", env.Key("Viewer", identity.Grant{WorkspaceID: env.Workspace.ID, Role: "Viewer"}), []any{env.Workspace.ID}},
		{"reaches neither", env.Key("Editor"), []any{}},
	} {
		d := env.Must(200, "GET", ssoPath, c.key, nil).M(t)
		if !reflect.DeepEqual(d["default_workspace_ids"], c.want) || d["default_workspace_role"] != "Editor" || d["configured"] != true {
			t.Errorf("%s: %v, want workspaces %v", c.name, d, c.want)
		}
	}
}
