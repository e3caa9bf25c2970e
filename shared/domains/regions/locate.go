package regions

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Kind is what a lookup in the other region looks for.
type Kind string

const (
	// KindAPIKey: the SHA-256 (hex) of an API key.
	KindAPIKey Kind = "api-key"
	// KindSCIMToken: the SHA-256 (hex) of a SCIM bearer token.
	KindSCIMToken Kind = "scim-token"
	// KindSSOSlug: an organization's SSO login slug.
	KindSSOSlug Kind = "sso-slug"
)

// LocatePath is the link route that answers lookups of kind k.
func LocatePath(k Kind) string { return LinkPrefix + "/locate/" + string(k) }

// LocateRequest is the body of a lookup: the credential's SHA-256 (the
// credential itself never crosses) or the slug.
type LocateRequest struct {
	Value string `json:"value"`
}

// LocateAnswer is the answer when the region holds it.
type LocateAnswer struct {
	Region Name `json:"region"`
}

// ErrUnknown: the lookup found nothing.
var ErrUnknown = errors.New("regions: not found in this region")

// Lookup finds value of a kind in this region's store and returns the
// region of the organization holding it, or ErrUnknown.
type Lookup func(ctx context.Context, value string) (Name, error)

// Locate asks the other region whether it holds value (a credential's
// SHA-256 hex, or a slug) and returns its home region. It is what a region
// does with a credential it does not know, so that a request sent to the
// wrong region is answered with the right one. Answers are cached; when
// the link is down, saturated or slow, Locate reports not found and the
// caller answers as before (401, 404). Nothing is stored in either store.
func (r *Region) Locate(ctx context.Context, k Kind, value string) (Name, bool) {
	if r == nil || !r.Linked() || !validValue(k, value) {
		return "", false
	}
	key := string(k) + "\x00" + value
	now := r.now()
	r.mu.Lock()
	c, ok := r.cache[key]
	r.mu.Unlock()
	if ok && now.Before(c.expires) {
		return c.home, c.home != ""
	}
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	default:
		r.log.WarnContext(ctx, "regions: too many concurrent lookups in the other region; answering as unknown", slog.String("kind", string(k)))
		return "", false
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var ans LocateAnswer
	err := r.Call(cctx, LocatePath(k), LocateRequest{Value: value}, &ans)
	var pe *PeerError
	switch {
	case err == nil && ans.Region == r.cfg.Region.Other():
		r.remember(key, ans.Region, now.Add(foundTTL))
		return ans.Region, true
	case err == nil, errors.As(err, &pe) && pe.Status == http.StatusNotFound:
		// Unknown there too, or an answer naming this region (which
		// does not hold it either): a bad credential.
		r.remember(key, "", now.Add(unknownTTL))
		return "", false
	default:
		r.log.WarnContext(ctx, "regions: lookup in the other region failed", slog.String("kind", string(k)), slog.String("error", err.Error()))
		return "", false
	}
}

func (r *Region) remember(key string, home Name, expires time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCached {
		now := r.now()
		for k, c := range r.cache {
			if !now.Before(c.expires) {
				delete(r.cache, k)
			}
		}
		if len(r.cache) >= maxCached {
			clear(r.cache)
		}
	}
	r.cache[key] = cached{home: home, expires: expires}
}

func validValue(k Kind, v string) bool {
	switch k {
	case KindAPIKey, KindSCIMToken:
		if len(v) != 64 {
			return false
		}
		_, err := hex.DecodeString(v)
		return err == nil && v == lowerHex(v)
	case KindSSOSlug:
		return v != "" && len(v) <= 200
	}
	return false
}

func lowerHex(v string) string {
	b := []byte(v)
	for i, c := range b {
		if c >= 'A' && c <= 'F' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// ServeLocate answers a lookup of kind k from the other region with
// lookup: 200 {"region": ...} when this region holds it, 404 otherwise;
// 401 without the link token, 422 for a malformed value.
func (r *Region) ServeLocate(w http.ResponseWriter, req *http.Request, k Kind, lookup Lookup) error {
	if err := r.VerifyLink(req); err != nil {
		return err
	}
	var body LocateRequest
	if err := web.DecodeJSON(req, &body, false); err != nil {
		return err
	}
	if !validValue(k, body.Value) {
		msg := "Value error, expected the lowercase hex SHA-256 of the credential"
		if k == KindSSOSlug {
			msg = "Value error, expected a login slug of 1 to 200 characters"
		}
		return web.Invalid(web.Loc("body", "value"), msg, "value_error")
	}
	home, err := lookup(req.Context(), body.Value)
	if errors.Is(err, ErrUnknown) {
		return web.NotFound("Not found in the %s region", r.cfg.Region.Label())
	}
	if err != nil {
		return err
	}
	if home == "" {
		home = r.cfg.Region
	}
	web.WriteJSON(w, http.StatusOK, LocateAnswer{Region: home})
	return nil
}
