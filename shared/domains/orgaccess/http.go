package orgaccess

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the organization-access API (route group "orgaccess").
type Handler struct {
	svc      *Service
	verifier Verifier
}

// NewHandler returns the HTTP API; v nil means RelayVerifier.
func NewHandler(svc *Service, v Verifier) *Handler {
	if v == nil {
		v = RelayVerifier{IDs: svc.ids}
	}
	return &Handler{svc: svc, verifier: v}
}

// Routes is the "orgaccess" route group. Everything but reading the
// organization and signing in is for organization admins; sign-in is
// authenticated by the identity provider's relay, not an API key.
var Routes = api.Group[*Handler]{
	Name:        "orgaccess",
	Description: "organization access: SSO settings, default SSO settings, invites, members, SSO sign-in decisions, SCIM tokens, audit",
	Routes: []api.Route[*Handler]{
		{Method: "GET", Path: "/api/v1/organizations/current/info", Summary: "Read the current organization", Auth: api.Key, Result: orgView{}, Handle: (*Handler).getOrg},
		{Method: "PATCH", Path: "/api/v1/organizations/current/info", Summary: "Update jit_provisioning_enabled and invites_enabled", Auth: api.Key, Role: admin, Body: map[string]bool{}, Result: orgView{}, Handle: (*Handler).patchOrg},
		{Method: "GET", Path: "/api/v1/orgs/current/sso-settings", Summary: "Read the default SSO settings", Auth: api.Key, Handle: (*Handler).getSSODefaults},
		{Method: "PATCH", Path: "/api/v1/orgs/current/sso-settings", Summary: "Update the default SSO role and workspaces", Auth: api.Key, Role: admin, Handle: (*Handler).patchSSODefaults},
		{Method: "GET", Path: "/api/v1/orgs/current/invites", Summary: "List pending invites", Auth: api.Key, Role: admin, Handle: (*Handler).listInvites},
		{Method: "POST", Path: "/api/v1/orgs/current/invites", Summary: "Invite a user", Auth: api.Key, Role: admin, Status: http.StatusCreated, Handle: (*Handler).createInvite},
		{Method: "DELETE", Path: "/api/v1/orgs/current/invites/{invite_id}", Summary: "Revoke an invite", Auth: api.Key, Role: admin, Status: http.StatusNoContent, Handle: (*Handler).revokeInvite},
		{Method: "GET", Path: "/api/v1/orgs/current/members", Summary: "List members", Auth: api.Key, Role: admin, Handle: (*Handler).listMembers},
		{Method: "POST", Path: "/api/v1/orgs/current/members", Summary: "Add a member", Auth: api.Key, Role: admin, Status: http.StatusCreated, Result: MemberView{}, Handle: (*Handler).createMember},
		{Method: "GET", Path: "/api/v1/orgs/current/members/{member_id}", Summary: "Read a member", Auth: api.Key, Role: admin, Result: MemberView{}, Handle: (*Handler).getMember},
		{Method: "PATCH", Path: "/api/v1/orgs/current/members/{member_id}", Summary: "Change a member's roles", Auth: api.Key, Role: admin, Result: MemberView{}, Handle: (*Handler).patchMember},
		{Method: "DELETE", Path: "/api/v1/orgs/current/members/{member_id}", Summary: "Remove a member", Auth: api.Key, Role: admin, Status: http.StatusNoContent, Handle: (*Handler).deleteMember},
		{Method: "GET", Path: "/api/v1/orgs/current/audit", Summary: "The audit trail", Auth: api.Key, Role: admin, Handle: (*Handler).listAudit},
		{Method: "GET", Path: "/api/v1/orgs/current/scim-tokens", Summary: "List SCIM tokens", Auth: api.Key, Role: admin, Handle: (*Handler).listSCIMTokens},
		{Method: "POST", Path: "/api/v1/orgs/current/scim-tokens", Summary: "Create a SCIM token (shown once)", Auth: api.Key, Role: admin, Status: http.StatusCreated, Result: createdToken{}, Handle: (*Handler).createSCIMToken},
		{Method: "DELETE", Path: "/api/v1/orgs/current/scim-tokens/{token_id}", Summary: "Revoke a SCIM token", Auth: api.Key, Role: admin, Status: http.StatusNoContent, Handle: (*Handler).revokeSCIMToken},
		{Method: "POST", Path: "/api/v1/sso/{sso_login_slug}/sign-in", Summary: "SSO sign-in decision", Auth: api.Own, Result: signInView{}, Handle: (*Handler).signIn},
		{Method: "POST", Path: regions.LocatePath(regions.KindSCIMToken), Summary: "Region link: which region holds the SCIM token with this SHA-256", Auth: api.Own, Body: regions.LocateRequest{}, Result: regions.LocateAnswer{}, Handle: (*Handler).locateSCIMToken},
	},
}

