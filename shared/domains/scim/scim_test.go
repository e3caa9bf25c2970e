package scim_test

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const (
	admin     = accesstest.AdminKey
	urnUser   = "urn:ietf:params:scim:schemas:core:2.0:User"
	urnGroup  = "urn:ietf:params:scim:schemas:core:2.0:Group"
	urnPatch  = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	urnList   = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	urnError  = "urn:ietf:params:scim:api:messages:2.0:Error"
	urnWSExt  = "urn:agentplane:params:scim:schemas:extension:workspace:2.0:Group"
	noSuchID  = "00000000-0000-4000-8000-000000000000"
	scimCType = "application/scim+json"
)

func setup(t *testing.T) (*accesstest.Env, string) {
	env := accesstest.New(t, accesstest.Options{})
	return env, env.SCIMToken(admin)
}

// wantError checks a SCIM error response.
func wantError(t *testing.T, r accesstest.Response, status int, scimType string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); ct != scimCType {
		t.Errorf("content type %q", ct)
	}
	b := r.M(t)
	if !reflect.DeepEqual(b["schemas"], []any{urnError}) || b["status"] != fmt.Sprint(status) {
		t.Fatalf("not a SCIM error body: %s", r.Raw)
	}
	if d, _ := b["detail"].(string); d == "" {
		t.Errorf("no detail: %s", r.Raw)
	}
	if got, _ := b["scimType"].(string); got != scimType {
		t.Errorf("scimType %q, want %q: %s", got, scimType, r.Raw)
	}
}

func user(userName string, extra map[string]any) map[string]any {
	u := map[string]any{"schemas": []string{urnUser}, "userName": userName}
	for k, v := range extra {
		u[k] = v
	}
	return u
}

func mustCreateUser(t *testing.T, env *accesstest.Env, tok, userName string, extra map[string]any) map[string]any {
	t.Helper()
	r := env.SCIM("POST", "/Users", tok, user(userName, extra))
	if r.Status != 201 {
		t.Fatalf("create %s: %d %s", userName, r.Status, r.Raw)
	}
	return r.M(t)
}

func patch(ops ...map[string]any) map[string]any {
	return map[string]any{"schemas": []string{urnPatch}, "Operations": ops}
}

func op(name, path string, value any) map[string]any {
	o := map[string]any{"op": name}
	if path != "" {
		o["path"] = path
	}
	if value != nil {
		o["value"] = value
	}
	return o
}

func TestAuth(t *testing.T) {
	env, tok := setup(t)
	other, _, otherAdmin := env.NewOrg("Other")
	_ = other
	otherTok := env.SCIMToken(otherAdmin)
	u := mustCreateUser(t, env, tok, "ana@example.com", nil)

	for name, hdr := range map[string][]string{
		"no header":     nil,
		"basic":         {"Authorization", "Basic YTpi"},
		"unknown token": {"Authorization", "Bearer scim_" + strings.Repeat("x", 43)},
		"API key":       {"Authorization", "Bearer " + admin},
	} {
		t.Run(name, func(t *testing.T) {
			r := env.Request("GET", "/scim/v2/Users", nil, hdr...)
			wantError(t, r, 401, "")
			if r.Header.Get("WWW-Authenticate") == "" {
				t.Error("no WWW-Authenticate")
			}
		})
	}
	// Tokens are per organization.
	if r := env.SCIM("GET", "/Users", otherTok, nil); r.M(t)["totalResults"] != 0.0 {
		t.Fatalf("other organization sees users: %s", r.Raw)
	}
	wantError(t, env.SCIM("GET", "/Users/"+u["id"].(string), otherTok, nil), 404, "")

	// Only admins manage tokens; listing shows no secret; revoked tokens fail.
	env.Must(403, "POST", "/api/v1/orgs/current/scim-tokens", env.Key("Editor"), map[string]any{})
	env.Must(403, "GET", "/api/v1/orgs/current/scim-tokens", env.Key("Editor"), nil)
	list := env.Must(200, "GET", "/api/v1/orgs/current/scim-tokens", admin, nil).Body.([]any)
	if len(list) != 1 || strings.Contains(fmt.Sprint(list), tok) || list[0].(map[string]any)["short_token"] == "" {
		t.Fatalf("token list: %v", list)
	}
	id := list[0].(map[string]any)["id"].(string)
	env.Must(403, "DELETE", "/api/v1/orgs/current/scim-tokens/"+id, env.Key("Editor"), nil)
	env.Must(204, "DELETE", "/api/v1/orgs/current/scim-tokens/"+id, admin, nil)
	env.Must(404, "DELETE", "/api/v1/orgs/current/scim-tokens/"+id, admin, nil)
	wantError(t, env.SCIM("GET", "/Users", tok, nil), 401, "")
	if n := len(env.Audit("scim_token.created")) + len(env.Audit("scim_token.revoked")); n != 2 {
		t.Errorf("%d token audit records", n)
	}
}

