// Package orgaccess holds who may use an organization and how they got in:
// members (a person's record in one organization, with an organization role
// and workspace roles, each role tagged with its source: manual, JIT, invite
// or SCIM), invites, SCIM groups and their workspace-role mapping, the
// default SSO settings, the sign-in decision procedure of the interface's
// "User access decision at SSO sign-in", SCIM bearer tokens and the audit
// trail of every access decision and settings change.
//
// The organization record itself (jit_provisioning_enabled, invites_enabled,
// sso_login_slug, default_sso_provision) lives in shared/domains/identity; this
// package reads it and changes it only through identity.UpdateOrganization.
//
// Every state change is a conditional write, and the audit record of a
// change is written in the same transaction as the change whenever the
// change is this package's own.
package orgaccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// Source says how a member or one of their roles came to be.
type Source string

const (
	SourceManual Source = "manual" // added by an administrator
	SourceJIT    Source = "jit"    // provisioned at first SSO sign-in with the default SSO settings
	SourceInvite Source = "invite" // provisioned by claiming an invite at SSO sign-in
	SourceSCIM   Source = "scim"   // created by the identity provider through SCIM, or a SCIM group role
)

// Grant is a workspace role held directly by a member (not through a SCIM
// group), with its source.
type Grant struct {
	WorkspaceID string        `json:"workspace_id"`
	Role        identity.Role `json:"role"`
	Source      Source        `json:"source"`
}

// Member is a person's record in one organization. A person in two
// organizations has two members; SCIM's User resource is a Member.
type Member struct {
	ID             string `json:"id"`
	OrganizationID string `json:"organization_id"`
	// UserName is unique in the organization, compared case-insensitively
	// (SCIM userName). For members not created through SCIM it is the email.
	UserName string `json:"user_name"`
	// Email is the lower-cased address used to match SSO sign-ins and
	// invites; unique in the organization; may be empty for SCIM users
	// without an email.
	Email string `json:"email"`
	// Name is the display name.
	Name string `json:"name"`
	// ExternalID is the identity provider's id for the user (SCIM externalId).
	ExternalID string `json:"external_id,omitempty"`
	// IDPSubject is the subject the identity provider presented at the first
	// SSO sign-in; later sign-ins match it first.
	IDPSubject string        `json:"idp_subject,omitempty"`
	OrgRole    identity.Role `json:"org_role"`
	// Grants are the workspace roles given manually, by JIT or by an invite.
	// Roles from SCIM groups are not stored here: they are computed from the
	// groups and override these (see Access).
	Grants []Grant `json:"grants"`
	// Source is how the member joined.
	Source Source `json:"source"`
	// Active is false when SCIM deactivated the member: no access at all.
	Active bool `json:"active"`
	// SCIMManaged is true once the identity provider created or changed the
	// member through SCIM; such members are changed only through SCIM.
	SCIMManaged bool `json:"scim_managed"`
	// Profile holds the SCIM profile attributes (name, emails, title…) as
	// the identity provider sent them.
	Profile      map[string]any `json:"profile,omitempty"`
	InviteID     string         `json:"invite_id,omitempty"`
	CreatedAt    time.Time      `json:"created_at"`
	UpdatedAt    time.Time      `json:"updated_at"`
	LastSignInAt *time.Time     `json:"last_sign_in_at"`
	// Version is the store version (SCIM meta.version / ETag).
	Version int64 `json:"-"`
}

// Mapping is the workspace role a SCIM group gives its members.
type Mapping struct {
	WorkspaceID string        `json:"workspace_id,omitempty"`
	Role        identity.Role `json:"role,omitempty"`
	// From is "extension" (the group's workspace extension attribute),
	// "display_name" (the agentplane:<workspace>:<Role> naming convention)
	// or "" when the group maps to no workspace.
	From string `json:"from,omitempty"`
}