const admin = identity.RoleAdmin

func principal(r *http.Request) identity.Principal {
	p, _ := identity.FromContext(r.Context())
	return p
}

// httpError maps domain errors to the interface's shapes.
func httpError(err error, notFound string) error {
	var ce *ConflictError
	var ie *InvalidError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return web.NotFound("%s", notFound)
	case errors.As(err, &ce):
		return web.Conflict("%s", ce.Detail)
	case errors.As(err, &ie):
		return web.Invalid(fieldLoc("body", ie.Field), ie.Detail, "value_error")
	case errors.Is(err, ErrBadCursor):
		return web.Invalid(web.Loc("query", "cursor"), "Invalid cursor: use the next_cursor of a previous page", "value_error")
	case errors.Is(err, ErrInvitesDisabled):
		return web.BadRequest("Invites are disabled for this organization (invites_enabled is false): nothing was stored. An admin can enable them with PATCH /api/v1/organizations/current/info, or users can join through JIT provisioning or SCIM")
	case errors.Is(err, store.ErrTooLarge):
		return web.Errorf(http.StatusRequestEntityTooLarge, "The record would be too large to store")
	case errors.Is(err, errContention):
		return &web.Error{Status: http.StatusServiceUnavailable, Detail: "Too many concurrent changes, retry", Header: http.Header{"Retry-After": {"1"}}}
	}
	return err
}

// fieldLoc turns "workspaces.0.role" into ["body","workspaces",0,"role"].
func fieldLoc(root, field string) []any {
	loc := []any{root}
	for _, p := range strings.Split(field, ".") {
		if n, err := strconv.Atoi(p); err == nil {
			loc = append(loc, n)
		} else if p != "" {
			loc = append(loc, p)
		}
	}
	return loc
}

// page is the envelope of paged lists.
type page[T any] struct {
	Items []T `json:"items"`
	// NextCursor continues the listing (query parameter cursor); null at
	// the end.
	NextCursor *string `json:"next_cursor"`
}

func newPage[T any](items []T, next string) page[T] {
	p := page[T]{Items: items}
	if next != "" {
		p.NextCursor = &next
	}
	return p
}

func pageParams(r *http.Request) (int, string, error) {
	limit, err := web.QueryInt(r, "limit", 50, 1, 100)
	if err != nil {
		return 0, "", err
	}
	cursor := r.URL.Query().Get("cursor")
	if len(cursor) > 4096 {
		return 0, "", web.Invalid(web.Loc("query", "cursor"), "Invalid cursor: use the next_cursor of a previous page", "value_error")
	}
	return limit, cursor, nil
}

// --- organization settings ---

type orgView struct {
	identity.Organization
	Effective
}

func (h *Handler) orgView(o identity.Organization) orgView {
	return orgView{Organization: o, Effective: h.svc.EffectiveSettings(o)}
}

func (h *Handler) getOrg(w http.ResponseWriter, r *http.Request) error {
	o, err := h.svc.Organization(r.Context(), principal(r).OrganizationID)
	if err != nil {
		return httpError(err, "Organization not found")
	}
	web.WriteJSON(w, http.StatusOK, h.orgView(o))
	return nil
}

func (h *Handler) patchOrg(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var body map[string]json.RawMessage
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	var jit, invites *bool
	for name, raw := range body {
		switch name {
		case "jit_provisioning_enabled":
			if b, ok := rawBool(&probs, name, raw, false); ok {
				jit = &b
			}
		case "invites_enabled":
			if b, ok := rawBool(&probs, name, raw, false); ok {
				invites = &b
			}
		default:
			probs.Add(web.Loc("body", name), "Extra inputs are not permitted", "extra_forbidden")
		}
	}
	if err := probs.Err(); err != nil {
		return err
	}
	o, err := h.svc.UpdateSettings(r.Context(), p.OrganizationID, jit, invites, ActorKey(p))
	if err != nil {
		return httpError(err, "Organization not found")
	}
	web.WriteJSON(w, http.StatusOK, h.orgView(o))
	return nil
}

