package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// DefaultKeyCacheTTL is how long an authenticated key's principal is
// served from memory unless SetKeyCacheTTL says otherwise.
//
// Guarantees: a key revoked through this Service stops authenticating at
// once (RevokeAPIKey drops it, and a lookup that raced with the revocation
// does not refill the cache); a key revoked by another process (another
// Lambda) stops within the TTL. Keys are cached by their SHA-256, never by
// their value, and unknown keys are never cached (a new key works at once).
const DefaultKeyCacheTTL = 5 * time.Second

// maxCachedKeys bounds the memory of the caches (a principal is a few
// hundred bytes): past it, expired entries are dropped, then arbitrary ones.
const maxCachedKeys = 10000

// caches holds what Authenticate and Workspace serve from memory.
type caches struct {
	mu   sync.RWMutex
	ttl  time.Duration // 0: no key caching
	now  func() time.Time
	keys map[[sha256.Size]byte]cachedKey
	// epoch counts revocations: a lookup that started before one does not
	// cache what it read.
	epoch uint64
	// workspaces never change once created (only their existence
	// matters to a lookup), so they are kept without expiry.
	ws map[string]Workspace
}

type cachedKey struct {
	p     Principal
	until time.Time
}

func newCaches() *caches {
	return &caches{ttl: DefaultKeyCacheTTL, now: time.Now,
		keys: map[[sha256.Size]byte]cachedKey{}, ws: map[string]Workspace{}}
}

// SetKeyCacheTTL sets how long an authenticated key is served from memory
// (0 or less: every request reads the store). Call it before serving.
func (s *Service) SetKeyCacheTTL(d time.Duration) {
	c := s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ttl = max(d, 0)
	clear(c.keys)
}

// principal returns the cached principal of a key hash, and the epoch to
// hand back to storePrincipal after a store lookup.
func (c *caches) principal(h [sha256.Size]byte) (Principal, bool, uint64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.keys[h]
	if ok && c.now().Before(e.until) {
		return e.p, true, c.epoch
	}
	return Principal{}, false, c.epoch
}

// storePrincipal caches p unless a revocation happened since epoch.
func (c *caches) storePrincipal(h [sha256.Size]byte, p Principal, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttl <= 0 || c.epoch != epoch {
		return
	}
	now := c.now()
	if len(c.keys) >= maxCachedKeys {
		for k, e := range c.keys {
			if !now.Before(e.until) {
				delete(c.keys, k)
			}
		}
		for k := range c.keys {
			if len(c.keys) < maxCachedKeys {
				break
			}
			delete(c.keys, k)
		}
	}
	c.keys[h] = cachedKey{p: p, until: now.Add(c.ttl)}
}

// revoked drops a key (by its stored hex hash) after its revocation.
func (c *caches) revoked(hexHash string) {
	var h [sha256.Size]byte
	_, _ = hex.Decode(h[:], []byte(hexHash))
	c.mu.Lock()
	c.epoch++
	delete(c.keys, h)
	c.mu.Unlock()
}

func (c *caches) workspace(id string) (Workspace, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	w, ok := c.ws[id]
	return w, ok
}

func (c *caches) storeWorkspace(w Workspace) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ws) >= maxCachedKeys {
		clear(c.ws)
	}
	c.ws[w.ID] = w
}
