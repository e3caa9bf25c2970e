package scim_test

import (
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

// The seed's rule: SCIM group membership overrides roles assigned
// manually and roles given by JIT, in either direction (lower or higher),
// and the own roles come back when the group no longer applies.
func TestSCIMGroupRolesOverrideManualAndJIT(t *testing.T) {
	env, tok := setup(t)
	w1 := env.Workspace.ID
	w2 := env.NewWorkspace("Research")
	env.Must(200, "PATCH", "/api/v1/orgs/current/sso-settings", admin,
		map[string]any{"default_workspace_role": "Editor", "default_workspace_ids": []string{w1}})

	manual := env.Must(201, "POST", "/api/v1/orgs/current/members", admin, map[string]any{"email": "m@example.com",
		"workspaces": []any{map[string]any{"workspace_id": w1, "role": "User"}, map[string]any{"workspace_id": w2, "role": "Admin"}}}).M(t)["id"].(string)
	jit := env.SignIn("default", admin, "j@example.com", "sub-j").M(t)["member"].(map[string]any)["id"].(string)
	if w := workspacesOf(t, env, jit); w[w1] != "Editor/jit" {
		t.Fatalf("JIT member: %v", w)
	}

	// The IdP finds existing members by userName, as it does before provisioning.
	l := env.SCIM("GET", "/Users?filter="+url.QueryEscape(`userName eq "M@example.com"`), tok, nil).M(t)
	if l["totalResults"] != 1.0 || l["Resources"].([]any)[0].(map[string]any)["id"] != manual {
		t.Fatalf("lookup: %v", l)
	}

	research := env.SCIM("POST", "/Groups", tok, group("agentplane:Research:Viewer", []string{manual}, nil)).M(t)["id"].(string)
	defaults := env.SCIM("POST", "/Groups", tok, group("Default viewers", []string{jit}, map[string]any{
		urnWSExt: map[string]any{"workspaceId": w1, "role": "Viewer"}})).M(t)["id"].(string)
	env.SCIM("POST", "/Groups", tok, group("agentplane:"+w2+":Admin", []string{jit}, nil))

	if w := workspacesOf(t, env, manual); w[w2] != "Viewer/scim" || w[w1] != "User/manual" {
		t.Fatalf("manual member with SCIM group: %v", w)
	}
	if w := workspacesOf(t, env, jit); w[w1] != "Viewer/scim" || w[w2] != "Admin/scim" {
		t.Fatalf("JIT member with SCIM groups: %v", w)
	}
	// Own roles stay recorded underneath.
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+manual, admin, nil).M(t)
	if len(m["grants"].([]any)) != 2 {
		t.Fatalf("grants: %v", m["grants"])
	}
	// A sign-in reports the SCIM role.
	r := env.SignIn("default", admin, "j@example.com", "sub-j")
	if r.M(t)["decision"] != "existing_member" {
		t.Fatalf("sign-in: %s", r.Raw)
	}
	for _, a := range r.M(t)["member"].(map[string]any)["workspaces"].([]any) {
		if a := a.(map[string]any); a["workspace_id"] == w1 && (a["role"] != "Viewer" || a["source"] != "scim" || a["group_id"] != defaults) {
			t.Fatalf("sign-in access: %v", a)
		}
	}
	// An admin cannot set a different manual role where SCIM decides.
	env.Must(409, "PATCH", "/api/v1/orgs/current/members/"+manual, admin, map[string]any{"workspaces": []any{
		map[string]any{"workspace_id": w1, "role": "User"}, map[string]any{"workspace_id": w2, "role": "Editor"}}})

	// Leaving the group restores the manual role; deleting a group restores JIT's.
	env.SCIM("PATCH", "/Groups/"+research, tok, patch(op("remove", `members[value eq "`+manual+`"]`, nil)))
	if w := workspacesOf(t, env, manual); w[w2] != "Admin/manual" {
		t.Fatalf("after leaving: %v", w)
	}
	env.SCIM("DELETE", "/Groups/"+defaults, tok, nil)
	if w := workspacesOf(t, env, jit); w[w1] != "Editor/jit" || w[w2] != "Admin/scim" {
		t.Fatalf("after group deletion: %v", w)
	}
}

