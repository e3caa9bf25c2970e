package orgaccess_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const auditPath = "/api/v1/orgs/current/audit"

func TestAuditListing(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	_, _, otherAdmin := env.NewOrg("Other")
	env.Settings(false, true)                              // 1 settings change
	invite(t, env, "a@example.com", "User")                // 1 invite.created
	env.SignIn("default", admin, "a@example.com", "sub-a") // claimed
	env.SignIn("default", admin, "b@example.com", "sub-b") // denied
	env.Must(200, "PATCH", ssoPath, admin, map[string]any{"default_workspace_role": "User"})
	for i := 0; i < 3; i++ {
		env.SignIn("default", admin, fmt.Sprintf("c%d@example.com", i), "sub-c") // denied
	}

	// Newest first, paged with next_cursor until null.
	var all []map[string]any
	cursor := ""
	pages := 0
	for {
		path := auditPath + "?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		page := env.Must(200, "GET", path, admin, nil).M(t)
		items := page["items"].([]any)
		if len(items) > 2 {
			t.Fatalf("page of %d with limit=2", len(items))
		}
		for _, x := range items {
			all = append(all, x.(map[string]any))
		}
		pages++
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(all) != 8 || pages < 4 {
		t.Fatalf("%d records in %d pages", len(all), pages)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1]["created_at"].(string) < all[i]["created_at"].(string) {
			t.Fatalf("not newest first at %d", i)
		}
	}
	last := all[len(all)-1]
	if last["action"] != "organization.settings.updated" || last["organization_id"] != env.Org.ID {
		t.Fatalf("oldest record: %v", last)
	}
	for _, r := range all {
		for _, f := range []string{"id", "created_at", "action", "actor", "target"} {
			if _, ok := r[f]; !ok {
				t.Fatalf("record lacks %s: %v", f, r)
			}
		}
	}

	// Filter by action; decisions carry decision and reason.
	signIns := env.Audit("sso.sign_in")
	if len(signIns) != 5 {
		t.Fatalf("%d sign-in records", len(signIns))
	}
	if signIns[len(signIns)-1]["decision"] != "invite_claimed" || signIns[0]["decision"] != "denied" || signIns[0]["reason"] != "no_pending_invite" {
		t.Fatalf("sign-in records: %v", signIns)
	}

	// Organizations see only their own records; only admins list them.
	if items := env.Must(200, "GET", auditPath, otherAdmin, nil).M(t)["items"].([]any); len(items) != 0 {
		t.Fatalf("other organization sees %d records", len(items))
	}
	env.Must(403, "GET", auditPath, env.Key("Editor"), nil)
	env.Must(401, "GET", auditPath, "", nil)
	env.Must(422, "GET", auditPath+"?limit=0", admin, nil)
	env.Must(422, "GET", auditPath+"?limit=x", admin, nil)
	env.Must(422, "GET", auditPath+"?cursor=%25%25garbage", admin, nil)
}

// Self-hosted: the settings apply only to the default organization; the
// others use invites (JIT off, invites on whatever their settings).
func TestSelfHosted(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{SelfHosted: true})
	other, _, otherAdmin := env.NewOrg("Acme")

	// The default organization follows its own settings.
	env.Settings(true, false)
	org := env.Must(200, "GET", infoPath, admin, nil).M(t)
	if org["effective_jit_provisioning_enabled"] != true || org["effective_invites_enabled"] != false {
		t.Fatalf("default organization: %v", org)
	}
	if r := env.SignIn("default", admin, "a@example.com", "sub-a"); r.M(t)["decision"] != "jit_provisioned" {
		t.Fatalf("default organization JIT: %s", r.Raw)
	}
	env.Must(400, "POST", invitesPath, admin, map[string]any{"email": "b@example.com"})

	// Another organization: its settings say JIT on, invites off...
	env.Must(200, "PATCH", infoPath, otherAdmin, map[string]any{"jit_provisioning_enabled": true, "invites_enabled": false})
	o := env.Must(200, "GET", infoPath, otherAdmin, nil).M(t)
	if o["jit_provisioning_enabled"] != true || o["effective_jit_provisioning_enabled"] != false || o["effective_invites_enabled"] != true {
		t.Fatalf("other organization: %v", o)
	}
	// ...but without an invite sign-in is denied, and invites work.
	slug := other.SSOLoginSlug
	r := env.SignIn(slug, otherAdmin, "c@acme.test", "sub-c")
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "no_pending_invite" {
		t.Fatalf("other organization without invite: %s", r.Raw)
	}
	env.Must(201, "POST", invitesPath, otherAdmin, map[string]any{"email": "c@acme.test", "org_role": "Editor"})
	r = env.SignIn(slug, otherAdmin, "c@acme.test", "sub-c")
	if r.M(t)["decision"] != "invite_claimed" || member(t, r)["org_role"] != "Editor" {
		t.Fatalf("other organization with invite: %s", r.Raw)
	}
	// The default organization's admin key cannot sign anyone in to Acme.
	env.Must(403, "POST", "/api/v1/sso/"+slug+"/sign-in", admin,
		map[string]any{"email": "d@acme.test", "email_verified": true, "idp_subject": "sub-d"})
}

