package orgaccess

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// SCIMTokenPrefix starts every SCIM bearer token.
const SCIMTokenPrefix = "scim_"

// SCIMToken is a SCIM bearer token's record. Like API keys, the token is
// random (256 bits), shown once, and stored only as its SHA-256 hash.
type SCIMToken struct {
	ID             string    `json:"id"`
	OrganizationID string    `json:"organization_id"`
	Description    string    `json:"description"`
	ShortToken     string    `json:"short_token"`
	CreatedAt      time.Time `json:"created_at"`
	CreatedBy      Actor     `json:"created_by"`
}

type storedToken struct {
	SCIMToken
	Hash string `json:"hash"`
}

// ErrInvalidToken: no SCIM token matches.
var ErrInvalidToken = errors.New("orgaccess: invalid SCIM token")

// CreateSCIMToken stores a new token and returns its record and the raw
// token, which is never available again.
func (s *Service) CreateSCIMToken(ctx context.Context, org, description string, actor Actor) (SCIMToken, string, error) {
	raw := identity.NewToken(SCIMTokenPrefix)
	t := SCIMToken{
		ID: newID(), OrganizationID: org, Description: description,
		ShortToken: raw[:9] + "…" + raw[len(raw)-4:], CreatedAt: s.now(), CreatedBy: actor,
	}
	hash := identity.HashToken(raw)
	rec := mustJSON(storedToken{SCIMToken: t, Hash: hash})
	err := s.st.Transact(ctx, []store.TxOp{
		putNew(store.Item{Key: scimTokenKey(org, t.ID), Data: rec}),
		putNew(store.Item{Key: scimTokenHashKey(hash), Data: rec}),
		s.auditOp(org, AuditRecord{
			Action: ActionSCIMTokenCreated, Actor: actor,
			Target:  AuditTarget{Type: "scim_token", ID: t.ID},
			Details: map[string]any{"description": description, "short_token": t.ShortToken},
		}),
	})
	if err != nil {
		return SCIMToken{}, "", err
	}
	return t, raw, nil
}

// SCIMTokens lists an organization's tokens (records only).
func (s *Service) SCIMTokens(ctx context.Context, org string) ([]SCIMToken, error) {
	items, err := s.queryAll(ctx, orgPK(org), "scimtok#")
	if err != nil {
		return nil, err
	}
	out := make([]SCIMToken, 0, len(items))
	for _, it := range items {
		var st storedToken
		if err := json.Unmarshal(it.Data, &st); err != nil {
			return nil, fmt.Errorf("orgaccess: scim token %s: %w", it.SK, err)
		}
		out = append(out, st.SCIMToken)
	}
	return out, nil
}

// RevokeSCIMToken deletes a token; requests with it fail from then on.
func (s *Service) RevokeSCIMToken(ctx context.Context, org, id string, actor Actor) error {
	it, err := s.st.Get(ctx, scimTokenKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var st storedToken
	if err := json.Unmarshal(it.Data, &st); err != nil {
		return err
	}
	err = s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpDelete, Key: scimTokenKey(org, id), Cond: store.Exists()},
		{Kind: store.OpDelete, Key: scimTokenHashKey(st.Hash)},
		s.auditOp(org, AuditRecord{
			Action: ActionSCIMTokenRevoked, Actor: actor,
			Target: AuditTarget{Type: "scim_token", ID: id},
		}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return ErrNotFound
	}
	return err
}

// AuthenticateSCIM returns the token record of a raw SCIM bearer token.
// A token of the other region's organization is a *regions.MisdirectedError
// that also matches ErrInvalidToken (regions.go).
func (s *Service) AuthenticateSCIM(ctx context.Context, raw string) (SCIMToken, error) {
	tok, err := s.authenticateSCIM(ctx, raw)
	if err := s.scimRegion(ctx, raw, tok, err); err != nil {
		return SCIMToken{}, err
	}
	return tok, nil
}

func (s *Service) authenticateSCIM(ctx context.Context, raw string) (SCIMToken, error) {
	if len(raw) < len(SCIMTokenPrefix)+16 || len(raw) > 256 {
		return SCIMToken{}, ErrInvalidToken
	}
	hash := identity.HashToken(raw)
	it, err := s.st.Get(ctx, scimTokenHashKey(hash))
	if errors.Is(err, store.ErrNotFound) {
		return SCIMToken{}, ErrInvalidToken
	}
	if err != nil {
		return SCIMToken{}, err
	}
	var st storedToken
	if err := json.Unmarshal(it.Data, &st); err != nil {
		return SCIMToken{}, err
	}
	if subtle.ConstantTimeCompare([]byte(st.Hash), []byte(hash)) != 1 {
		return SCIMToken{}, ErrInvalidToken
	}
	return st.SCIMToken, nil
}
