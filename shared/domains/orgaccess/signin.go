package orgaccess

import (
	"context"
	"errors"
	"net/mail"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Identity is a user as the identity provider asserted them, after the
// SAML or OIDC response was validated (see Verifier).
type Identity struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
	// Subject is the IdP's stable id of the user (OIDC sub, SAML NameID).
	Subject string `json:"idp_subject"`
	Name    string `json:"name"`
}

// Decisions of the sign-in procedure, in the seed's order.
const (
	DecisionExistingMember = "existing_member" // rule 1: already has access
	DecisionInviteClaimed  = "invite_claimed"  // rule 2: invites on and a pending invite
	DecisionJITProvisioned = "jit_provisioned" // rule 3: JIT on
	DecisionDenied         = "denied"          // rule 4, or a check before rule 1
)

// Reasons of a denial.
const (
	// Rule 4 with invites on: JIT is off and there is no pending invite.
	ReasonNoPendingInvite = "no_pending_invite"
	// Rule 4 with invites off: JIT and invites are both off.
	ReasonSCIMOrAdminOnly = "scim_or_admin_only"
	// The member exists but SCIM deactivated them.
	ReasonDeactivated = "deactivated"
	// The IdP did not assert a verified email, and no member has this subject.
	ReasonEmailNotVerified = "email_not_verified"
	// The email belongs to a member who signed in with another IdP subject.
	ReasonSubjectMismatch = "subject_mismatch"
)

// SignInResult says which rule applied and what it did.
type SignInResult struct {
	Decision string `json:"decision"`
	// Rule is the number of the seed's rule that decided (1-4), 0 for a
	// denial by a check that precedes the rules (unverified email,
	// subject mismatch).
	Rule   int    `json:"rule"`
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail"`
	// Settings are the effective settings the decision used.
	Settings Effective `json:"settings"`
	InviteID string    `json:"invite_id,omitempty"`
	// Member is the member signed in or provisioned; nil when denied.
	Member *Member `json:"-"`
}

var errRetry = errors.New("orgaccess: state changed during sign-in")

