package orgaccess_test

import (
	"net/url"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const membersPath = "/api/v1/orgs/current/members"

func TestMembers(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	ws := env.NewWorkspace("Team")
	editor := env.Key("Editor")

	r := env.Must(201, "POST", membersPath, admin, map[string]any{"email": "Ann@Example.com", "name": "Ann",
		"workspaces": []any{map[string]any{"workspace_id": ws, "role": "Editor"}}})
	m := r.M(t)
	id := m["id"].(string)
	if m["email"] != "ann@example.com" || m["user_name"] != "ann@example.com" || m["org_role"] != "User" ||
		m["source"] != "manual" || m["active"] != true || workspaces(m)[ws] != "Editor/manual" {
		t.Fatalf("created: %s", r.Raw)
	}
	env.Must(409, "POST", membersPath, admin, map[string]any{"email": "ANN@example.com"})
	env.Must(403, "POST", membersPath, editor, map[string]any{"email": "x@example.com"})
	env.Must(403, "GET", membersPath, editor, nil)
	env.Must(403, "GET", membersPath+"/"+id, editor, nil)
	env.Must(422, "POST", membersPath, admin, map[string]any{"email": "x@example.com", "org_role": "Root"})
	env.Must(422, "POST", membersPath, admin, map[string]any{"email": "x@example.com",
		"workspaces": []any{map[string]any{"workspace_id": "00000000-0000-4000-8000-000000000000", "role": "User"}}})

	got := env.Must(200, "GET", membersPath+"/"+id, admin, nil).M(t)
	if got["id"] != id {
		t.Fatalf("get: %v", got)
	}
	env.Must(404, "GET", membersPath+"/00000000-0000-4000-8000-000000000000", admin, nil)
	env.Must(422, "GET", membersPath+"/nope", admin, nil)

	// PATCH: org role and workspace roles (replacing the manual grants).
	p := env.Must(200, "PATCH", membersPath+"/"+id, admin, map[string]any{"org_role": "Admin",
		"workspaces": []any{map[string]any{"workspace_id": env.Workspace.ID, "role": "Viewer"}}}).M(t)
	wsm := workspaces(p)
	if p["org_role"] != "Admin" || len(wsm) != 1 || wsm[env.Workspace.ID] != "Viewer/manual" {
		t.Fatalf("patched: %v", p)
	}
	env.Must(422, "PATCH", membersPath+"/"+id, admin, map[string]any{"email": "other@example.com"})
	env.Must(403, "PATCH", membersPath+"/"+id, editor, map[string]any{"org_role": "Viewer"})
	if n := len(env.Audit("member.updated")); n != 1 {
		t.Fatalf("%d member.updated records", n)
	}

	// Paging.
	for _, e := range []string{"b@example.com", "c@example.com", "d@example.com"} {
		env.Must(201, "POST", membersPath, admin, map[string]any{"email": e})
	}
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		path := membersPath + "?limit=3"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		page := env.Must(200, "GET", path, admin, nil).M(t)
		for _, x := range page["items"].([]any) {
			seen[x.(map[string]any)["id"].(string)] = true
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			if pages != 1 {
				t.Errorf("4 members in %d pages of 3", pages+1)
			}
			break
		}
		cursor = next
	}
	if len(seen) != 4 {
		t.Fatalf("paged %d members, want 4", len(seen))
	}
	env.Must(422, "GET", membersPath+"?limit=0", admin, nil)
	env.Must(422, "GET", membersPath+"?limit=101", admin, nil)

	// Removing a member removes their access.
	env.Must(204, "DELETE", membersPath+"/"+id, admin, nil)
	env.Must(404, "GET", membersPath+"/"+id, admin, nil)
	env.Must(404, "DELETE", membersPath+"/"+id, admin, nil)
	env.Settings(false, false)
	if r := env.SignIn("default", admin, "ann@example.com", "sub-ann"); r.M(t)["decision"] != "denied" {
		t.Fatalf("removed member signed in: %s", r.Raw)
	}
	if n := len(env.Audit("member.removed")); n != 1 {
		t.Fatalf("%d member.removed records", n)
	}
}