func TestDiscovery(t *testing.T) {
	env, tok := setup(t)
	spc := env.SCIM("GET", "/ServiceProviderConfig", tok, nil)
	if spc.Status != 200 || spc.Header.Get("Content-Type") != scimCType {
		t.Fatalf("SPC: %d %s", spc.Status, spc.Raw)
	}
	b := spc.M(t)
	for _, f := range []string{"patch", "bulk", "filter", "changePassword", "sort", "etag", "authenticationSchemes"} {
		if _, ok := b[f]; !ok {
			t.Errorf("SPC lacks %s", f)
		}
	}
	if b["filter"].(map[string]any)["supported"] != true || b["bulk"].(map[string]any)["supported"] != false {
		t.Errorf("SPC: %s", spc.Raw)
	}

	rts := env.SCIM("GET", "/ResourceTypes", tok, nil).M(t)
	if rts["totalResults"] != 2.0 || !reflect.DeepEqual(rts["schemas"], []any{urnList}) {
		t.Fatalf("resource types: %v", rts)
	}
	g := env.SCIM("GET", "/ResourceTypes/Group", tok, nil).M(t)
	if g["endpoint"] != "/Groups" || g["schema"] != urnGroup || g["schemaExtensions"].([]any)[0].(map[string]any)["schema"] != urnWSExt {
		t.Fatalf("Group resource type: %v", g)
	}
	wantError(t, env.SCIM("GET", "/ResourceTypes/Device", tok, nil), 404, "")

	schemas := env.SCIM("GET", "/Schemas", tok, nil).M(t)
	if schemas["totalResults"] != 3.0 {
		t.Fatalf("schemas: %v", schemas)
	}
	us := env.SCIM("GET", "/Schemas/"+urnUser, tok, nil).M(t)
	var userName map[string]any
	for _, a := range us["attributes"].([]any) {
		if a.(map[string]any)["name"] == "userName" {
			userName = a.(map[string]any)
		}
	}
	if userName == nil || userName["required"] != true || userName["uniqueness"] != "server" || userName["caseExact"] != false {
		t.Fatalf("userName attribute: %v", userName)
	}
	wantError(t, env.SCIM("GET", "/Schemas/urn:nope", tok, nil), 404, "")
	wantError(t, env.SCIM("GET", "/Schemas?filter="+url.QueryEscape(`id eq "x"`), tok, nil), 403, "")
}

