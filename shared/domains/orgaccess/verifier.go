package orgaccess

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Verifier turns an identity provider's callback into a validated
// identity. SAML and OIDC protocol validation (signatures, issuer,
// audience, expiry, nonce, the email_verified claim) lives behind it, so the
// decision procedure never sees protocol details.
//
// A deployment that terminates SAML or OIDC itself implements Verifier
// (for example with an OIDC library checking the id_token against the
// IdP's keys) and passes it to NewHandler; the sign-in route then runs it
// on the IdP's callback request. The default, RelayVerifier, serves
// deployments where a trusted component (an auth proxy, a login service)
// has already validated the IdP response and relays the identity.
type Verifier interface {
	// Verify validates r for org and returns the identity it asserts and
	// the actor recorded in the audit trail. Errors are HTTP errors of
	// shared/kernel/web (401, 403, 422…).
	Verify(ctx context.Context, org identity.Organization, r *http.Request) (Identity, Actor, error)
}

// RelayVerifier accepts an identity relayed as JSON by a caller holding an
// organization-admin API key of that same organization
// (Authorization: Bearer <API_KEY> or X-Api-Key). It trusts the caller's
// claim that the IdP response was validated, and nothing else: anyone
// without such a key cannot sign in as anyone.
type RelayVerifier struct {
	IDs *identity.Service
}

// Verify implements Verifier.
func (v RelayVerifier) Verify(ctx context.Context, org identity.Organization, r *http.Request) (Identity, Actor, error) {
	p, err := v.IDs.AuthenticateRequest(r)
	if err != nil {
		return Identity{}, Actor{}, err
	}
	if p.OrganizationID != org.ID {
		return Identity{}, Actor{}, web.Forbidden("This API key belongs to another organization and cannot relay sign-ins for %s", org.SSOLoginSlug)
	}
	if err := identity.NeedOrgAdmin(p); err != nil {
		return Identity{}, Actor{}, err
	}
	var body struct {
		Email         json.RawMessage `json:"email"`
		EmailVerified json.RawMessage `json:"email_verified"`
		Subject       json.RawMessage `json:"idp_subject"`
		Name          json.RawMessage `json:"name"`
	}
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return Identity{}, Actor{}, err
	}
	var probs web.Problems
	var id Identity
	if s, ok := rawString(&probs, "email", body.Email, true); ok {
		id.Email = strings.ToLower(strings.TrimSpace(s))
		if !ValidEmail(id.Email) {
			probs.Add(web.Loc("body", "email"), "value is not a valid email address", "value_error")
		}
	}
	if b, ok := rawBool(&probs, "email_verified", body.EmailVerified, true); ok {
		id.EmailVerified = b
	}
	if s, ok := rawString(&probs, "idp_subject", body.Subject, true); ok {
		id.Subject = strings.TrimSpace(s)
		if id.Subject == "" || len(id.Subject) > 256 {
			probs.Add(web.Loc("body", "idp_subject"), "String should have 1 to 256 characters", "string_too_short")
		}
	}
	if s, ok := rawString(&probs, "name", body.Name, false); ok {
		id.Name = strings.TrimSpace(s)
		if len(id.Name) > 200 {
			probs.Add(web.Loc("body", "name"), "String should have at most 200 characters", "string_too_long")
		}
	}
	if err := probs.Err(); err != nil {
		return Identity{}, Actor{}, err
	}
	return id, ActorKey(p), nil
}

// rawString reads an optional or required JSON string field; a null or a
// value of another type is a problem. ok is false when absent or invalid.
func rawString(probs *web.Problems, name string, raw json.RawMessage, required bool) (string, bool) {
	if raw == nil {
		if required {
			probs.Add(web.Loc("body", name), "Field required", "missing")
		}
		return "", false
	}
	var s string
	if string(raw) == "null" || json.Unmarshal(raw, &s) != nil {
		probs.Add(web.Loc("body", name), "Input should be a valid string", "string_type")
		return "", false
	}
	return s, true
}

// rawBool is rawString for booleans.
func rawBool(probs *web.Problems, name string, raw json.RawMessage, required bool) (bool, bool) {
	if raw == nil {
		if required {
			probs.Add(web.Loc("body", name), "Field required", "missing")
		}
		return false, false
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	probs.Add(web.Loc("body", name), "Input should be a valid boolean", "bool_type")
	return false, false
}
