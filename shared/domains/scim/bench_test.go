package scim_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

const benchUsers = 500

func benchEnv(b *testing.B) (*accesstest.Env, string) {
	env := accesstest.New(b, accesstest.Options{})
	tok := env.SCIMToken(admin)
	for i := 0; i < benchUsers; i++ {
		if r := env.SCIM("POST", "/Users", tok, user(fmt.Sprintf("user%03d@example.com", i), nil)); r.Status != 201 {
			b.Fatal(r.Raw)
		}
	}
	return env, tok
}

// The lookup identity providers make before provisioning (one marker read).
func BenchmarkListUsersUserNameEq(b *testing.B) {
	env, tok := benchEnv(b)
	q := "/Users?filter=" + url.QueryEscape(`userName eq "user250@example.com"`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := env.SCIM("GET", q, tok, nil); r.Status != 200 {
			b.Fatal(r.Raw)
		}
	}
}

// A filter evaluated over every user of the organization, one page back.
func BenchmarkListUsersScan(b *testing.B) {
	env, tok := benchEnv(b)
	q := "/Users?count=50&filter=" + url.QueryEscape(`userName co "9"`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := env.SCIM("GET", q, tok, nil); r.Status != 200 {
			b.Fatal(r.Raw)
		}
	}
}