func TestUsersCRUD(t *testing.T) {
	env, tok := setup(t)
	r := env.SCIM("POST", "/Users", tok, user("Barbara.Jensen@Example.com", map[string]any{
		"externalId": "bjensen",
		"name":       map[string]any{"givenName": "Barbara", "familyName": "Jensen", "unknownPart": "x"},
		"emails":     []any{map[string]any{"value": "bjensen@example.com", "type": "work", "primary": true}},
		"id":         "client-chosen-id-is-ignored",
		"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User": map[string]any{"department": "R&D"},
	}))
	if r.Status != 201 || r.Header.Get("Content-Type") != scimCType {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	u := r.M(t)
	id := u["id"].(string)
	meta := u["meta"].(map[string]any)
	if id == "client-chosen-id-is-ignored" || u["userName"] != "Barbara.Jensen@Example.com" || u["active"] != true ||
		u["externalId"] != "bjensen" || meta["resourceType"] != "User" || r.Header.Get("Location") != meta["location"] ||
		!strings.HasSuffix(meta["location"].(string), "/scim/v2/Users/"+id) || r.Header.Get("ETag") != meta["version"] {
		t.Fatalf("created user: %s (Location %q, ETag %q)", r.Raw, r.Header.Get("Location"), r.Header.Get("ETag"))
	}
	if _, ok := u["name"].(map[string]any)["unknownPart"]; ok {
		t.Error("unknown sub-attribute kept")
	}

	// The member record: SCIM source, email from the primary email.
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+id, admin, nil).M(t)
	if m["source"] != "scim" || m["scim_managed"] != true || m["email"] != "bjensen@example.com" || m["name"] != "Barbara Jensen" {
		t.Fatalf("member: %v", m)
	}

	// userName is unique, case-insensitively; so is the email.
	wantError(t, env.SCIM("POST", "/Users", tok, user("barbara.jensen@example.COM", nil)), 409, "uniqueness")
	wantError(t, env.SCIM("POST", "/Users", tok, user("other", map[string]any{
		"emails": []any{map[string]any{"value": "BJensen@example.com"}}})), 409, "uniqueness")

	got := env.SCIM("GET", "/Users/"+id, tok, nil)
	if got.Status != 200 || got.M(t)["userName"] != "Barbara.Jensen@Example.com" || got.Header.Get("ETag") == "" {
		t.Fatalf("get: %s", got.Raw)
	}
	wantError(t, env.SCIM("GET", "/Users/"+noSuchID, tok, nil), 404, "")

	// PUT replaces: attributes left out are cleared.
	put := env.SCIM("PUT", "/Users/"+id, tok, user("bjensen", map[string]any{"displayName": "Babs", "active": false}))
	p := put.M(t)
	if put.Status != 200 || p["userName"] != "bjensen" || p["displayName"] != "Babs" || p["active"] != false || p["name"] != nil || p["externalId"] != nil {
		t.Fatalf("put: %s", put.Raw)
	}
	if p["meta"].(map[string]any)["version"] == meta["version"] {
		t.Error("version did not change")
	}
	wantError(t, env.SCIM("PUT", "/Users/"+id, tok, map[string]any{"schemas": []string{urnUser}}), 400, "invalidValue")
	wantError(t, env.SCIM("PUT", "/Users/"+noSuchID, tok, user("x", nil)), 404, "")

	// If-Match.
	etag := put.Header.Get("ETag")
	wantError(t, env.SCIM("PUT", "/Users/"+id, tok, user("bjensen", nil), "If-Match", `W/"1"`), 412, "")
	ok := env.SCIM("PUT", "/Users/"+id, tok, user("bjensen", map[string]any{"active": true}), "If-Match", etag)
	if ok.Status != 200 {
		t.Fatalf("matching If-Match: %s", ok.Raw)
	}
	wantError(t, env.SCIM("DELETE", "/Users/"+id, tok, nil, "If-Match", etag), 412, "")

	// Bad bodies.
	wantError(t, env.SCIM("POST", "/Users", tok, map[string]any{"userName": "x"}), 400, "invalidSyntax")
	wantError(t, env.SCIM("POST", "/Users", tok, `{"schemas":`), 400, "invalidSyntax")
	wantError(t, env.SCIM("POST", "/Users", tok, `[]`), 400, "invalidSyntax")
	wantError(t, env.SCIM("POST", "/Users", tok, user("x", map[string]any{"active": "maybe"})), 400, "invalidValue")
	wantError(t, env.SCIM("POST", "/Users", tok, user("x", map[string]any{"name": "flat"})), 400, "invalidValue")
	wantError(t, env.SCIM("POST", "/Users", tok, user("x", map[string]any{"emails": []any{map[string]any{"value": "nope"}}})), 400, "invalidValue")
	wantError(t, env.SCIM("POST", "/Users", tok, user("x", map[string]any{"emails": []any{
		map[string]any{"value": "a@x.test", "primary": true}, map[string]any{"value": "b@x.test", "primary": true}}})), 400, "invalidValue")
	wantError(t, env.SCIM("POST", "/Users", tok, user(" ", nil)), 400, "invalidValue")
	var many []any
	for i := 0; i < 101; i++ {
		many = append(many, map[string]any{"value": fmt.Sprintf("e%d@x.test", i)})
	}
	wantError(t, env.SCIM("POST", "/Users", tok, user("x", map[string]any{"emails": many})), 400, "invalidValue")
	wantError(t, env.Request("POST", "/scim/v2/Users", "userName=x", "Authorization", "Bearer "+tok, "Content-Type", "application/x-www-form-urlencoded"), 415, "")

	// DELETE.
	del := env.SCIM("DELETE", "/Users/"+id, tok, nil)
	if del.Status != 204 || del.Raw != "" {
		t.Fatalf("delete: %d %s", del.Status, del.Raw)
	}
	wantError(t, env.SCIM("GET", "/Users/"+id, tok, nil), 404, "")
	wantError(t, env.SCIM("DELETE", "/Users/"+id, tok, nil), 404, "")
	env.Must(404, "GET", "/api/v1/orgs/current/members/"+id, admin, nil)

	// Audited with the SCIM token as actor.
	created := env.Audit("member.created")
	if len(created) != 1 || created[0]["actor"].(map[string]any)["type"] != "scim_token" {
		t.Fatalf("member.created records: %v", created)
	}
	if n := len(env.Audit("member.removed")); n != 1 {
		t.Fatalf("%d member.removed records", n)
	}
}

