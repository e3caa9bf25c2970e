package orgaccess_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const admin = accesstest.AdminKey

// member returns the member object of a sign-in answer.
func member(t *testing.T, r accesstest.Response) map[string]any {
	t.Helper()
	m, ok := r.M(t)["member"].(map[string]any)
	if !ok {
		t.Fatalf("no member in %s", r.Raw)
	}
	return m
}

// workspaces maps workspace id → "role/source" of a member view.
func workspaces(m map[string]any) map[string]string {
	out := map[string]string{}
	for _, x := range m["workspaces"].([]any) {
		a := x.(map[string]any)
		out[a["workspace_id"].(string)] = a["role"].(string) + "/" + a["source"].(string)
	}
	return out
}

func invite(t *testing.T, env *accesstest.Env, email, orgRole string, grants ...map[string]any) string {
	t.Helper()
	body := map[string]any{"email": email, "org_role": orgRole}
	if grants != nil {
		body["workspaces"] = grants
	}
	return env.Must(201, "POST", "/api/v1/orgs/current/invites", admin, body).M(t)["id"].(string)
}

func inviteStatus(t *testing.T, env *accesstest.Env, id string) string {
	t.Helper()
	r := env.Must(200, "GET", "/api/v1/orgs/current/invites?status=all&limit=100", admin, nil)
	for _, x := range r.M(t)["items"].([]any) {
		if inv := x.(map[string]any); inv["id"] == id {
			return inv["status"].(string)
		}
	}
	t.Fatalf("invite %s not listed", id)
	return ""
}

func memberCount(t *testing.T, env *accesstest.Env) int {
	t.Helper()
	r := env.Must(200, "GET", "/api/v1/orgs/current/members?limit=100", admin, nil)
	return len(r.M(t)["items"].([]any))
}

// lastSignInAudit returns the newest sso.sign_in record.
func lastSignInAudit(t *testing.T, env *accesstest.Env) map[string]any {
	t.Helper()
	recs := env.Audit("sso.sign_in")
	if len(recs) == 0 {
		t.Fatal("no sign-in audit record")
	}
	return recs[0]
}

// The six rows of the seed's decision table, each against a fresh
// installation whose default SSO settings (Editor in the default
// workspace) differ from the invite's contents (Admin org role, Viewer in
// another workspace), so which one was applied is visible.
func TestDecisionTable(t *testing.T) {
	rows := []struct {
		name           string
		jit, invites   bool
		pendingInvite  bool
		decision       string
		reason         string
		inviteAfter    string // status of the invite after sign-in
		wantInviteRole bool   // provisioned with the invite's contents
	}{
		{"jit on, invites on, pending invite: invite claimed", true, true, true, "invite_claimed", "", "claimed", true},
		{"jit on, invites on, no invite: defaults", true, true, false, "jit_provisioned", "", "", false},
		{"jit on, invites off, invite n/a: defaults", true, false, true, "jit_provisioned", "", "pending", false},
		{"jit off, invites on, pending invite: invite claimed", false, true, true, "invite_claimed", "", "claimed", true},
		{"jit off, invites on, no invite: denied", false, true, false, "denied", "no_pending_invite", "", false},
		{"jit off, invites off, invite n/a: denied, SCIM or admin only", false, false, true, "denied", "scim_or_admin_only", "pending", false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			env := accesstest.New(t, accesstest.Options{})
			other := env.NewWorkspace("Invited")
			env.Must(200, "PATCH", "/api/v1/orgs/current/sso-settings", admin,
				map[string]any{"default_workspace_role": "Editor", "default_workspace_ids": []string{env.Workspace.ID}})
			env.Settings(true, true) // invites must be on to create the invite
			var invID string
			if row.pendingInvite {
				invID = invite(t, env, "Ada@Example.com", "Admin", map[string]any{"workspace_id": other, "role": "Viewer"})
			}
			env.Settings(row.jit, row.invites)

			r := env.Must(200, "POST", "/api/v1/sso/default/sign-in", admin,
				map[string]any{"email": "ada@example.com", "email_verified": true, "idp_subject": "idp|ada", "name": "Ada"})
			body := r.M(t)
			if body["decision"] != row.decision {
				t.Fatalf("decision %v, want %s: %s", body["decision"], row.decision, r.Raw)
			}
			settings := body["settings"].(map[string]any)
			if settings["effective_jit_provisioning_enabled"] != row.jit || settings["effective_invites_enabled"] != row.invites {
				t.Errorf("settings used: %v", settings)
			}
			audit := lastSignInAudit(t, env)
			if audit["decision"] != row.decision {
				t.Errorf("audit decision %v, want %s", audit["decision"], row.decision)
			}
			switch row.decision {
			case "denied":
				if body["reason"] != row.reason || body["member"] != nil || body["rule"] != 4.0 {
					t.Errorf("denial: %s", r.Raw)
				}
				if audit["reason"] != row.reason {
					t.Errorf("audit reason %v", audit["reason"])
				}
				if n := memberCount(t, env); n != 0 {
					t.Errorf("%d members after a denial", n)
				}
			case "invite_claimed":
				m := member(t, r)
				ws := workspaces(m)
				if m["org_role"] != "Admin" || m["source"] != "invite" || len(ws) != 1 || ws[other] != "Viewer/invite" {
					t.Errorf("invite contents not applied: %v", m)
				}
				if body["invite_id"] != invID || body["rule"] != 2.0 {
					t.Errorf("answer: %s", r.Raw)
				}
			case "jit_provisioned":
				m := member(t, r)
				ws := workspaces(m)
				if m["org_role"] != "User" || m["source"] != "jit" || len(ws) != 1 || ws[env.Workspace.ID] != "Editor/jit" {
					t.Errorf("defaults not applied: %v", m)
				}
				if body["rule"] != 3.0 {
					t.Errorf("rule %v", body["rule"])
				}
			}
			if row.decision != "denied" {
				m := member(t, r)
				if m["email"] != "ada@example.com" || m["idp_subject"] != "idp|ada" || m["last_sign_in_at"] == nil {
					t.Errorf("member: %v", m)
				}
			}
			if invID != "" {
				if got := inviteStatus(t, env, invID); got != row.inviteAfter {
					t.Errorf("invite is %s after sign-in, want %s", got, row.inviteAfter)
				}
			}
		})
	}
}

