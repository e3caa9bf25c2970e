package identity

import (
	"context"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

// fakeClock is a settable clock for the caches.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Two services over one store stand for two processes (two Lambdas): a key
// revoked in one stops at once there, and in the other within the TTL.
func TestKeyCacheRevocationBounds(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "id.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, b := New(st), New(st)
	clock := &fakeClock{t: time.Now()}
	a.cache.now = clock.now
	boot, err := a.Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	k, raw, err := a.CreateAPIKey(ctx, NewKey{OrganizationID: boot.Organization.ID, OrgRole: RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{a, b} {
		if _, err := s.Authenticate(ctx, raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.RevokeAPIKey(ctx, boot.Organization.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, raw); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("revoking process: revoked key still authenticates: %v", err)
	}
	// The other process may serve its cached principal, never past the TTL.
	clock.add(DefaultKeyCacheTTL)
	if _, err := a.Authenticate(ctx, raw); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("other process: revoked key authenticates after the TTL: %v", err)
	}
}

// With the TTL at 0 nothing is cached: another process's revocation
// applies to the next request.
func TestKeyCacheOff(t *testing.T) {
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "id.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, b := New(st), New(st)
	a.SetKeyCacheTTL(0)
	boot, err := a.Bootstrap(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	k, raw, err := a.CreateAPIKey(ctx, NewKey{OrganizationID: boot.Organization.ID, OrgRole: RoleUser})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, raw); err != nil {
		t.Fatal(err)
	}
	if err := b.RevokeAPIKey(ctx, boot.Organization.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, raw); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("uncached: revoked key authenticates: %v", err)
	}
}

// A lookup that read the key before a revocation committed must not put
// it back into the cache afterwards.
func TestKeyCacheRevocationRace(t *testing.T) {
	c := newCaches()
	h := sha256.Sum256([]byte("ap_some_key_value_0123456789"))
	_, ok, epoch := c.principal(h)
	if ok {
		t.Fatal("empty cache hit")
	}
	c.revoked("00") // another key's revocation is enough to refuse
	c.storePrincipal(h, Principal{KeyID: "k"}, epoch)
	if _, ok, _ := c.principal(h); ok {
		t.Fatal("a lookup older than a revocation filled the cache")
	}
	_, _, epoch = c.principal(h)
	c.storePrincipal(h, Principal{KeyID: "k"}, epoch)
	if p, ok, _ := c.principal(h); !ok || p.KeyID != "k" {
		t.Fatal("cache not filled")
	}
}

// The cache stays bounded whatever the number of keys.
func TestKeyCacheBounded(t *testing.T) {
	c := newCaches()
	for i := 0; i < maxCachedKeys+100; i++ {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		_, _, e := c.principal(h)
		c.storePrincipal(h, Principal{}, e)
	}
	if len(c.keys) > maxCachedKeys {
		t.Fatalf("%d cached keys", len(c.keys))
	}
}