func listUsers(t *testing.T, env *accesstest.Env, tok, query string) map[string]any {
	t.Helper()
	r := env.SCIM("GET", "/Users?"+query, tok, nil)
	if r.Status != 200 {
		t.Fatalf("list %s: %d %s", query, r.Status, r.Raw)
	}
	return r.M(t)
}

func userNames(list map[string]any) []string {
	var out []string
	for _, x := range list["Resources"].([]any) {
		out = append(out, x.(map[string]any)["userName"].(string))
	}
	return out
}

func TestUsersFilterAndPaging(t *testing.T) {
	env, tok := setup(t)
	for i, name := range []string{"alice", "bob", "carol", "dave", "erin"} {
		mustCreateUser(t, env, tok, name+"@example.com", map[string]any{
			"name":   map[string]any{"givenName": strings.ToUpper(name[:1]) + name[1:], "familyName": fmt.Sprintf("F%d", i)},
			"emails": []any{map[string]any{"value": name + "@example.com", "type": map[bool]string{true: "work", false: "home"}[i%2 == 0]}},
			"active": i != 3,
		})
	}
	// Members not created through SCIM are SCIM users too.
	env.Must(201, "POST", "/api/v1/orgs/current/members", admin, map[string]any{"email": "manual@corp.test"})

	q := func(f string) string { return "filter=" + url.QueryEscape(f) }
	for _, c := range []struct {
		filter string
		want   []string
	}{
		{`userName eq "BOB@example.com"`, []string{"bob@example.com"}},
		{`userName eq "nobody@example.com"`, nil},
		{`userName sw "c"`, []string{"carol@example.com"}},
		{`userName ew "corp.test"`, []string{"manual@corp.test"}},
		{`userName co "RO"`, []string{"carol@example.com"}},
		{`active eq false`, []string{"dave@example.com"}},
		{`active eq true and name.familyName ge "F2"`, []string{"carol@example.com", "erin@example.com"}},
		{`emails[type eq "home"]`, []string{"bob@example.com", "dave@example.com"}},
		{`emails[type eq "work" and (value sw "A" or value sw "c")]`, []string{"alice@example.com", "carol@example.com"}},
		{`emails co "erin"`, []string{"erin@example.com"}},
		{`emails.value ew "@corp.test"`, []string{"manual@corp.test"}},
		{`not (userName sw "a") and name pr`, []string{"bob@example.com", "carol@example.com", "dave@example.com", "erin@example.com"}},
		{`(userName eq "alice@example.com" or userName eq "erin@example.com") and active eq true`, []string{"alice@example.com", "erin@example.com"}},
		{`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "dave@example.com"`, []string{"dave@example.com"}},
		{`name.givenName eq "alice"`, []string{"alice@example.com"}},
		{`externalId pr`, nil},
		{`meta.created gt "2000-01-01T00:00:00Z"`, []string{"alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com", "erin@example.com", "manual@corp.test"}},
		{`meta.resourceType eq "User" and userName eq "x"`, nil},
	} {
		t.Run(c.filter, func(t *testing.T) {
			l := listUsers(t, env, tok, q(c.filter)+"&sortBy=userName")
			if got := userNames(l); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			if l["totalResults"] != float64(len(c.want)) {
				t.Fatalf("totalResults %v", l["totalResults"])
			}
		})
	}
	for _, f := range []string{`userName`, `userName eq`, `userName zz "a"`, `nosuch eq "a"`, `name eq "a"`, `active gt true`,
		`userName eq 5`, `(userName eq "a"`, `userName eq "a" or`, `emails[type eq "work"`, `emails[nosub eq "x"]`,
		`meta.created gt "yesterday"`, `userName eq "unterminated`, strings.Repeat("(", 40) + `userName pr` + strings.Repeat(")", 40)} {
		wantError(t, env.SCIM("GET", "/Users?"+q(f), tok, nil), 400, "invalidFilter")
	}

	// Paging: 1-based startIndex, count, totalResults over all matches.
	l := listUsers(t, env, tok, "sortBy=userName&startIndex=2&count=2")
	if got := userNames(l); !reflect.DeepEqual(got, []string{"bob@example.com", "carol@example.com"}) ||
		l["totalResults"] != 6.0 || l["startIndex"] != 2.0 || l["itemsPerPage"] != 2.0 {
		t.Fatalf("page: %v", l)
	}
	l = listUsers(t, env, tok, "sortBy=userName&sortOrder=descending&count=1")
	if got := userNames(l); !reflect.DeepEqual(got, []string{"manual@corp.test"}) {
		t.Fatalf("descending: %v", got)
	}
	if l := listUsers(t, env, tok, "startIndex=0&count=-3"); l["startIndex"] != 1.0 || l["itemsPerPage"] != 0.0 || l["totalResults"] != 6.0 {
		t.Fatalf("startIndex 0, negative count: %v", l)
	}
	if l := listUsers(t, env, tok, "startIndex=99"); len(l["Resources"].([]any)) != 0 || l["totalResults"] != 6.0 {
		t.Fatalf("past the end: %v", l)
	}
	// Walking pages of 4 returns every user once, in creation order.
	seen := map[string]bool{}
	for start := 1; start <= 6; start += 4 {
		for _, n := range userNames(listUsers(t, env, tok, fmt.Sprintf("startIndex=%d&count=4", start))) {
			seen[n] = true
		}
	}
	if len(seen) != 6 {
		t.Fatalf("paging saw %d users", len(seen))
	}
	wantError(t, env.SCIM("GET", "/Users?startIndex=x", tok, nil), 400, "invalidValue")
	wantError(t, env.SCIM("GET", "/Users?count=x", tok, nil), 400, "invalidValue")
	wantError(t, env.SCIM("GET", "/Users?sortOrder=up", tok, nil), 400, "invalidValue")
	wantError(t, env.SCIM("GET", "/Users?sortBy=nosuch", tok, nil), 400, "invalidPath")

	// attributes / excludedAttributes.
	one := listUsers(t, env, tok, q(`userName eq "alice@example.com"`)+"&attributes=userName,name.givenName")["Resources"].([]any)[0].(map[string]any)
	if len(one) != 4 || one["name"].(map[string]any)["givenName"] != "Alice" || len(one["name"].(map[string]any)) != 1 || one["id"] == nil {
		t.Fatalf("attributes: %v", one)
	}
	one = listUsers(t, env, tok, q(`userName eq "alice@example.com"`)+"&excludedAttributes=emails,meta,id")["Resources"].([]any)[0].(map[string]any)
	if _, ok := one["emails"]; ok || one["meta"] != nil || one["id"] == nil {
		t.Fatalf("excludedAttributes: %v", one)
	}
}