// Deactivating a SCIM user (active=false) removes all access, reactivating
// restores it, and deleting removes the member.
func TestDeactivationRemovesAccess(t *testing.T) {
	env, tok := setup(t)
	u := mustCreateUser(t, env, tok, "dana@example.com", map[string]any{"externalId": "okta-1"})
	id := u["id"].(string)
	env.SCIM("POST", "/Groups", tok, group("agentplane:Default:Editor", []string{id}, nil))

	r := env.SignIn("default", admin, "dana@example.com", "okta-1")
	if r.M(t)["decision"] != "existing_member" {
		t.Fatalf("SCIM user sign-in: %s", r.Raw)
	}
	if w := workspacesOf(t, env, id); w[env.Workspace.ID] != "Editor/scim" {
		t.Fatalf("access: %v", w)
	}

	// SCIM-managed members are changed only through SCIM.
	env.Must(409, "DELETE", "/api/v1/orgs/current/members/"+id, admin, nil)
	env.Must(409, "PATCH", "/api/v1/orgs/current/members/"+id, admin, map[string]any{"name": "X"})

	if r := env.SCIM("PATCH", "/Users/"+id, tok, patch(op("replace", "active", false))); r.Status != 200 || r.M(t)["active"] != false {
		t.Fatalf("deactivate: %s", r.Raw)
	}
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+id, admin, nil).M(t)
	if m["active"] != false || len(m["workspaces"].([]any)) != 0 {
		t.Fatalf("deactivated member still has access: %v", m)
	}
	// Denied at sign-in, whatever JIT and invites say.
	r = env.SignIn("default", admin, "dana@example.com", "okta-1")
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "deactivated" || r.M(t)["member"] != nil {
		t.Fatalf("deactivated sign-in: %s", r.Raw)
	}
	audit := env.Audit("member.updated")
	if len(audit) == 0 {
		t.Fatal("deactivation not audited")
	}
	if ch := audit[0]["details"].(map[string]any)["changes"].(map[string]any)["active"]; ch == nil {
		t.Fatalf("audit does not show the deactivation: %v", audit[0])
	}

	// PUT with active true restores access.
	env.SCIM("PUT", "/Users/"+id, tok, user("dana@example.com", map[string]any{"externalId": "okta-1", "active": true}))
	if w := workspacesOf(t, env, id); w[env.Workspace.ID] != "Editor/scim" {
		t.Fatalf("after reactivation: %v", w)
	}

	// Deleting removes the member and its group memberships.
	env.SCIM("DELETE", "/Users/"+id, tok, nil)
	env.Must(404, "GET", "/api/v1/orgs/current/members/"+id, admin, nil)
	g := env.SCIM("GET", "/Groups", tok, nil).M(t)["Resources"].([]any)[0].(map[string]any)
	if g["members"] != nil {
		t.Fatalf("deleted user still in group: %v", g)
	}
	env.Settings(false, false)
	if r := env.SignIn("default", admin, "dana@example.com", "okta-1"); r.M(t)["decision"] != "denied" {
		t.Fatalf("deleted user signed in: %s", r.Raw)
	}
}

// A user without an email in SCIM can still be provisioned; userName is
// used as the email when it is one.
func TestUserNameAsEmail(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	tok := env.SCIMToken(admin)
	a := mustCreateUser(t, env, tok, "Kim@Example.com", nil)
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+a["id"].(string), admin, nil).M(t)
	if m["email"] != "kim@example.com" {
		t.Fatalf("email: %v", m)
	}
	b := mustCreateUser(t, env, tok, "kim-no-email", nil)
	m = env.Must(200, "GET", "/api/v1/orgs/current/members/"+b["id"].(string), admin, nil).M(t)
	if m["email"] != "" {
		t.Fatalf("email: %v", m)
	}
}

// Concurrent PATCHes of one group lose no member: each applies its
// operations to the state it conditionally replaces.
func TestConcurrentGroupPatches(t *testing.T) {
	env, tok := setup(t)
	gid := env.SCIM("POST", "/Groups", tok, group("agentplane:Default:User", nil, nil)).M(t)["id"].(string)
	var ids []string
	for i := 0; i < 12; i++ {
		ids = append(ids, mustCreateUser(t, env, tok, fmt.Sprintf("u%d@example.com", i), nil)["id"].(string))
	}
	var wg sync.WaitGroup
	statuses := make([]int, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = env.SCIM("PATCH", "/Groups/"+gid, tok, patch(op("add", "members", []any{map[string]any{"value": id}}))).Status
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("PATCH %d: status %d", i, s)
		}
	}
	g := env.SCIM("GET", "/Groups/"+gid, tok, nil).M(t)
	if n := len(g["members"].([]any)); n != len(ids) {
		t.Fatalf("%d members after %d concurrent adds", n, len(ids))
	}
	for _, id := range ids {
		if w := workspacesOf(t, env, id); w[env.Workspace.ID] != "User/scim" {
			t.Fatalf("member %s: %v", id, w)
		}
	}
}
