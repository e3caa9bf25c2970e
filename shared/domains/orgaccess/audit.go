package orgaccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Audit actions.
const (
	ActionSignIn           = "sso.sign_in"
	ActionSettingsUpdated  = "organization.settings.updated"
	ActionSSODefaults      = "sso_defaults.updated"
	ActionInviteCreated    = "invite.created"
	ActionInviteRevoked    = "invite.revoked"
	ActionMemberCreated    = "member.created"
	ActionMemberUpdated    = "member.updated"
	ActionMemberRemoved    = "member.removed"
	ActionGroupCreated     = "group.created"
	ActionGroupUpdated     = "group.updated"
	ActionGroupRemoved     = "group.removed"
	ActionSCIMTokenCreated = "scim_token.created"
	ActionSCIMTokenRevoked = "scim_token.revoked"
)

// AuditTarget is what an audit record is about.
type AuditTarget struct {
	Type  string `json:"type"` // member, invite, group, organization, sso_defaults, scim_token, identity
	ID    string `json:"id,omitempty"`
	Email string `json:"email,omitempty"`
}

// AuditRecord is one access decision or settings change.
type AuditRecord struct {
	ID             string      `json:"id"`
	OrganizationID string      `json:"organization_id"`
	CreatedAt      time.Time   `json:"created_at"`
	Action         string      `json:"action"`
	Actor          Actor       `json:"actor"`
	Target         AuditTarget `json:"target"`
	// Decision and Reason are set on sign-in records (see Decision*).
	Decision string         `json:"decision,omitempty"`
	Reason   string         `json:"reason,omitempty"`
	Details  map[string]any `json:"details,omitempty"`
}

func auditPK(org string) string { return "oa#audit#" + org }

// auditSK sorts by time; the id breaks ties.
func auditSK(t time.Time, id string) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z") + "#" + id
}

// auditOp is the write of one audit record, to be put in the transaction
// of the change it records. gsi2 indexes records by action.
func (s *Service) auditOp(org string, rec AuditRecord) store.TxOp {
	rec.ID = newID()
	rec.OrganizationID = org
	rec.CreatedAt = s.now()
	sk := auditSK(rec.CreatedAt, rec.ID)
	return putNew(store.Item{
		Key:  store.Key{PK: auditPK(org), SK: sk},
		Data: mustJSON(rec),
		Indexes: map[string]store.IndexKey{
			"gsi2": {PK: auditPK(org) + "#" + rec.Action, SK: sk},
		},
	})
}

// audit writes a record on its own (decisions that change nothing, and
// changes made through identity.UpdateOrganization).
func (s *Service) audit(ctx context.Context, org string, rec AuditRecord) error {
	op := s.auditOp(org, rec)
	_, err := s.st.Put(ctx, op.Item, op.Cond)
	return err
}

// ErrBadCursor: a list cursor that this listing did not produce.
var ErrBadCursor = errors.New("orgaccess: invalid cursor")

// Audit returns one page of an organization's audit records, newest first,
// optionally only those of one action.
func (s *Service) Audit(ctx context.Context, org, action string, limit int, cursor string) ([]AuditRecord, string, error) {
	q := store.Query{PK: auditPK(org), Desc: true, Limit: limit, Cursor: cursor}
	if action != "" {
		q.Index, q.PK = "gsi2", auditPK(org)+"#"+action
	}
	page, err := s.st.Query(ctx, q)
	if errors.Is(err, store.ErrInvalid) {
		return nil, "", ErrBadCursor
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]AuditRecord, 0, len(page.Items))
	for _, it := range page.Items {
		var r AuditRecord
		if err := json.Unmarshal(it.Data, &r); err != nil {
			return nil, "", fmt.Errorf("orgaccess: audit record %s: %w", it.SK, err)
		}
		out = append(out, r)
	}
	return out, page.Next, nil
}