func TestUsersPatch(t *testing.T) {
	env, tok := setup(t)
	u := mustCreateUser(t, env, tok, "pat@example.com", map[string]any{
		"name":   map[string]any{"givenName": "Pat", "familyName": "Doe"},
		"emails": []any{map[string]any{"value": "pat@example.com", "type": "work", "primary": true}},
	})
	id := u["id"].(string)
	do := func(ops ...map[string]any) accesstest.Response {
		return env.SCIM("PATCH", "/Users/"+id, tok, patch(ops...))
	}
	ok := func(ops ...map[string]any) map[string]any {
		t.Helper()
		r := do(ops...)
		if r.Status != 200 {
			t.Fatalf("patch: %d %s", r.Status, r.Raw)
		}
		return r.M(t)
	}

	// Entra ID style: capitalized op, string boolean, no-path with dotted keys.
	got := ok(op("Replace", "active", "False"), op("replace", "", map[string]any{"name.givenName": "Patricia", "displayName": "Trish", "id": id}))
	if got["active"] != false || got["name"].(map[string]any)["givenName"] != "Patricia" || got["name"].(map[string]any)["familyName"] != "Doe" || got["displayName"] != "Trish" {
		t.Fatalf("replace: %v", got)
	}
	// add to a multi-valued attribute; a new primary un-sets the old one.
	got = ok(op("add", "emails", []any{map[string]any{"value": "trish@home.test", "type": "home", "primary": true}}))
	emails := got["emails"].([]any)
	if len(emails) != 2 || emails[0].(map[string]any)["primary"] != false || emails[1].(map[string]any)["primary"] != true {
		t.Fatalf("add emails: %v", emails)
	}
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+id, admin, nil).M(t)
	if m["email"] != "trish@home.test" {
		t.Fatalf("primary email not used: %v", m)
	}
	// value filter paths.
	got = ok(op("replace", `emails[type eq "work"].value`, "patricia@example.com"))
	if got["emails"].([]any)[0].(map[string]any)["value"] != "patricia@example.com" {
		t.Fatalf("filtered replace: %v", got["emails"])
	}
	got = ok(op("remove", `emails[type eq "home"]`, nil))
	if len(got["emails"].([]any)) != 1 {
		t.Fatalf("filtered remove: %v", got["emails"])
	}
	// add through a filter that matches nothing creates the element.
	got = ok(op("add", `emails[type eq "other"].value`, "pd@other.test"))
	if len(got["emails"].([]any)) != 2 {
		t.Fatalf("filtered add: %v", got["emails"])
	}
	got = ok(op("remove", "name.familyName", nil), op("add", "title", "Engineer"), op("remove", "nickName", nil))
	if _, ok := got["name"].(map[string]any)["familyName"]; ok || got["title"] != "Engineer" {
		t.Fatalf("remove sub-attribute, add: %v", got)
	}
	got = ok(op("replace", "urn:ietf:params:scim:schemas:core:2.0:User:active", true))
	if got["active"] != true {
		t.Fatalf("URN path: %v", got)
	}
	version := got["meta"].(map[string]any)["version"].(string)

	// Errors change nothing: a failing operation rolls back the earlier ones.
	for _, c := range []struct {
		ops      []map[string]any
		status   int
		scimType string
	}{
		{[]map[string]any{op("replace", "title", "Boss"), op("replace", "nosuch", "x")}, 400, "invalidPath"},
		{[]map[string]any{op("replace", "title", "Boss"), op("replace", "id", "x")}, 400, "mutability"},
		{[]map[string]any{op("replace", "groups", []any{})}, 400, "mutability"},
		{[]map[string]any{op("remove", "", nil)}, 400, "noTarget"},
		{[]map[string]any{op("replace", `emails[type eq "fax"].value`, "x@y.test")}, 400, "noTarget"},
		{[]map[string]any{op("remove", "userName", nil)}, 400, "invalidValue"},
		{[]map[string]any{op("replace", "active", "perhaps")}, 400, "invalidValue"},
		{[]map[string]any{op("move", "title", "x")}, 400, "invalidSyntax"},
		{[]map[string]any{op("replace", "", "not an object")}, 400, "invalidSyntax"},
		{[]map[string]any{op("replace", `emails[type eq "work"`, "x")}, 400, "invalidPath"},
		{[]map[string]any{op("replace", `emails[type xx "work"].value`, "x")}, 400, "invalidPath"},
		{[]map[string]any{op("replace", `title[value eq "x"]`, "x")}, 400, "invalidPath"},
		{[]map[string]any{op("add", "emails", manyEmails("m", 60)), op("add", "emails", manyEmails("n", 60))}, 400, "invalidValue"},
	} {
		wantError(t, do(c.ops...), c.status, c.scimType)
	}
	wantError(t, env.SCIM("PATCH", "/Users/"+id, tok, map[string]any{"Operations": []any{op("add", "title", "x")}}), 400, "invalidSyntax")
	wantError(t, env.SCIM("PATCH", "/Users/"+id, tok, map[string]any{"schemas": []string{urnPatch}, "Operations": []any{}}), 400, "invalidSyntax")
	wantError(t, env.SCIM("PATCH", "/Users/"+noSuchID, tok, patch(op("add", "title", "x"))), 404, "")
	wantError(t, env.SCIM("PATCH", "/Users/"+id, tok, patch(op("add", "title", "x")), "If-Match", `W/"1"`), 412, "")
	now := env.SCIM("GET", "/Users/"+id, tok, nil).M(t)
	if now["title"] != "Engineer" || now["meta"].(map[string]any)["version"] != version {
		t.Fatalf("a failed PATCH changed the user: %v", now)
	}
	// A PATCH that changes nothing writes nothing.
	same := ok(op("replace", "title", "Engineer"))
	if same["meta"].(map[string]any)["version"] != version {
		t.Fatal("no-op PATCH bumped the version")
	}
}