// Rule 1 comes first: an existing member is signed in even with a pending
// invite and JIT on, and keeps their roles.
func TestExistingMemberWins(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	other := env.NewWorkspace("Other")
	invID := invite(t, env, "grace@example.com", "Admin", map[string]any{"workspace_id": other, "role": "Admin"})
	env.Must(201, "POST", "/api/v1/orgs/current/members", admin, map[string]any{
		"email": "grace@example.com", "org_role": "Viewer",
		"workspaces": []any{map[string]any{"workspace_id": env.Workspace.ID, "role": "User"}},
	})
	r := env.Must(200, "POST", "/api/v1/sso/default/sign-in", admin,
		map[string]any{"email": "GRACE@example.com", "email_verified": true, "idp_subject": "sub-grace"})
	if d := r.M(t)["decision"]; d != "existing_member" {
		t.Fatalf("decision %v: %s", d, r.Raw)
	}
	m := member(t, r)
	if m["org_role"] != "Viewer" || m["source"] != "manual" || workspaces(m)[env.Workspace.ID] != "User/manual" || len(workspaces(m)) != 1 {
		t.Errorf("existing roles changed: %v", m)
	}
	if m["idp_subject"] != "sub-grace" {
		t.Errorf("subject not recorded: %v", m)
	}
	if inviteStatus(t, env, invID) != "pending" {
		t.Error("the invite was claimed by an existing member")
	}
	// A JIT-provisioned user signing in again is matched by subject (rule 1),
	// even when the IdP now reports another email.
	first := env.SignIn("default", admin, "linus@example.com", "sub-linus")
	if first.M(t)["decision"] != "jit_provisioned" {
		t.Fatalf("first sign-in: %s", first.Raw)
	}
	again := env.SignIn("default", admin, "linus.new@example.com", "sub-linus")
	if again.M(t)["decision"] != "existing_member" || member(t, again)["id"] != member(t, first)["id"] {
		t.Fatalf("second sign-in: %s", again.Raw)
	}
	if memberCount(t, env) != 2 {
		t.Errorf("members: %d", memberCount(t, env))
	}
}

// Rule 2 precedes rule 3: an invite listing no workspaces provisions into
// none, not into the default workspaces.
func TestInvitePrecedesJIT(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	invite(t, env, "ken@example.com", "Viewer")
	r := env.SignIn("default", admin, "ken@example.com", "sub-ken")
	m := member(t, r)
	if r.M(t)["decision"] != "invite_claimed" || m["org_role"] != "Viewer" || len(workspaces(m)) != 0 {
		t.Fatalf("got %s", r.Raw)
	}
}