// SELF_HOSTED_JIT_PROVISIONING_ENABLED=false disables JIT for every
// organization, the default one included, whatever its setting.
func TestSelfHostedJITDisabled(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{SelfHosted: true, JITDisabled: true})
	env.Settings(true, true)
	org := env.Must(200, "GET", infoPath, admin, nil).M(t)
	if org["jit_provisioning_enabled"] != true || org["effective_jit_provisioning_enabled"] != false {
		t.Fatalf("organization: %v", org)
	}
	r := env.SignIn("default", admin, "a@example.com", "sub-a")
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "no_pending_invite" {
		t.Fatalf("JIT was not disabled: %s", r.Raw)
	}
	invite(t, env, "a@example.com", "User")
	if r := env.SignIn("default", admin, "a@example.com", "sub-a"); r.M(t)["decision"] != "invite_claimed" {
		t.Fatalf("invite: %s", r.Raw)
	}
	env.Settings(true, false)
	r = env.SignIn("default", admin, "z@example.com", "sub-z")
	if r.M(t)["decision"] != "denied" || r.M(t)["reason"] != "scim_or_admin_only" {
		t.Fatalf("both off: %s", r.Raw)
	}
}

// The variable disables JIT outside self-hosted mode too, for every
// organization; invites keep working.
func TestJITVariableOutsideSelfHosted(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{JITDisabled: true})
	other, _, otherAdmin := env.NewOrg("Acme")
	if r := env.SignIn("default", admin, "a@example.com", "sub-a"); r.M(t)["reason"] != "no_pending_invite" {
		t.Fatalf("default organization: %s", r.Raw)
	}
	if r := env.SignIn(other.SSOLoginSlug, otherAdmin, "b@acme.test", "sub-b"); r.M(t)["reason"] != "no_pending_invite" {
		t.Fatalf("other organization: %s", r.Raw)
	}
	env.Must(201, "POST", invitesPath, otherAdmin, map[string]any{"email": "b@acme.test"})
	if r := env.SignIn(other.SSOLoginSlug, otherAdmin, "b@acme.test", "sub-b"); r.M(t)["decision"] != "invite_claimed" {
		t.Fatalf("invite: %s", r.Raw)
	}
}

// Without the self-hosted rules every organization follows its own settings.
func TestHostedOrganizationsFollowTheirSettings(t *testing.T) {
	env := accesstest.New(t, accesstest.Options{})
	other, _, otherAdmin := env.NewOrg("Acme")
	if r := env.SignIn(other.SSOLoginSlug, otherAdmin, "b@acme.test", "sub-b"); r.M(t)["decision"] != "jit_provisioned" {
		t.Fatalf("other organization: %s", r.Raw)
	}
	env.Must(200, "PATCH", infoPath, otherAdmin, map[string]any{"invites_enabled": false})
	env.Must(400, "POST", invitesPath, otherAdmin, map[string]any{"email": "c@acme.test"})
}
