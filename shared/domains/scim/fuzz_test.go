package scim

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/orgaccess"
)

// These fuzz tests guard the promise that no filter or PATCH body can
// panic (and so produce a 500): every input is either applied or rejected
// with a SCIM *Error.

func sampleUser() map[string]any {
	m := orgaccess.Member{
		ID: "u1", UserName: "ada@example.com", Email: "ada@example.com", Name: "Ada", Active: true,
		Profile: map[string]any{
			"name":   map[string]any{"givenName": "Ada", "familyName": "Lovelace"},
			"emails": []any{map[string]any{"value": "ada@example.com", "type": "work", "primary": true}},
		},
		CreatedAt: time.Unix(0, 0), UpdatedAt: time.Unix(0, 0), Version: 1,
	}
	g := orgaccess.Group{ID: "g1", DisplayName: "Team", Members: []string{"u1"}}
	return userResource(m, []orgaccess.Group{g}, "http://x/scim/v2")
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{
		`userName eq "ada@example.com"`, `emails[type eq "work" and value co "@"]`, `not (active eq false) or name.givenName sw "A"`,
		`meta.created gt "2020-01-01T00:00:00Z"`, `groups.value pr`, `((userName pr))`, `userName eq "a\"b"`, `emails[value eq "x"`,
		`urn:ietf:params:scim:schemas:core:2.0:User:name.familyName le "z"`, `active eq true and`, `x[`, `]`, `"`, `not(`,
	} {
		f.Add(s)
	}
	res := sampleUser()
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseFilter(Users, s)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) || se.Status != 400 || se.ScimType != InvalidFilter {
				t.Fatalf("filter %q: unexpected error %v", s, err)
			}
			return
		}
		e.Match(res)
		e.Match(map[string]any{})
	})
}

func FuzzPatch(f *testing.F) {
	for _, s := range []string{
		`{"op":"replace","path":"active","value":"False"}`,
		`{"op":"add","path":"emails","value":[{"value":"b@x.test","primary":true}]}`,
		`{"op":"remove","path":"emails[type eq \"work\"]"}`,
		`{"op":"add","path":"emails[type eq \"home\"].value","value":"h@x.test"}`,
		`{"op":"replace","value":{"name.givenName":"B","displayName":"B","id":"z"}}`,
		`{"op":"remove","path":"members","value":[{"value":"u1"}]}`,
		`{"op":"replace","path":"name","value":{"familyName":null}}`,
		`{"op":"add","path":"title","value":[1,2]}`,
		`{"op":"replace","path":"emails[value eq \"ada@example.com\"]","value":{"primary":false}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var o any
		if json.Unmarshal([]byte(raw), &o) != nil {
			return
		}
		body := map[string]any{"schemas": []any{URNPatchOp}, "Operations": []any{o, o}}
		ops, err := parsePatchBody(body)
		if err != nil {
			return
		}
		for _, rt := range []*ResourceType{Users, Groups} {
			res := sampleUser()
			if rt == Groups {
				res = groupResource(orgaccess.Group{ID: "g1", DisplayName: "Team", Members: []string{"u1"}}, nil, "http://x")
			}
			if err := applyPatch(rt, res, ops); err != nil {
				var se *Error
				if !errors.As(err, &se) {
					t.Fatalf("%s: non-SCIM error %v", raw, err)
				}
				continue
			}
			if rt == Users {
				var m orgaccess.Member
				_ = applyUser(res, &m)
			} else {
				_, _ = parseGroup(res)
			}
			if _, err := json.Marshal(res); err != nil {
				t.Fatalf("%s: result does not encode: %v", raw, err)
			}
		}
	})
}
