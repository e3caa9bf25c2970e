package identity_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

func open(t *testing.T) *identity.Service {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "id.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return identity.New(st)
}

// The bootstrap key exists only from an empty store: offered again on an
// initialized store it is not created (revoked or not), and a revoked
// value can never become a key again.
func TestBootstrapKeyOnlyOnEmptyStore(t *testing.T) {
	ctx := context.Background()
	ids := open(t)
	const key = "ap_bootstrap_value_0123456789abcdef"
	b, err := ids.Bootstrap(ctx, key)
	if err != nil || !b.Created || b.Key != "" {
		t.Fatalf("first bootstrap: %+v %v", b, err)
	}
	p, err := ids.Authenticate(ctx, key)
	if err != nil || p.OrgRole != identity.RoleAdmin {
		t.Fatalf("bootstrap key: %+v %v", p, err)
	}
	if b2, err := ids.Bootstrap(ctx, key); err != nil || b2.Created || b2.KeyIgnored || b2.Organization.ID != b.Organization.ID {
		t.Fatalf("second bootstrap with the same key: %+v %v", b2, err)
	}
	if err := ids.RevokeAPIKey(ctx, p.OrganizationID, p.KeyID); err != nil {
		t.Fatal(err)
	}
	b3, err := ids.Bootstrap(ctx, key)
	if err != nil || b3.Created || !b3.KeyIgnored {
		t.Fatalf("bootstrap after revocation: %+v %v", b3, err)
	}
	if _, err := ids.Authenticate(ctx, key); !errors.Is(err, identity.ErrInvalidKey) {
		t.Fatalf("revoked bootstrap key came back: %v", err)
	}
	// A different key on an initialized store is not created either.
	if b4, err := ids.Bootstrap(ctx, "ap_some_other_value_0123456789ab"); err != nil || !b4.KeyIgnored {
		t.Fatalf("new key on an initialized store: %+v %v", b4, err)
	}
	if _, err := ids.Authenticate(ctx, "ap_some_other_value_0123456789ab"); !errors.Is(err, identity.ErrInvalidKey) {
		t.Fatalf("a key given to an initialized store was created: %v", err)
	}
	// Nothing creates the revoked value again.
	_, _, err = ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: b.Organization.ID, OrgRole: identity.RoleAdmin, Raw: key})
	if !errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("revoked value recreated: %v", err)
	}
	if err := ids.RevokeAPIKey(ctx, p.OrganizationID, p.KeyID); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
}

// RecoverAdminKey makes a new organization admin key of the default
// organization; it needs a bootstrapped store.
func TestRecoverAdminKey(t *testing.T) {
	ctx := context.Background()
	ids := open(t)
	if _, _, err := ids.RecoverAdminKey(ctx); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("recovery before bootstrap: %v", err)
	}
	b, err := ids.Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	k, raw, err := ids.RecoverAdminKey(ctx)
	if err != nil || raw == "" || raw == b.Key {
		t.Fatalf("recover: %+v %v", k, err)
	}
	p, err := ids.Authenticate(ctx, raw)
	if err != nil || p.OrgRole != identity.RoleAdmin || p.OrganizationID != b.Organization.ID || p.KeyID != k.ID {
		t.Fatalf("recovered key: %+v %v", p, err)
	}
}
