package web_test

import (
	"encoding/json"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

type inner struct {
	Flag bool `json:"flag"`
}

type embedded struct {
	Promoted *int `json:"promoted"`
}

type outer struct {
	Name  string           `json:"name"`
	Items []inner          `json:"items"`
	ByKey map[string]inner `json:"by_key"`
	Ptr   *inner           `json:"ptr"`
	embedded
}

// Unknown keys are reported at their place in the body, not only by name.
func TestUnknownFieldLoc(t *testing.T) {
	for body, want := range map[string]string{
		`{"nope":1}`:                           `["body","nope"]`,
		`{"items":[{"flag":true},{"nope":1}]}`: `["body","items",1,"nope"]`,
		`{"by_key":{"a":{"nope":1}}}`:          `["body","by_key","a","nope"]`,
		`{"ptr":{"flag":true,"nope":1}}`:       `["body","ptr","nope"]`,
		`{"promoted":1,"ptr":{"nope":1}}`:      `["body","ptr","nope"]`,
		`{"NAME":"case-insensitive","nope":1}`: `["body","nope"]`,
	} {
		var v outer
		err := web.DecodeBytes([]byte(body), &v, false)
		ve, ok := err.(*web.ValidationError)
		if !ok {
			t.Fatalf("%s: %v", body, err)
		}
		got, _ := json.Marshal(ve.Errors[0].Loc)
		if string(got) != want || ve.Errors[0].Type != "extra_forbidden" {
			t.Errorf("%s: loc %s type %s, want %s", body, got, ve.Errors[0].Type, want)
		}
	}
}