// ValidEmail reports whether s is a plain address (no display name).
func ValidEmail(s string) bool {
	if len(s) > 254 || strings.TrimSpace(s) != s {
		return false
	}
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// SignIn runs the decision procedure for an identity signing in to org:
//
//  0. a member with this IdP subject, else (with a verified email) a
//     member with this email, is the user; an inactive one is denied;
//  1. a user who already has access is signed in;
//  2. else, if invites are enabled and a pending invite exists, the
//     invite is claimed: its organization role and workspaces;
//  3. else, if JIT provisioning is enabled, the user is provisioned with
//     the default SSO role in the default SSO workspaces;
//  4. else access is denied: SCIM or an administrator must add the user.
//
// Invites and JIT use the organization's effective settings (self-hosted
// rules applied). Provisioning is a conditional write on the email and
// subject markers and on the invite's version, so concurrent sign-ins of
// one user provision once: the losers see rule 1. Every decision is
// audited.
func (s *Service) SignIn(ctx context.Context, org identity.Organization, id Identity, actor Actor) (SignInResult, error) {
	id.Email = strings.ToLower(strings.TrimSpace(id.Email))
	id.Subject = strings.TrimSpace(id.Subject)
	id.Name = strings.TrimSpace(id.Name)
	if id.Subject == "" || !ValidEmail(id.Email) {
		return SignInResult{}, invalid("identity", "A sign-in needs a valid email and an IdP subject")
	}
	for attempt := 0; attempt < 10; attempt++ {
		res, err := s.decide(ctx, org, id, actor)
		if errors.Is(err, errRetry) {
			continue
		}
		return res, err
	}
	return SignInResult{}, errContention
}

func (s *Service) decide(ctx context.Context, org identity.Organization, id Identity, actor Actor) (SignInResult, error) {
	eff := s.EffectiveSettings(org)
	m, err := s.memberBySubject(ctx, org.ID, id.Subject)
	if err == nil {
		return s.signInMember(ctx, org, eff, m, id, actor, "idp_subject")
	}
	if !errors.Is(err, ErrNotFound) {
		return SignInResult{}, err
	}
	if !id.EmailVerified {
		return s.deny(ctx, org, eff, id, actor, 0, ReasonEmailNotVerified,
			"The identity provider did not verify this email address")
	}
	m, err = s.MemberByEmail(ctx, org.ID, id.Email)
	if err == nil {
		if m.IDPSubject != "" && m.IDPSubject != id.Subject {
			return s.deny(ctx, org, eff, id, actor, 0, ReasonSubjectMismatch,
				"This email belongs to a member who signs in with another identity provider subject")
		}
		return s.signInMember(ctx, org, eff, m, id, actor, "email")
	}
	if !errors.Is(err, ErrNotFound) {
		return SignInResult{}, err
	}
	if eff.Invites {
		inv, err := s.PendingInvite(ctx, org.ID, id.Email)
		if err == nil {
			return s.claim(ctx, org, eff, inv, id, actor)
		}
		if !errors.Is(err, ErrNotFound) {
			return SignInResult{}, err
		}
	}
	if eff.JIT {
		return s.provisionJIT(ctx, org, eff, id, actor)
	}
	if eff.Invites {
		return s.deny(ctx, org, eff, id, actor, 4, ReasonNoPendingInvite,
			"JIT provisioning is off and there is no pending invite for this email: the user must be invited, or added through SCIM or by an administrator")
	}
	return s.deny(ctx, org, eff, id, actor, 4, ReasonSCIMOrAdminOnly,
		"JIT provisioning and invites are off: the user must be added through SCIM or by an administrator")
}

func (s *Service) deny(ctx context.Context, org identity.Organization, eff Effective, id Identity, actor Actor, rule int, reason, detail string) (SignInResult, error) {
	res := SignInResult{Decision: DecisionDenied, Rule: rule, Reason: reason, Detail: detail, Settings: eff}
	err := s.audit(ctx, org.ID, AuditRecord{
		Action: ActionSignIn, Actor: actor,
		Target:   AuditTarget{Type: "identity", ID: id.Subject, Email: id.Email},
		Decision: DecisionDenied, Reason: reason,
		Details: map[string]any{"rule": rule, "settings": eff, "email_verified": id.EmailVerified},
	})
	return res, err
}

var errDeactivated = errors.New("orgaccess: member deactivated")

func (s *Service) signInMember(ctx context.Context, org identity.Organization, eff Effective, m Member, id Identity, actor Actor, matchedBy string) (SignInResult, error) {
	if !m.Active {
		return s.deny(ctx, org, eff, id, actor, 1, ReasonDeactivated,
			"This member was deactivated through SCIM and has no access")
	}
	describe := func(_, m Member) AuditRecord {
		return AuditRecord{
			Action: ActionSignIn, Actor: actor,
			Target:   AuditTarget{Type: "member", ID: m.ID, Email: m.Email},
			Decision: DecisionExistingMember,
			Details:  map[string]any{"rule": 1, "matched_by": matchedBy, "idp_subject": id.Subject, "settings": eff},
		}
	}
	now := s.now()
	m, err := s.UpdateMember(ctx, org.ID, m.ID, 0, actor, describe, func(m *Member) error {
		if !m.Active {
			return errDeactivated
		}
		m.LastSignInAt = &now
		if m.IDPSubject == "" {
			m.IDPSubject = id.Subject
		}
		if m.Name == "" {
			m.Name = id.Name
		}
		return nil
	})
	var ce *ConflictError
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, errDeactivated), errors.As(err, &ce):
		return SignInResult{}, errRetry // removed, deactivated or subject taken meanwhile
	case err != nil:
		return SignInResult{}, err
	}
	return SignInResult{Decision: DecisionExistingMember, Rule: 1, Settings: eff, Member: &m,
		Detail: "The user already has access to the organization and is signed in"}, nil
}

