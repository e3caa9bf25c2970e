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
)

// Invite statuses.
const (
	InvitePending = "pending"
	InviteClaimed = "claimed"
	InviteRevoked = "revoked"
)

// Invite lets one email join the organization at SSO sign-in with the
// invite's organization role and workspace roles. An email has at most one
// pending invite per organization.
type Invite struct {
	ID             string           `json:"id"`
	OrganizationID string           `json:"organization_id"`
	Email          string           `json:"email"`
	OrgRole        identity.Role    `json:"org_role"`
	Workspaces     []identity.Grant `json:"workspaces"`
	Status         string           `json:"status"`
	CreatedAt      time.Time        `json:"created_at"`
	CreatedBy      Actor            `json:"created_by"`
	ClaimedAt      *time.Time       `json:"claimed_at"`
	// ClaimedBy is the member the claim created.
	ClaimedBy string     `json:"claimed_by,omitempty"`
	RevokedAt *time.Time `json:"revoked_at"`
	Version   int64      `json:"-"`
}

// CreateInvite stores a pending invite. It fails with ErrInvitesDisabled
// when the organization's effective settings do not allow invites, with a
// *ConflictError when the email is already a member or already has a
// pending invite, and with an *InvalidError for a workspace outside the
// organization; in every failure nothing is stored.
func (s *Service) CreateInvite(ctx context.Context, org identity.Organization, inv Invite, actor Actor) (Invite, error) {
	if !s.EffectiveSettings(org).Invites {
		return Invite{}, ErrInvitesDisabled
	}
	inv.ID, inv.OrganizationID = newID(), org.ID
	inv.Email = strings.ToLower(inv.Email)
	inv.Status, inv.CreatedAt, inv.CreatedBy = InvitePending, s.now(), actor
	if !inv.OrgRole.Valid() {
		return Invite{}, invalid("org_role", "Input should be 'Viewer', 'User', 'Editor' or 'Admin'")
	}
	if inv.Workspaces == nil {
		inv.Workspaces = []identity.Grant{}
	}
	seen := map[string]bool{}
	for i, g := range inv.Workspaces {
		field := fmt.Sprintf("workspaces.%d", i)
		if !g.Role.Valid() {
			return Invite{}, invalid(field+".role", "Input should be 'Viewer', 'User', 'Editor' or 'Admin'")
		}
		if seen[g.WorkspaceID] {
			return Invite{}, invalid(field+".workspace_id", "Workspace %s is listed twice", g.WorkspaceID)
		}
		seen[g.WorkspaceID] = true
		if _, err := s.workspaceOf(ctx, org.ID, g.WorkspaceID); errors.Is(err, ErrNotFound) {
			return Invite{}, invalid(field+".workspace_id", "Workspace %s does not exist in this organization", g.WorkspaceID)
		} else if err != nil {
			return Invite{}, err
		}
	}
	if _, err := s.MemberByEmail(ctx, org.ID, inv.Email); err == nil {
		return Invite{}, &ConflictError{Field: "email", Detail: fmt.Sprintf("%s is already a member of this organization", inv.Email)}
	} else if !errors.Is(err, ErrNotFound) {
		return Invite{}, err
	}
	err := s.st.Transact(ctx, []store.TxOp{
		putNew(store.Item{Key: inviteKey(org.ID, inv.ID), Data: mustJSON(inv)}),
		putNew(store.Item{Key: inviteEmailKey(org.ID, inv.Email), Data: []byte(inv.ID)}),
		s.auditOp(org.ID, AuditRecord{
			Action: ActionInviteCreated, Actor: actor,
			Target:  AuditTarget{Type: "invite", ID: inv.ID, Email: inv.Email},
			Details: map[string]any{"org_role": inv.OrgRole, "workspaces": inv.Workspaces},
		}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return Invite{}, &ConflictError{Field: "email", Detail: fmt.Sprintf("%s already has a pending invite", inv.Email)}
	}
	if err != nil {
		return Invite{}, err
	}
	inv.Version = 1
	return inv, nil
}

func decodeInvite(it store.Item) (Invite, error) {
	var inv Invite
	if err := json.Unmarshal(it.Data, &inv); err != nil {
		return inv, fmt.Errorf("orgaccess: invite %s: %w", it.SK, err)
	}
	inv.Version = it.Version
	return inv, nil
}

// Invite returns one invite.
func (s *Service) Invite(ctx context.Context, org, id string) (Invite, error) {
	it, err := s.st.Get(ctx, inviteKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return Invite{}, ErrNotFound
	}
	if err != nil {
		return Invite{}, err
	}
	return decodeInvite(it)
}

// PendingInvite returns the pending invite of an email, or ErrNotFound.
func (s *Service) PendingInvite(ctx context.Context, org, email string) (Invite, error) {
	it, err := s.st.Get(ctx, inviteEmailKey(org, strings.ToLower(email)))
	if errors.Is(err, store.ErrNotFound) {
		return Invite{}, ErrNotFound
	}
	if err != nil {
		return Invite{}, err
	}
	return s.Invite(ctx, org, string(it.Data))
}

// Invites returns one page of invites; status "" means every status.
// Filtering happens after the read, so a page may hold fewer than limit
// invites while more follow (only an empty cursor means the end).
func (s *Service) Invites(ctx context.Context, org, status string, limit int, cursor string) ([]Invite, string, error) {
	page, err := s.st.Query(ctx, store.Query{PK: orgPK(org), SK: store.SKCond{Op: store.SKBeginsWith, A: "inv#"}, Limit: limit, Cursor: cursor})
	if errors.Is(err, store.ErrInvalid) {
		return nil, "", ErrBadCursor
	}
	if err != nil {
		return nil, "", err
	}
	out := []Invite{}
	for _, it := range page.Items {
		inv, err := decodeInvite(it)
		if err != nil {
			return nil, "", err
		}
		if status == "" || inv.Status == status {
			out = append(out, inv)
		}
	}
	return out, page.Next, nil
}

// RevokeInvite revokes a pending invite; a claimed or revoked one is a
// *ConflictError.
func (s *Service) RevokeInvite(ctx context.Context, org, id string, actor Actor) (Invite, error) {
	for attempt := 0; attempt < 20; attempt++ {
		inv, err := s.Invite(ctx, org, id)
		if err != nil {
			return Invite{}, err
		}
		if inv.Status != InvitePending {
			return inv, &ConflictError{Detail: fmt.Sprintf("Invite %s is %s, not pending", id, inv.Status)}
		}
		now := s.now()
		old := inv.Version
		inv.Status, inv.RevokedAt = InviteRevoked, &now
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: inviteKey(org, id), Data: mustJSON(inv)}, Cond: store.HasVersion(old)},
			{Kind: store.OpDelete, Key: inviteEmailKey(org, inv.Email)},
			s.auditOp(org, AuditRecord{
				Action: ActionInviteRevoked, Actor: actor,
				Target: AuditTarget{Type: "invite", ID: id, Email: inv.Email},
			}),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue // claimed or revoked meanwhile: look again
		}
		if err != nil {
			return Invite{}, err
		}
		inv.Version = old + 1
		return inv, nil
	}
	return Invite{}, errContention
}