// Group is a SCIM group: its members get the mapped workspace role, which
// overrides the role they hold there manually, by JIT or by invite.
type Group struct {
	ID             string    `json:"id"`
	OrganizationID string    `json:"organization_id"`
	DisplayName    string    `json:"display_name"`
	ExternalID     string    `json:"external_id,omitempty"`
	Members        []string  `json:"members"`
	Mapping        Mapping   `json:"mapping"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	Version        int64     `json:"-"`
}

// Actor is who made a change, for the audit trail.
type Actor struct {
	// Type is "api_key", "scim_token" or "system".
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// ActorKey is the actor of a request made with an API key.
func ActorKey(p identity.Principal) Actor { return Actor{Type: "api_key", ID: p.KeyID} }

var (
	ErrNotFound = errors.New("orgaccess: not found")
	// ErrPrecondition: the caller's expected version does not match.
	ErrPrecondition = errors.New("orgaccess: version mismatch")
	// ErrInvitesDisabled: the organization does not allow invites.
	ErrInvitesDisabled = errors.New("orgaccess: invites are disabled")
	errContention      = errors.New("orgaccess: too much contention, retry")
)

// ConflictError reports a uniqueness or state conflict.
type ConflictError struct {
	// Field is the unique field that clashed (user_name, email,
	// idp_subject), or "" for a state conflict.
	Field  string
	Detail string
}

func (e *ConflictError) Error() string { return e.Detail }

// InvalidError reports input the domain rejects (workspace of another
// organization, malformed mapping…). Field names the offending input.
type InvalidError struct {
	Field  string
	Detail string
}

func (e *InvalidError) Error() string { return e.Detail }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Options are the installation-wide rules.
type Options struct {
	// SelfHosted applies the self-hosted rules: the SSO settings apply only
	// to the default organization (default_sso_provision=true); the others
	// use invites.
	SelfHosted bool
	// SelfHostedJITEnabled false (SELF_HOSTED_JIT_PROVISIONING_ENABLED=false)
	// disables JIT for every organization, whatever its own setting.
	SelfHostedJITEnabled bool
}

// Service is the organization-access domain over the store.
type Service struct {
	st   store.Store
	ids  *identity.Service
	opts Options
	now  func() time.Time
}

// New returns a Service.
func New(st store.Store, ids *identity.Service, opts Options) *Service {
	return &Service{st: st, ids: ids, opts: opts, now: func() time.Time { return time.Now().UTC() }}
}

// Identity returns the identity service (organizations, workspaces, keys).
func (s *Service) Identity() *identity.Service { return s.ids }

// Key layout. Everything of one organization shares the partition
// "oa#org#<org>"; unique values (user name, email, IdP subject, pending
// invite email) are guarded by marker items written in the same
// transaction as the record they point to.
func orgPK(org string) string            { return "oa#org#" + org }
func memberKey(org, id string) store.Key { return store.Key{PK: orgPK(org), SK: "mem#" + id} }
func userNameKey(org, name string) store.Key {
	return store.Key{PK: orgPK(org), SK: "uname#" + strings.ToLower(name)}
}
func emailKey(org, email string) store.Key { return store.Key{PK: orgPK(org), SK: "email#" + email} }
func subjectKey(org, sub string) store.Key { return store.Key{PK: orgPK(org), SK: "sub#" + sub} }
func groupKey(org, id string) store.Key    { return store.Key{PK: orgPK(org), SK: "grp#" + id} }
func inviteKey(org, id string) store.Key   { return store.Key{PK: orgPK(org), SK: "inv#" + id} }
func inviteEmailKey(org, email string) store.Key {
	return store.Key{PK: orgPK(org), SK: "invemail#" + email}
}
func ssoDefaultsKey(org string) store.Key    { return store.Key{PK: orgPK(org), SK: "ssodefaults"} }
func scimTokenKey(org, id string) store.Key  { return store.Key{PK: orgPK(org), SK: "scimtok#" + id} }
func scimTokenHashKey(hash string) store.Key { return store.Key{PK: "oa#scimtok#" + hash, SK: "#tok"} }

func newID() string         { return uuid.NewString() }
func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func putNew(it store.Item) store.TxOp {
	return store.TxOp{Kind: store.OpPut, Item: it, Cond: store.NotExists()}
}

// queryAll reads every item of a partition whose sort key starts with prefix.
func (s *Service) queryAll(ctx context.Context, pk, prefix string) ([]store.Item, error) {
	var out []store.Item
	q := store.Query{PK: pk, SK: store.SKCond{Op: store.SKBeginsWith, A: prefix}}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// Organization returns an organization record.
func (s *Service) Organization(ctx context.Context, id string) (identity.Organization, error) {
	o, err := s.ids.Organization(ctx, id)
	if errors.Is(err, identity.ErrNotFound) {
		return o, ErrNotFound
	}
	return o, err
}

// workspaceOf returns the workspace if it belongs to org.
func (s *Service) workspaceOf(ctx context.Context, org, id string) (identity.Workspace, error) {
	ws, err := s.ids.Workspace(ctx, id)
	if errors.Is(err, identity.ErrNotFound) || (err == nil && ws.OrganizationID != org) {
		return identity.Workspace{}, ErrNotFound
	}
	return ws, err
}
