package orgaccess_test

import (
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const invitesPath = "/api/v1/orgs/current/invites"

func TestInvites(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	ws := env.NewWorkspace("Team")
	editor := env.Key("Editor")

	r := env.Must(201, "POST", invitesPath, admin, map[string]any{"email": " Lin@Example.com ",
		"workspaces": []any{map[string]any{"workspace_id": ws, "role": "Editor"}}})
	inv := r.M(t)
	if inv["email"] != "lin@example.com" || inv["org_role"] != "User" || inv["status"] != "pending" || len(inv["workspaces"].([]any)) != 1 {
		t.Fatalf("created: %s", r.Raw)
	}
	id := inv["id"].(string)
	second := invite(t, env, "max@example.com", "Viewer")

	list := env.Must(200, "GET", invitesPath, admin, nil).M(t)["items"].([]any)
	if len(list) != 2 {
		t.Fatalf("pending invites: %v", list)
	}
	// One pending invite per email; none for a member.
	r = env.Must(409, "POST", invitesPath, admin, map[string]any{"email": "LIN@example.com"})
	if !strings.Contains(r.M(t)["detail"].(string), "pending invite") {
		t.Errorf("detail: %s", r.Raw)
	}
	env.Must(201, "POST", "/api/v1/orgs/current/members", admin, map[string]any{"email": "member@example.com"})
	env.Must(409, "POST", invitesPath, admin, map[string]any{"email": "member@example.com"})

	// Non-admins can neither create, list nor revoke.
	env.Must(403, "POST", invitesPath, editor, map[string]any{"email": "x@example.com"})
	env.Must(403, "GET", invitesPath, editor, nil)
	env.Must(403, "DELETE", invitesPath+"/"+id, editor, nil)

	// Revoke; a revoked invite is not claimable and can be re-issued.
	env.Must(204, "DELETE", invitesPath+"/"+id, admin, nil)
	env.Must(409, "DELETE", invitesPath+"/"+id, admin, nil)
	env.Must(404, "DELETE", invitesPath+"/00000000-0000-4000-8000-000000000000", admin, nil)
	env.Must(422, "DELETE", invitesPath+"/not-a-uuid", admin, nil)
	if inviteStatus(t, env, id) != "revoked" {
		t.Fatal("not revoked")
	}
	env.Settings(false, true)
	r = env.SignIn("default", admin, "lin@example.com", "sub-lin")
	if r.M(t)["decision"] != "denied" {
		t.Fatalf("revoked invite was claimed: %s", r.Raw)
	}
	env.Must(201, "POST", invitesPath, admin, map[string]any{"email": "lin@example.com"})

	// Claimed invites cannot be revoked; status filters.
	env.SignIn("default", admin, "max@example.com", "sub-max")
	env.Must(409, "DELETE", invitesPath+"/"+second, admin, nil)
	for status, want := range map[string]int{"pending": 1, "claimed": 1, "revoked": 1, "all": 3} {
		r := env.Must(200, "GET", invitesPath+"?status="+status, admin, nil)
		if n := len(r.M(t)["items"].([]any)); n != want {
			t.Errorf("status=%s: %d invites, want %d", status, n, want)
		}
	}
	env.Must(422, "GET", invitesPath+"?status=expired", admin, nil)

	// Every change is audited.
	if n := len(env.Audit("invite.created")); n != 3 {
		t.Errorf("%d invite.created records", n)
	}
	if n := len(env.Audit("invite.revoked")); n != 1 {
		t.Errorf("%d invite.revoked records", n)
	}
}

func TestInviteValidation(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	_, foreign, _ := env.NewOrg("Foreign")
	for _, c := range []struct {
		name string
		body any
	}{
		{"missing email", map[string]any{"org_role": "User"}},
		{"bad email", map[string]any{"email": "nope"}},
		{"bad org role", map[string]any{"email": "a@example.com", "org_role": "Owner"}},
		{"bad workspace id", map[string]any{"email": "a@example.com", "workspaces": []any{map[string]any{"workspace_id": "x", "role": "User"}}}},
		{"bad workspace role", map[string]any{"email": "a@example.com", "workspaces": []any{map[string]any{"workspace_id": env.Workspace.ID, "role": "Boss"}}}},
		{"missing workspace", map[string]any{"email": "a@example.com", "workspaces": []any{map[string]any{"workspace_id": "00000000-0000-4000-8000-000000000000", "role": "User"}}}},
		{"workspace of another organization", map[string]any{"email": "a@example.com", "workspaces": []any{map[string]any{"workspace_id": foreign.ID, "role": "User"}}}},
		{"duplicate workspace", map[string]any{"email": "a@example.com", "workspaces": []any{
			map[string]any{"workspace_id": env.Workspace.ID, "role": "User"}, map[string]any{"workspace_id": env.Workspace.ID, "role": "Admin"}}}},
		{"unknown field", map[string]any{"email": "a@example.com", "expires": 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env.Must(422, "POST", invitesPath, admin, c.body)
		})
	}
	if n := len(env.Must(200, "GET", invitesPath+"?status=all", admin, nil).M(t)["items"].([]any)); n != 0 {
		t.Fatalf("%d invites stored by rejected requests", n)
	}
}

// With invites disabled, creating one fails with a clear detail and
// stores nothing.
func TestInvitesDisabled(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	env.Settings(true, false)
	r := env.Must(400, "POST", invitesPath, admin, map[string]any{"email": "a@example.com"})
	if d := r.M(t)["detail"].(string); !strings.Contains(d, "Invites are disabled") || !strings.Contains(d, "nothing was stored") {
		t.Fatalf("detail: %q", d)
	}
	if n := len(env.Must(200, "GET", invitesPath+"?status=all", admin, nil).M(t)["items"].([]any)); n != 0 {
		t.Fatalf("%d invites stored", n)
	}
	if n := len(env.Audit("invite.created")); n != 0 {
		t.Fatalf("%d invite.created records", n)
	}
	// The email is not blocked: after enabling invites it can be invited.
	env.Settings(true, true)
	env.Must(201, "POST", invitesPath, admin, map[string]any{"email": "a@example.com"})
}