func (s *Service) newSSOMember(id Identity, source Source) Member {
	now := s.now()
	return Member{
		UserName: id.Email, Email: id.Email, Name: id.Name, IDPSubject: id.Subject,
		Source: source, Active: true, LastSignInAt: &now,
	}
}

func (s *Service) claim(ctx context.Context, org identity.Organization, eff Effective, inv Invite, id Identity, actor Actor) (SignInResult, error) {
	m := s.newSSOMember(id, SourceInvite)
	m.OrgRole, m.InviteID = inv.OrgRole, inv.ID
	for _, g := range inv.Workspaces {
		m.Grants = append(m.Grants, Grant{WorkspaceID: g.WorkspaceID, Role: g.Role, Source: SourceInvite})
	}
	if err := s.prepareNew(ctx, org.ID, &m); err != nil {
		return SignInResult{}, err
	}
	claimed := inv
	claimed.Status, claimed.ClaimedAt, claimed.ClaimedBy = InviteClaimed, m.LastSignInAt, m.ID
	ops, _ := newMemberOps(m)
	ops = append(ops,
		store.TxOp{Kind: store.OpPut, Item: store.Item{Key: inviteKey(org.ID, inv.ID), Data: mustJSON(claimed)}, Cond: store.HasVersion(inv.Version)},
		store.TxOp{Kind: store.OpDelete, Key: inviteEmailKey(org.ID, inv.Email), Cond: store.Exists()},
		s.auditOp(org.ID, AuditRecord{
			Action: ActionSignIn, Actor: actor,
			Target:   AuditTarget{Type: "member", ID: m.ID, Email: m.Email},
			Decision: DecisionInviteClaimed,
			Details: map[string]any{"rule": 2, "invite_id": inv.ID, "org_role": m.OrgRole, "grants": m.Grants,
				"idp_subject": id.Subject, "settings": eff},
		}),
	)
	if err := s.st.Transact(ctx, ops); errors.Is(err, store.ErrConditionFailed) {
		return SignInResult{}, errRetry // claimed, revoked or provisioned meanwhile
	} else if err != nil {
		return SignInResult{}, err
	}
	m.Version = 1
	return SignInResult{Decision: DecisionInviteClaimed, Rule: 2, Settings: eff, Member: &m, InviteID: inv.ID,
		Detail: "A pending invite was claimed: the user got its organization role and workspaces"}, nil
}

// JITOrgRole is the organization role of JIT-provisioned members.
const JITOrgRole = identity.RoleUser

func (s *Service) provisionJIT(ctx context.Context, org identity.Organization, eff Effective, id Identity, actor Actor) (SignInResult, error) {
	d, err := s.SSODefaults(ctx, org.ID)
	if err != nil {
		return SignInResult{}, err
	}
	m := s.newSSOMember(id, SourceJIT)
	m.OrgRole = JITOrgRole
	for _, ws := range d.DefaultWorkspaceIDs {
		m.Grants = append(m.Grants, Grant{WorkspaceID: ws, Role: d.DefaultWorkspaceRole, Source: SourceJIT})
	}
	if err := s.prepareNew(ctx, org.ID, &m); err != nil {
		return SignInResult{}, err
	}
	ops, _ := newMemberOps(m)
	ops = append(ops, s.auditOp(org.ID, AuditRecord{
		Action: ActionSignIn, Actor: actor,
		Target:   AuditTarget{Type: "member", ID: m.ID, Email: m.Email},
		Decision: DecisionJITProvisioned,
		Details: map[string]any{"rule": 3, "org_role": m.OrgRole, "grants": m.Grants,
			"idp_subject": id.Subject, "settings": eff},
	}))
	if err := s.st.Transact(ctx, ops); errors.Is(err, store.ErrConditionFailed) {
		return SignInResult{}, errRetry
	} else if err != nil {
		return SignInResult{}, err
	}
	m.Version = 1
	return SignInResult{Decision: DecisionJITProvisioned, Rule: 3, Settings: eff, Member: &m,
		Detail: "The user was provisioned with the default SSO role in the default SSO workspaces"}, nil
}