func TestSignInChecks(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	_, _, otherAdmin := env.NewOrg("Other")
	viewer := env.Key("Viewer")
	ok := map[string]any{"email": "a@example.com", "email_verified": true, "idp_subject": "s"}
	for _, c := range []struct {
		name   string
		slug   string
		key    string
		body   any
		status int
	}{
		{"no key", "default", "", ok, 401},
		{"bad key", "default", "ap_nope_nope_nope_nope_nope", ok, 401},
		{"non-admin key", "default", viewer, ok, 403},
		{"key of another organization", "default", otherAdmin, ok, 403},
		{"unknown slug", "nope", admin, ok, 404},
		{"missing email", "default", admin, map[string]any{"email_verified": true, "idp_subject": "s"}, 422},
		{"invalid email", "default", admin, map[string]any{"email": "not an email", "email_verified": true, "idp_subject": "s"}, 422},
		{"email with display name", "default", admin, map[string]any{"email": "A <a@example.com>", "email_verified": true, "idp_subject": "s"}, 422},
		{"verified not boolean", "default", admin, map[string]any{"email": "a@example.com", "email_verified": "yes", "idp_subject": "s"}, 422},
		{"null subject", "default", admin, map[string]any{"email": "a@example.com", "email_verified": true, "idp_subject": nil}, 422},
		{"empty subject", "default", admin, map[string]any{"email": "a@example.com", "email_verified": true, "idp_subject": " "}, 422},
		{"extra field", "default", admin, map[string]any{"email": "a@example.com", "email_verified": true, "idp_subject": "s", "role": "Admin"}, 422},
		{"malformed", "default", admin, `{"email":`, 422},
		{"not an object", "default", admin, `[1]`, 422},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := env.Do("POST", "/api/v1/sso/"+c.slug+"/sign-in", c.key, c.body)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Raw)
			}
			if _, ok := r.M(t)["detail"]; !ok {
				t.Fatalf("no detail: %s", r.Raw)
			}
		})
	}
	if n := memberCount(t, env); n != 0 {
		t.Errorf("%d members after rejected sign-ins", n)
	}
	if n := len(env.Audit("sso.sign_in")); n != 0 {
		t.Errorf("%d sign-in decisions recorded for rejected requests", n)
	}

	// An unverified email is denied (unless the subject is known), and a
	// known email presented with another subject is denied.
	r := env.Must(200, "POST", "/api/v1/sso/default/sign-in", admin,
		map[string]any{"email": "eve@example.com", "email_verified": false, "idp_subject": "sub-eve"})
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "email_not_verified" {
		t.Fatalf("unverified: %s", r.Raw)
	}
	env.SignIn("default", admin, "bob@example.com", "sub-bob")
	r = env.SignIn("default", admin, "bob@example.com", "sub-mallory")
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "subject_mismatch" {
		t.Fatalf("subject mismatch: %s", r.Raw)
	}
	r = env.Must(200, "POST", "/api/v1/sso/default/sign-in", admin,
		map[string]any{"email": "bob@example.com", "email_verified": false, "idp_subject": "sub-bob"})
	if r.M(t)["decision"] != "existing_member" {
		t.Fatalf("known subject with unverified email: %s", r.Raw)
	}
}

// Concurrent sign-ins of one invited user claim the invite once and
// provision one member; the others are signed in as that member.
func TestConcurrentInviteClaim(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	invite(t, env, "rush@example.com", "Editor")
	counts := concurrentSignIns(t, env, "rush@example.com", 16)
	if counts["invite_claimed"] != 1 || counts["existing_member"] != 15 {
		t.Fatalf("decisions: %v", counts)
	}
	if n := memberCount(t, env); n != 1 {
		t.Fatalf("%d members", n)
	}
}

func TestConcurrentJIT(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	counts := concurrentSignIns(t, env, "crowd@example.com", 16)
	if counts["jit_provisioned"] != 1 || counts["existing_member"] != 15 {
		t.Fatalf("decisions: %v", counts)
	}
	if n := memberCount(t, env); n != 1 {
		t.Fatalf("%d members", n)
	}
	if n := len(env.Audit("sso.sign_in")); n != 16 {
		t.Fatalf("%d decisions audited, want 16", n)
	}
}

func concurrentSignIns(t *testing.T, env *accesstest.Env, email string, n int) map[string]int {
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := env.SignIn("default", admin, email, "sub-"+email)
			mu.Lock()
			defer mu.Unlock()
			if r.Status != 200 {
				counts[fmt.Sprintf("status %d", r.Status)]++
				return
			}
			counts[r.Body.(map[string]any)["decision"].(string)]++
		}()
	}
	wg.Wait()
	return counts
}
