package orgaccess

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// The region rule on the paths that do not authenticate through identity's
// API keys (docs/regions.md): a SCIM token or an SSO login slug of the
// other region's organization is answered with a 421 naming that region,
// and a local one whose organization belongs to the other region likewise.

// scimRegion is called after a SCIM token was looked up here: for a token
// unknown here that the other region holds (only its SHA-256 crosses), or
// a token of an organization homed elsewhere, it returns a
// *regions.MisdirectedError; it unwraps to ErrInvalidToken, so a SCIM
// edge that does not know the error still answers 401.
func (s *Service) scimRegion(ctx context.Context, raw string, tok SCIMToken, err error) error {
	r := s.ids.Region()
	if r == nil {
		return err
	}
	if errors.Is(err, ErrInvalidToken) {
		if len(raw) > 256 {
			return err
		}
		if home, ok := r.Locate(ctx, regions.KindSCIMToken, identity.HashToken(raw)); ok {
			return r.Misdirected(home, "This SCIM token's organization", err)
		}
		return err
	}
	if err != nil {
		return err
	}
	if herr := s.ids.CheckHome(ctx, tok.OrganizationID); herr != nil {
		var me *regions.MisdirectedError
		if errors.As(herr, &me) {
			return r.Misdirected(me.Home, "This SCIM token's organization", ErrInvalidToken)
		}
		return herr
	}
	return nil
}

// lookupSCIMHash finds a SCIM token by its hash for the other region.
func (s *Service) lookupSCIMHash(ctx context.Context, hash string) (regions.Name, error) {
	it, err := s.st.Get(ctx, scimTokenHashKey(hash))
	if errors.Is(err, store.ErrNotFound) {
		return "", regions.ErrUnknown
	}
	if err != nil {
		return "", err
	}
	var st storedToken
	if err := json.Unmarshal(it.Data, &st); err != nil {
		return "", err
	}
	o, err := s.ids.Organization(ctx, st.OrganizationID)
	if errors.Is(err, identity.ErrNotFound) {
		return "", regions.ErrUnknown
	}
	if err != nil {
		return "", err
	}
	return regions.Name(o.Region), nil
}

// signInRegion is the region rule of an SSO sign-in: a slug unknown here
// that the other region holds, or an organization homed elsewhere, is a
// 421; nil otherwise (lookupErr then stands).
func (h *Handler) signInRegion(ctx context.Context, slug string, org identity.Organization, lookupErr error) error {
	if errors.Is(lookupErr, identity.ErrNotFound) {
		return h.svc.ids.LocateSlug(ctx, slug)
	}
	if lookupErr != nil {
		return nil
	}
	return h.svc.ids.CheckHome(ctx, org.ID)
}

func (h *Handler) locateSCIMToken(w http.ResponseWriter, r *http.Request) error {
	return h.svc.ids.Region().ServeLocate(w, r, regions.KindSCIMToken, h.svc.lookupSCIMHash)
}