// --- default SSO settings ---

// getSSODefaults answers every key of the organization, but a key that is
// not an organization admin sees only the default workspaces it reaches
// itself: the ids of the others are not its to learn.
func (h *Handler) getSSODefaults(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	d, err := h.svc.SSODefaults(r.Context(), p.OrganizationID)
	if err != nil {
		return err
	}
	if p.OrgRole != admin {
		visible := []string{}
		for _, id := range d.DefaultWorkspaceIDs {
			if _, ok := p.RoleIn(id); ok {
				visible = append(visible, id)
			}
		}
		d.DefaultWorkspaceIDs = visible
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) patchSSODefaults(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var body struct {
		Role json.RawMessage `json:"default_workspace_role"`
		IDs  json.RawMessage `json:"default_workspace_ids"`
	}
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	var role *identity.Role
	if s, ok := rawString(&probs, "default_workspace_role", body.Role, false); ok {
		rl := identity.Role(s)
		if !rl.Valid() {
			probs.Add(web.Loc("body", "default_workspace_role"), "Input should be 'Viewer', 'User', 'Editor' or 'Admin'", "enum")
		}
		role = &rl
	}
	var ids []string
	if body.IDs != nil {
		var raw []json.RawMessage
		if string(body.IDs) == "null" || json.Unmarshal(body.IDs, &raw) != nil {
			probs.Add(web.Loc("body", "default_workspace_ids"), "Input should be a valid list", "list_type")
		} else if len(raw) == 0 {
			probs.Add(web.Loc("body", "default_workspace_ids"), "List should have at least 1 item after validation, not 0", "too_short")
		} else {
			ids = make([]string, len(raw))
			for i, item := range raw {
				var s string
				if json.Unmarshal(item, &s) != nil || string(item) == "null" {
					probs.Add(web.Loc("body", "default_workspace_ids", i), "Input should be a valid string", "string_type")
					continue
				}
				id, err := web.ParseUUID(s)
				if err != nil {
					probs.Add(web.Loc("body", "default_workspace_ids", i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
				}
				ids[i] = id
			}
		}
	}
	if err := probs.Err(); err != nil {
		return err
	}
	d, err := h.svc.UpdateSSODefaults(r.Context(), p.OrganizationID, role, ids, ActorKey(p))
	if err != nil {
		return httpError(err, "Organization not found")
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

// --- invites ---

type grantIn struct {
	WorkspaceID string        `json:"workspace_id"`
	Role        identity.Role `json:"role"`
}

// checkGrants validates workspace grants of a request body at loc.
func checkGrants(probs *web.Problems, field string, in []grantIn) []identity.Grant {
	out := make([]identity.Grant, len(in))
	for i, g := range in {
		id, err := web.ParseUUID(g.WorkspaceID)
		if err != nil {
			probs.Add(web.Loc("body", field, i, "workspace_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		if !g.Role.Valid() {
			probs.Add(web.Loc("body", field, i, "role"), "Input should be 'Viewer', 'User', 'Editor' or 'Admin'", "enum")
		}
		out[i] = identity.Grant{WorkspaceID: id, Role: g.Role}
	}
	return out
}

func checkEmail(probs *web.Problems, email *string) string {
	if email == nil {
		probs.Add(web.Loc("body", "email"), "Field required", "missing")
		return ""
	}
	e := strings.ToLower(strings.TrimSpace(*email))
	if !ValidEmail(e) {
		probs.Add(web.Loc("body", "email"), "value is not a valid email address", "value_error")
	}
	return e
}

func checkOrgRole(probs *web.Problems, role *identity.Role, def identity.Role) identity.Role {
	if role == nil {
		return def
	}
	if !role.Valid() {
		probs.Add(web.Loc("body", "org_role"), "Input should be 'Viewer', 'User', 'Editor' or 'Admin'", "enum")
	}
	return *role
}

func (h *Handler) createInvite(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var body struct {
		Email      *string        `json:"email"`
		OrgRole    *identity.Role `json:"org_role"`
		Workspaces []grantIn      `json:"workspaces"`
	}
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	inv := Invite{Email: checkEmail(&probs, body.Email), OrgRole: checkOrgRole(&probs, body.OrgRole, identity.RoleUser)}
	inv.Workspaces = checkGrants(&probs, "workspaces", body.Workspaces)
	if err := probs.Err(); err != nil {
		return err
	}
	org, err := h.svc.Organization(r.Context(), p.OrganizationID)
	if err != nil {
		return httpError(err, "Organization not found")
	}
	inv, err = h.svc.CreateInvite(r.Context(), org, inv, ActorKey(p))
	if err != nil {
		return httpError(err, "Organization not found")
	}
	web.WriteJSON(w, http.StatusCreated, inv)
	return nil
}

func (h *Handler) listInvites(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "":
		status = InvitePending
	case "all":
		status = ""
	case InvitePending, InviteClaimed, InviteRevoked:
	default:
		return web.Invalid(web.Loc("query", "status"), "Input should be 'pending', 'claimed', 'revoked' or 'all'", "enum")
	}
	invs, next, err := h.svc.Invites(r.Context(), p.OrganizationID, status, limit, cursor)
	if err != nil {
		return httpError(err, "")
	}
	web.WriteJSON(w, http.StatusOK, newPage(invs, next))
	return nil
}

func (h *Handler) revokeInvite(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	id, err := web.PathUUID(r, "invite_id")
	if err != nil {
		return err
	}
	if _, err := h.svc.RevokeInvite(r.Context(), p.OrganizationID, id, ActorKey(p)); err != nil {
		return httpError(err, "Invite "+id+" not found.")
	}
	web.NoContent(w)
	return nil
}

// --- members ---

// MemberView is a member as the API shows it.
type MemberView struct {
	ID          string        `json:"id"`
	Email       string        `json:"email"`
	UserName    string        `json:"user_name"`
	Name        string        `json:"name"`
	ExternalID  string        `json:"external_id,omitempty"`
	IDPSubject  string        `json:"idp_subject,omitempty"`
	OrgRole     identity.Role `json:"org_role"`
	Source      Source        `json:"source"`
	Active      bool          `json:"active"`
	SCIMManaged bool          `json:"scim_managed"`
	// Grants are the member's own roles (manual, JIT, invite).
	Grants []Grant `json:"grants"`
	// Workspaces are the effective roles: Grants overridden by SCIM groups.
	Workspaces   []Access   `json:"workspaces"`
	InviteID     string     `json:"invite_id,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
	LastSignInAt *time.Time `json:"last_sign_in_at"`
}

// ViewMember renders m with its effective access given the org's groups.
func ViewMember(m Member, groups []Group) MemberView {
	return MemberView{
		ID: m.ID, Email: m.Email, UserName: m.UserName, Name: m.Name, ExternalID: m.ExternalID,
		IDPSubject: m.IDPSubject, OrgRole: m.OrgRole, Source: m.Source, Active: m.Active,
		SCIMManaged: m.SCIMManaged, Grants: m.Grants, Workspaces: EffectiveAccess(m, groups),
		InviteID: m.InviteID, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, LastSignInAt: m.LastSignInAt,
	}
}

func (h *Handler) view(ctx context.Context, m Member) (MemberView, error) {
	groups, err := h.svc.Groups(ctx, m.OrganizationID)
	if err != nil {
		return MemberView{}, err
	}
	return ViewMember(m, groups), nil
}

func (h *Handler) listMembers(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	ms, next, err := h.svc.MembersPage(r.Context(), p.OrganizationID, limit, cursor)
	if err != nil {
		return httpError(err, "")
	}
	groups, err := h.svc.Groups(r.Context(), p.OrganizationID)
	if err != nil {
		return err
	}
	views := make([]MemberView, len(ms))
	for i, m := range ms {
		views[i] = ViewMember(m, groups)
	}
	web.WriteJSON(w, http.StatusOK, newPage(views, next))
	return nil
}

func (h *Handler) createMember(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var body struct {
		Email      *string        `json:"email"`
		Name       string         `json:"name"`
		OrgRole    *identity.Role `json:"org_role"`
		Workspaces []grantIn      `json:"workspaces"`
	}
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	email := checkEmail(&probs, body.Email)
	role := checkOrgRole(&probs, body.OrgRole, identity.RoleUser)
	grants := checkGrants(&probs, "workspaces", body.Workspaces)
	name := strings.TrimSpace(body.Name)
	if len(name) > 200 {
		probs.Add(web.Loc("body", "name"), "String should have at most 200 characters", "string_too_long")
	}
	if err := probs.Err(); err != nil {
		return err
	}
	m := Member{UserName: email, Email: email, Name: name, OrgRole: role, Source: SourceManual, Active: true}
	for _, g := range grants {
		m.Grants = append(m.Grants, Grant{WorkspaceID: g.WorkspaceID, Role: g.Role, Source: SourceManual})
	}
	m, err := h.svc.CreateMember(r.Context(), p.OrganizationID, m, ActorKey(p))
	if err != nil {
		return httpError(err, "")
	}
	return h.writeMember(w, r, http.StatusCreated, m)
}

// memberTarget is the start of every route on one member: the caller must
// be an organization admin, and the path names the member.
func memberTarget(r *http.Request) (identity.Principal, string, error) {
	p := principal(r)
	id, err := web.PathUUID(r, "member_id")
	if err != nil {
		return p, "", err
	}
	return p, id, nil
}

// writeMember answers with the member's view.
func (h *Handler) writeMember(w http.ResponseWriter, r *http.Request, status int, m Member) error {
	v, err := h.view(r.Context(), m)
	if err != nil {
		return err
	}
	web.WriteJSON(w, status, v)
	return nil
}

func (h *Handler) getMember(w http.ResponseWriter, r *http.Request) error {
	p, id, err := memberTarget(r)
	if err != nil {
		return err
	}
	m, err := h.svc.Member(r.Context(), p.OrganizationID, id)
	if err != nil {
		return httpError(err, "Member "+id+" not found.")
	}
	return h.writeMember(w, r, http.StatusOK, m)
}

func (h *Handler) patchMember(w http.ResponseWriter, r *http.Request) error {
	p, id, err := memberTarget(r)
	if err != nil {
		return err
	}
	var body struct {
		Name       *string        `json:"name"`
		OrgRole    *identity.Role `json:"org_role"`
		Workspaces *[]grantIn     `json:"workspaces"`
	}
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	var probs web.Problems
	var role *identity.Role
	if body.OrgRole != nil {
		rl := checkOrgRole(&probs, body.OrgRole, "")
		role = &rl
	}
	var grants []identity.Grant
	if body.Workspaces != nil {
		grants = checkGrants(&probs, "workspaces", *body.Workspaces)
	}
	if body.Name != nil && len(strings.TrimSpace(*body.Name)) > 200 {
		probs.Add(web.Loc("body", "name"), "String should have at most 200 characters", "string_too_long")
	}
	if err := probs.Err(); err != nil {
		return err
	}
	// The SCIM groups matter only to a change of workspaces; read them
	// once, outside the update's retries.
	var groups []Group
	if body.Workspaces != nil {
		if groups, err = h.svc.Groups(r.Context(), p.OrganizationID); err != nil {
			return err
		}
	}
	m, err := h.svc.UpdateMember(r.Context(), p.OrganizationID, id, 0, ActorKey(p), nil, func(m *Member) error {
		if body.Name != nil {
			if m.SCIMManaged {
				return &ConflictError{Detail: "This member's profile is managed through SCIM; change the name in the identity provider"}
			}
			m.Name = strings.TrimSpace(*body.Name)
		}
		if role != nil {
			m.OrgRole = *role
		}
		if body.Workspaces != nil {
			eff := EffectiveAccess(*m, groups)
			next := make([]Grant, 0, len(grants))
			for _, g := range grants {
				for _, a := range eff {
					if a.WorkspaceID == g.WorkspaceID && a.Source == SourceSCIM && a.Role != g.Role {
						return &ConflictError{Detail: "The role in workspace " + g.WorkspaceID + " comes from SCIM group " + a.GroupID + " and overrides manual roles; change it in the identity provider"}
					}
				}
				src := SourceManual
				for _, old := range m.Grants {
					if old.WorkspaceID == g.WorkspaceID && old.Role == g.Role {
						src = old.Source // unchanged roles keep their source
					}
				}
				next = append(next, Grant{WorkspaceID: g.WorkspaceID, Role: g.Role, Source: src})
			}
			m.Grants = next
		}
		return nil
	})
	if err != nil {
		return httpError(err, "Member "+id+" not found.")
	}
	return h.writeMember(w, r, http.StatusOK, m)
}

func (h *Handler) deleteMember(w http.ResponseWriter, r *http.Request) error {
	p, id, err := memberTarget(r)
	if err != nil {
		return err
	}
	m, err := h.svc.Member(r.Context(), p.OrganizationID, id)
	if err != nil {
		return httpError(err, "Member "+id+" not found.")
	}
	if m.SCIMManaged {
		return web.Conflict("This member is provisioned through SCIM; deactivate or delete them in the identity provider")
	}
	if err := h.svc.DeleteMember(r.Context(), p.OrganizationID, id, 0, ActorKey(p)); err != nil {
		return httpError(err, "Member "+id+" not found.")
	}
	web.NoContent(w)
	return nil
}

// --- audit ---

func (h *Handler) listAudit(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	limit, cursor, err := pageParams(r)
	if err != nil {
		return err
	}
	action := r.URL.Query().Get("action")
	if len(action) > 100 {
		return web.Invalid(web.Loc("query", "action"), "String should have at most 100 characters", "string_too_long")
	}
	recs, next, err := h.svc.Audit(r.Context(), p.OrganizationID, action, limit, cursor)
	if err != nil {
		return httpError(err, "")
	}
	web.WriteJSON(w, http.StatusOK, newPage(recs, next))
	return nil
}

// --- SCIM tokens ---

func (h *Handler) listSCIMTokens(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	ts, err := h.svc.SCIMTokens(r.Context(), p.OrganizationID)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, ts)
	return nil
}

type createdToken struct {
	SCIMToken
	// Token is the raw bearer token, returned only here.
	Token string `json:"token"`
}

func (h *Handler) createSCIMToken(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	var body struct {
		Description string `json:"description"`
	}
	if err := web.DecodeJSON(r, &body, true); err != nil {
		return err
	}
	if len(body.Description) > 500 {
		return web.Invalid(web.Loc("body", "description"), "String should have at most 500 characters", "string_too_long")
	}
	t, raw, err := h.svc.CreateSCIMToken(r.Context(), p.OrganizationID, body.Description, ActorKey(p))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusCreated, createdToken{SCIMToken: t, Token: raw})
	return nil
}

func (h *Handler) revokeSCIMToken(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	id, err := web.PathUUID(r, "token_id")
	if err != nil {
		return err
	}
	if err := h.svc.RevokeSCIMToken(r.Context(), p.OrganizationID, id, ActorKey(p)); err != nil {
		return httpError(err, "SCIM token "+id+" not found.")
	}
	web.NoContent(w)
	return nil
}

// --- SSO sign-in ---

type signInView struct {
	SignInResult
	OrganizationID string      `json:"organization_id"`
	Member         *MemberView `json:"member"`
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) error {
	slug := r.PathValue("sso_login_slug")
	if slug == "" || len(slug) > 200 {
		return web.NotFound("SSO login slug not found")
	}
	org, err := h.svc.ids.OrganizationBySlug(r.Context(), slug)
	if rerr := h.signInRegion(r.Context(), slug, org, err); rerr != nil {
		return rerr
	}
	if errors.Is(err, identity.ErrNotFound) {
		return web.NotFound("No organization has the SSO login slug %q", slug)
	}
	if err != nil {
		return err
	}
	id, actor, err := h.verifier.Verify(r.Context(), org, r)
	if err != nil {
		return err
	}
	res, err := h.svc.SignIn(r.Context(), org, id, actor)
	if err != nil {
		return httpError(err, "Organization not found")
	}
	out := signInView{SignInResult: res, OrganizationID: org.ID}
	if res.Member != nil {
		v, err := h.view(r.Context(), *res.Member)
		if err != nil {
			return err
		}
		out.Member = &v
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}