func group(displayName string, members []string, extra map[string]any) map[string]any {
	g := map[string]any{"schemas": []string{urnGroup}, "displayName": displayName}
	var ms []any
	for _, m := range members {
		ms = append(ms, map[string]any{"value": m})
	}
	if ms != nil {
		g["members"] = ms
	}
	for k, v := range extra {
		g[k] = v
	}
	return g
}

func TestGroupsCRUD(t *testing.T) {
	env, tok := setup(t)
	ws := env.NewWorkspace("Research")
	a := mustCreateUser(t, env, tok, "a@example.com", map[string]any{"displayName": "A"})["id"].(string)
	b := mustCreateUser(t, env, tok, "b@example.com", nil)["id"].(string)

	r := env.SCIM("POST", "/Groups", tok, group("agentplane:Research:Editor", []string{a}, map[string]any{"externalId": "g-1"}))
	if r.Status != 201 || r.Header.Get("Location") == "" {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	g := r.M(t)
	gid := g["id"].(string)
	members := g["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["value"] != a || members[0].(map[string]any)["display"] != "A" || g["externalId"] != "g-1" {
		t.Fatalf("group: %s", r.Raw)
	}
	// The user shows the group.
	ua := env.SCIM("GET", "/Users/"+a, tok, nil).M(t)
	if gs := ua["groups"].([]any); len(gs) != 1 || gs[0].(map[string]any)["value"] != gid || gs[0].(map[string]any)["display"] != "agentplane:Research:Editor" {
		t.Fatalf("user groups: %v", ua["groups"])
	}
	// ...and the role.
	if w := workspacesOf(t, env, a); w[ws] != "Editor/scim" {
		t.Fatalf("access: %v", w)
	}

	// Extension mapping, by id.
	ext := env.SCIM("POST", "/Groups", tok, group("Admins", []string{b}, map[string]any{
		"schemas": []string{urnGroup, urnWSExt}, urnWSExt: map[string]any{"workspaceId": env.Workspace.ID, "role": "admin"}}))
	if ext.Status != 201 || ext.M(t)[urnWSExt].(map[string]any)["role"] != "Admin" {
		t.Fatalf("extension group: %s", ext.Raw)
	}
	if w := workspacesOf(t, env, b); w[env.Workspace.ID] != "Admin/scim" {
		t.Fatalf("access: %v", w)
	}
	// A group with no mapping is fine; bad mappings and members are not.
	env.SCIM("POST", "/Groups", tok, group("Everyone", []string{a, b}, nil))
	for _, body := range []map[string]any{
		group("agentplane:Nowhere:Editor", nil, nil),
		group("agentplane:Research:Owner", nil, nil),
		group("agentplane:Research", nil, nil),
		group("x", nil, map[string]any{urnWSExt: map[string]any{"workspaceId": noSuchID, "role": "User"}}),
		group("x", nil, map[string]any{urnWSExt: map[string]any{"role": "User"}}),
		group("x", []string{noSuchID}, nil),
		group("x", nil, map[string]any{"members": []any{map[string]any{"value": gid, "type": "Group"}}}),
		group("", nil, nil),
	} {
		wantError(t, env.SCIM("POST", "/Groups", tok, body), 400, "invalidValue")
	}

	// List and filter.
	l := env.SCIM("GET", "/Groups?filter="+url.QueryEscape(`displayName eq "everyone"`), tok, nil).M(t)
	if l["totalResults"] != 1.0 {
		t.Fatalf("filter: %v", l)
	}
	l = env.SCIM("GET", "/Groups?filter="+url.QueryEscape(`members[value eq "`+b+`"]`)+"&excludedAttributes=members", tok, nil).M(t)
	if l["totalResults"] != 2.0 || l["Resources"].([]any)[0].(map[string]any)["members"] != nil {
		t.Fatalf("members filter: %v", l)
	}
	if l := env.SCIM("GET", "/Groups?count=1&sortBy=displayName", tok, nil).M(t); l["totalResults"] != 3.0 || len(l["Resources"].([]any)) != 1 ||
		l["Resources"].([]any)[0].(map[string]any)["displayName"] != "Admins" {
		t.Fatalf("paging: %v", l)
	}

	// PATCH members: add, remove by filter, remove by value list (Entra ID).
	do := func(ops ...map[string]any) map[string]any {
		t.Helper()
		r := env.SCIM("PATCH", "/Groups/"+gid, tok, patch(ops...))
		if r.Status != 200 {
			t.Fatalf("patch: %d %s", r.Status, r.Raw)
		}
		return r.M(t)
	}
	g = do(op("add", "members", []any{map[string]any{"value": b}, map[string]any{"value": a}}))
	if len(g["members"].([]any)) != 2 {
		t.Fatalf("add members: %v", g["members"])
	}
	if w := workspacesOf(t, env, b); w[ws] != "Editor/scim" {
		t.Fatalf("b after add: %v", w)
	}
	g = do(op("remove", `members[value eq "`+a+`"]`, nil))
	if len(g["members"].([]any)) != 1 {
		t.Fatalf("remove by filter: %v", g["members"])
	}
	if w := workspacesOf(t, env, a); w[ws] != "" {
		t.Fatalf("a kept the role: %v", w)
	}
	g = do(op("Remove", "members", []any{map[string]any{"value": b}}))
	if g["members"] != nil {
		t.Fatalf("remove by value: %v", g["members"])
	}
	wantError(t, env.SCIM("PATCH", "/Groups/"+gid, tok, patch(op("add", "members", []any{map[string]any{"value": noSuchID}}))), 400, "invalidValue")
	// Renaming re-maps; PUT replaces.
	g = do(op("replace", "displayName", "agentplane:Research:Viewer"), op("add", "members", []any{map[string]any{"value": a}}))
	if g["displayName"] != "agentplane:Research:Viewer" {
		t.Fatalf("rename: %v", g)
	}
	if w := workspacesOf(t, env, a); w[ws] != "Viewer/scim" {
		t.Fatalf("after rename: %v", w)
	}
	put := env.SCIM("PUT", "/Groups/"+gid, tok, group("Plain", []string{b}, nil))
	if put.Status != 200 || put.M(t)["displayName"] != "Plain" || len(put.M(t)["members"].([]any)) != 1 {
		t.Fatalf("put: %s", put.Raw)
	}
	if w := workspacesOf(t, env, a); w[ws] != "" {
		t.Fatalf("a kept the role after PUT: %v", w)
	}

	// DELETE.
	if r := env.SCIM("DELETE", "/Groups/"+gid, tok, nil); r.Status != 204 {
		t.Fatalf("delete: %s", r.Raw)
	}
	wantError(t, env.SCIM("GET", "/Groups/"+gid, tok, nil), 404, "")
	wantError(t, env.SCIM("DELETE", "/Groups/"+gid, tok, nil), 404, "")
	if n := len(env.Audit("group.created")); n != 3 {
		t.Errorf("%d group.created records", n)
	}
	if n := len(env.Audit("group.removed")); n != 1 {
		t.Errorf("%d group.removed records", n)
	}
}

// workspacesOf maps workspace id → "role/source" of a member's effective access.
func workspacesOf(t *testing.T, env *accesstest.Env, id string) map[string]string {
	t.Helper()
	m := env.Must(200, "GET", "/api/v1/orgs/current/members/"+id, admin, nil).M(t)
	out := map[string]string{}
	for _, x := range m["workspaces"].([]any) {
		a := x.(map[string]any)
		out[a["workspace_id"].(string)] = a["role"].(string) + "/" + a["source"].(string)
	}
	return out
}

func manyEmails(prefix string, n int) []any {
	var out []any
	for i := 0; i < n; i++ {
		out = append(out, map[string]any{"value": fmt.Sprintf("%s%d@x.test", prefix, i), "type": "other"})
	}
	return out
}
