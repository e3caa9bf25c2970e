package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// residency is the region rule of a Service: organizations created here
// belong to this region, and a credential of another region's organization
// is answered with that region's address (docs/regions.md).
type residency struct {
	region *regions.Region
	// operator is the SHA-256 of the platform operator's token (nil: the
	// organization sign-up route is off).
	operator []byte
	// homes caches organization id → home region: it never changes, so
	// authentication reads an organization once per process.
	homes sync.Map
	size  int64
	mu    sync.Mutex
}

// maxCachedHomes bounds the cache of organization regions.
const maxCachedHomes = 100_000

// SetRegion makes s apply the region rule of r: organizations are created
// in r's region only, and AuthenticateRequest answers a credential of
// another region's organization with a 421 naming that region's API URL.
// Call it before serving.
func (s *Service) SetRegion(r *regions.Region) { s.res.region = r }

// Region returns the region set by SetRegion (nil: region-unaware).
func (s *Service) Region() *regions.Region { return s.res.region }

// SetOperatorTokenHash enables the platform operator's organization
// sign-up route for the token whose SHA-256 is hash (32 bytes).
func (s *Service) SetOperatorTokenHash(hash []byte) {
	if len(hash) == 32 {
		s.res.operator = append([]byte(nil), hash...)
	}
}

// placeOrganization gives a new organization this region, or refuses one
// that belongs to the other region (nothing is stored then).
func (s *Service) placeOrganization(o *Organization) error {
	r := s.res.region
	if o.Region != "" {
		if _, err := regions.ParseName(o.Region); err != nil {
			return fmt.Errorf("%w: region must be us or eu", ErrInvalidInput)
		}
	}
	if r == nil {
		return nil
	}
	if o.Region == "" {
		o.Region = string(r.Name())
	}
	return r.CheckHome(regions.Name(o.Region), "The organization's chosen region")
}

// CheckHome returns a *regions.MisdirectedError (a 421 over HTTP) when
// the organization's home region is not this one, nil otherwise. An
// organization without a region predates regions and is this region's.
func (s *Service) CheckHome(ctx context.Context, orgID string) error {
	r := s.res.region
	if r == nil {
		return nil
	}
	if v, ok := s.res.homes.Load(orgID); ok {
		return r.CheckHome(v.(regions.Name), "This organization")
	}
	o, err := s.Organization(ctx, orgID)
	if errors.Is(err, ErrNotFound) {
		return nil // the caller's own lookups answer a missing organization
	}
	if err != nil {
		return err
	}
	home := regions.Name(o.Region)
	if home == "" {
		home = r.Name()
	}
	s.res.mu.Lock()
	if s.res.size >= maxCachedHomes {
		s.res.homes.Clear()
		s.res.size = 0
	}
	if _, loaded := s.res.homes.LoadOrStore(orgID, home); !loaded {
		s.res.size++
	}
	s.res.mu.Unlock()
	return r.CheckHome(home, "This organization")
}

// locateKey is called for a key this region does not hold: when the other
// region holds it, the answer is a 421 naming that region (only the key's
// SHA-256 crosses the link); otherwise cause stands.
func (s *Service) locateKey(ctx context.Context, raw string, cause error) error {
	r := s.res.region
	if r == nil || raw == "" || len(raw) > 256 {
		return cause
	}
	if home, ok := r.Locate(ctx, regions.KindAPIKey, HashToken(raw)); ok {
		return r.Misdirected(home, "This API key's organization", cause)
	}
	return cause
}

// LocateSlug answers, for an SSO login slug unknown here, the other
// region's misdirected error, or nil.
func (s *Service) LocateSlug(ctx context.Context, slug string) error {
	r := s.res.region
	if r == nil {
		return nil
	}
	if home, ok := r.Locate(ctx, regions.KindSSOSlug, slug); ok {
		return r.Misdirected(home, "The organization with this SSO login slug", nil)
	}
	return nil
}

// homeOf is the home region of an organization record.
func (s *Service) homeOf(ctx context.Context, orgID string) (regions.Name, error) {
	o, err := s.Organization(ctx, orgID)
	if errors.Is(err, ErrNotFound) {
		return "", regions.ErrUnknown
	}
	if err != nil {
		return "", err
	}
	return regions.Name(o.Region), nil
}

// lookupKeyHash finds a key by its hash for the other region.
func (s *Service) lookupKeyHash(ctx context.Context, hash string) (regions.Name, error) {
	it, err := s.st.Get(ctx, keyByHash(hash))
	if errors.Is(err, store.ErrNotFound) {
		return "", regions.ErrUnknown
	}
	if err != nil {
		return "", err
	}
	var sk storedKey
	if err := json.Unmarshal(it.Data, &sk); err != nil {
		return "", err
	}
	return s.homeOf(ctx, sk.OrganizationID)
}

// lookupSlug finds an organization by its login slug for the other region.
func (s *Service) lookupSlug(ctx context.Context, slug string) (regions.Name, error) {
	o, err := s.OrganizationBySlug(ctx, slug)
	if errors.Is(err, ErrNotFound) {
		return "", regions.ErrUnknown
	}
	if err != nil {
		return "", err
	}
	return regions.Name(o.Region), nil
}

// --- routes ---

func (s *Service) regionsInfo(w http.ResponseWriter, r *http.Request) error {
	if s.res.region == nil {
		return web.NotFound("This installation is not configured with hosted regions")
	}
	web.WriteJSON(w, http.StatusOK, s.res.region.Document())
	return nil
}

func (s *Service) locateAPIKey(w http.ResponseWriter, r *http.Request) error {
	return s.res.region.ServeLocate(w, r, regions.KindAPIKey, s.lookupKeyHash)
}

func (s *Service) locateSSOSlug(w http.ResponseWriter, r *http.Request) error {
	return s.res.region.ServeLocate(w, r, regions.KindSSOSlug, s.lookupSlug)
}
