package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// OrganizationsPath is the platform operator's organization sign-up.
const OrganizationsPath = "/api/v1/organizations"

// SignUp describes an organization to create.
type SignUp struct {
	DisplayName string
	// Region is the organization's home region, "us" or "eu": it must be
	// this service's region.
	Region       string
	SSOLoginSlug string
	JIT, Invites bool
}

// SignedUp is a new organization with its default workspace and its first
// admin key (the raw key is returned only here).
type SignedUp struct {
	Organization Organization `json:"organization"`
	Workspace    Workspace    `json:"workspace"`
	APIKey       createdKey   `json:"api_key"`
}

// SignUpOrganization creates an organization in this region, its default
// workspace and an organization-admin API key. An organization of the
// other region is refused with a *regions.MisdirectedError before anything
// is stored.
func (s *Service) SignUpOrganization(ctx context.Context, su SignUp) (SignedUp, error) {
	org, err := s.CreateOrganization(ctx, Organization{
		DisplayName: strings.TrimSpace(su.DisplayName), Region: su.Region, SSOLoginSlug: su.SSOLoginSlug,
		JITProvisioningEnabled: su.JIT, InvitesEnabled: su.Invites,
	})
	if err != nil {
		return SignedUp{}, err
	}
	ws, err := s.CreateWorkspace(ctx, org.ID, "Default")
	if err != nil {
		return SignedUp{}, err
	}
	k, raw, err := s.CreateAPIKey(ctx, NewKey{OrganizationID: org.ID, Description: "organization admin key (sign-up)", OrgRole: RoleAdmin})
	if err != nil {
		return SignedUp{}, err
	}
	return SignedUp{Organization: org, Workspace: ws, APIKey: createdKey{APIKey: k, Key: raw}}, nil
}

// signUpRequest is the body of POST /api/v1/organizations.
type signUpRequest struct {
	DisplayName            *string `json:"display_name"`
	Region                 *string `json:"region"`
	SSOLoginSlug           *string `json:"sso_login_slug"`
	JITProvisioningEnabled *bool   `json:"jit_provisioning_enabled"`
	InvitesEnabled         *bool   `json:"invites_enabled"`
}

var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// checkOperator authenticates the platform operator: Authorization: Bearer
// <AGENTPLANE_OPERATOR_TOKEN>, compared as a SHA-256 digest in constant
// time (only the digest is kept).
func (s *Service) checkOperator(r *http.Request) error {
	if s.res.operator == nil {
		return web.Forbidden("Organization sign-up is off: the platform operator enables it with AGENTPLANE_OPERATOR_TOKEN")
	}
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return web.Unauthorized("Missing operator token: send Authorization: Bearer <operator token>")
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(h[7:])))
	if subtle.ConstantTimeCompare(got[:], s.res.operator) != 1 {
		return web.Unauthorized("Invalid operator token")
	}
	return nil
}

func (s *Service) signUp(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkOperator(r); err != nil {
		return err
	}
	var body signUpRequest
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	su := SignUp{JIT: true, Invites: true}
	if body.DisplayName == nil {
		probs.Add(web.Loc("body", "display_name"), "Field required", "missing")
	} else if su.DisplayName = strings.TrimSpace(*body.DisplayName); su.DisplayName == "" || len(su.DisplayName) > 200 {
		probs.Add(web.Loc("body", "display_name"), "String should have 1 to 200 characters", "string_too_short")
	}
	if body.Region == nil {
		probs.Add(web.Loc("body", "region"), "Field required", "missing")
	} else if _, err := regions.ParseName(*body.Region); err != nil {
		probs.Add(web.Loc("body", "region"), "Input should be 'us' or 'eu'", "enum")
	} else {
		su.Region = *body.Region
	}
	if body.SSOLoginSlug != nil {
		if !slugPattern.MatchString(*body.SSOLoginSlug) {
			probs.Add(web.Loc("body", "sso_login_slug"), "String should be 1 to 63 lowercase letters, digits and inner hyphens", "string_pattern_mismatch")
		}
		su.SSOLoginSlug = *body.SSOLoginSlug
	}
	if body.JITProvisioningEnabled != nil {
		su.JIT = *body.JITProvisioningEnabled
	}
	if body.InvitesEnabled != nil {
		su.Invites = *body.InvitesEnabled
	}
	if err := probs.Err(); err != nil {
		return err
	}
	out, err := s.SignUpOrganization(r.Context(), su)
	switch {
	case errors.Is(err, ErrExists):
		return web.Conflict("An organization with the SSO login slug %q already exists", su.SSOLoginSlug)
	case err != nil:
		return err
	}
	web.WriteJSON(w, http.StatusCreated, out)
	return nil
}
