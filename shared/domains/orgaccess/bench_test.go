package orgaccess_test

import (
	"fmt"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/orgaccess/accesstest"
)

// Sign-in of a known member over HTTP: lookup by subject, versioned
// update of last_sign_in_at, audit record.
func BenchmarkSignInExistingMember(b *testing.B) {
	env := accesstest.New(b, accesstest.Options{})
	env.SignIn("default", admin, "bench@example.com", "sub-bench")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := env.SignIn("default", admin, "bench@example.com", "sub-bench"); r.Status != 200 {
			b.Fatal(r.Raw)
		}
	}
}

// First sign-ins provisioned by JIT.
func BenchmarkSignInJIT(b *testing.B) {
	env := accesstest.New(b, accesstest.Options{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := env.SignIn("default", admin, fmt.Sprintf("u%d@example.com", i), fmt.Sprintf("sub-%d", i)); r.Status != 200 {
			b.Fatal(r.Raw)
		}
	}
}
