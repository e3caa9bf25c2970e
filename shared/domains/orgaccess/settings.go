package orgaccess

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Effective are the access settings the sign-in decision actually uses,
// after the self-hosted rules.
type Effective struct {
	JIT     bool `json:"effective_jit_provisioning_enabled"`
	Invites bool `json:"effective_invites_enabled"`
}

// EffectiveSettings applies the installation's rules to an organization's
// own settings:
//   - SELF_HOSTED_JIT_PROVISIONING_ENABLED=false turns JIT off for every
//     organization (applied in every mode: an operator who sets it wants
//     JIT off, and off is the safe reading);
//   - self-hosted (AGENTPLANE_SELF_HOSTED=true): the settings apply only to
//     the default organization (default_sso_provision=true); every other
//     organization uses invites: JIT off, invites on.
func (s *Service) EffectiveSettings(o identity.Organization) Effective {
	e := Effective{JIT: o.JITProvisioningEnabled, Invites: o.InvitesEnabled}
	if s.opts.SelfHosted && !o.DefaultSSOProvision {
		e = Effective{JIT: false, Invites: true}
	}
	if !s.opts.SelfHostedJITEnabled {
		e.JIT = false
	}
	return e
}

var errUnchanged = errors.New("orgaccess: unchanged")

// UpdateSettings changes jit_provisioning_enabled and/or invites_enabled
// (nil leaves a field alone) with identity's versioned write, so concurrent
// updates of different fields both survive, and audits what changed.
func (s *Service) UpdateSettings(ctx context.Context, orgID string, jit, invites *bool, actor Actor) (identity.Organization, error) {
	var changes map[string]any
	o, err := s.ids.UpdateOrganization(ctx, orgID, func(o *identity.Organization) error {
		changes = map[string]any{}
		if jit != nil && *jit != o.JITProvisioningEnabled {
			changes["jit_provisioning_enabled"] = map[string]bool{"from": o.JITProvisioningEnabled, "to": *jit}
			o.JITProvisioningEnabled = *jit
		}
		if invites != nil && *invites != o.InvitesEnabled {
			changes["invites_enabled"] = map[string]bool{"from": o.InvitesEnabled, "to": *invites}
			o.InvitesEnabled = *invites
		}
		if len(changes) == 0 {
			return errUnchanged
		}
		return nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return s.Organization(ctx, orgID)
	case errors.Is(err, identity.ErrNotFound):
		return o, ErrNotFound
	case err != nil:
		return o, err
	}
	// identity owns the organization item, so this record cannot share its
	// transaction; it is written right after the change.
	err = s.audit(ctx, orgID, AuditRecord{
		Action: ActionSettingsUpdated, Actor: actor,
		Target:  AuditTarget{Type: "organization", ID: orgID},
		Details: map[string]any{"changes": changes},
	})
	return o, err
}

// SSODefaults are the default SSO settings used when JIT provisioning
// applies: one workspace role, the same in each of the default workspaces.
type SSODefaults struct {
	DefaultWorkspaceRole identity.Role `json:"default_workspace_role"`
	DefaultWorkspaceIDs  []string      `json:"default_workspace_ids"`
	// Configured is false while an administrator has not set them; the
	// defaults are then Viewer in the organization's first workspace.
	Configured bool       `json:"configured"`
	UpdatedAt  *time.Time `json:"updated_at"`
}

func (s *Service) ssoDefaults(ctx context.Context, org string) (SSODefaults, int64, error) {
	it, err := s.st.Get(ctx, ssoDefaultsKey(org))
	if err == nil {
		var d SSODefaults
		if err := json.Unmarshal(it.Data, &d); err != nil {
			return d, 0, err
		}
		d.Configured = true
		return d, it.Version, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return SSODefaults{}, 0, err
	}
	wss, err := s.ids.Workspaces(ctx, org)
	if err != nil {
		return SSODefaults{}, 0, err
	}
	sort.Slice(wss, func(i, j int) bool {
		if !wss[i].CreatedAt.Equal(wss[j].CreatedAt) {
			return wss[i].CreatedAt.Before(wss[j].CreatedAt)
		}
		return wss[i].ID < wss[j].ID
	})
	d := SSODefaults{DefaultWorkspaceRole: identity.RoleViewer, DefaultWorkspaceIDs: []string{}}
	if len(wss) > 0 {
		d.DefaultWorkspaceIDs = []string{wss[0].ID}
	}
	return d, 0, nil
}

// SSODefaults returns the organization's default SSO settings.
func (s *Service) SSODefaults(ctx context.Context, org string) (SSODefaults, error) {
	d, _, err := s.ssoDefaults(ctx, org)
	return d, err
}

// UpdateSSODefaults sets the default role and/or workspaces (nil leaves one
// alone). The result must name a valid role and one or more distinct
// workspaces of the organization; otherwise nothing changes.
func (s *Service) UpdateSSODefaults(ctx context.Context, org string, role *identity.Role, workspaceIDs []string, actor Actor) (SSODefaults, error) {
	for attempt := 0; attempt < 20; attempt++ {
		cur, version, err := s.ssoDefaults(ctx, org)
		if err != nil {
			return cur, err
		}
		next := SSODefaults{DefaultWorkspaceRole: cur.DefaultWorkspaceRole, DefaultWorkspaceIDs: cur.DefaultWorkspaceIDs, Configured: true}
		if role != nil {
			next.DefaultWorkspaceRole = *role
		}
		if workspaceIDs != nil {
			next.DefaultWorkspaceIDs = workspaceIDs
		}
		if !next.DefaultWorkspaceRole.Valid() {
			return cur, invalid("default_workspace_role", "Input should be 'Viewer', 'User', 'Editor' or 'Admin'")
		}
		if len(next.DefaultWorkspaceIDs) == 0 {
			return cur, invalid("default_workspace_ids", "At least one default workspace is required")
		}
		seen := map[string]bool{}
		for i, id := range next.DefaultWorkspaceIDs {
			if seen[id] {
				return cur, invalid("default_workspace_ids."+strconv.Itoa(i), "Workspace %s is listed twice", id)
			}
			seen[id] = true
			if _, err := s.workspaceOf(ctx, org, id); errors.Is(err, ErrNotFound) {
				return cur, invalid("default_workspace_ids."+strconv.Itoa(i), "Workspace %s does not exist in this organization", id)
			} else if err != nil {
				return cur, err
			}
		}
		now := s.now()
		next.UpdatedAt = &now
		cond := store.NotExists()
		if version > 0 {
			cond = store.HasVersion(version)
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: ssoDefaultsKey(org), Data: mustJSON(next)}, Cond: cond},
			s.auditOp(org, AuditRecord{
				Action: ActionSSODefaults, Actor: actor,
				Target: AuditTarget{Type: "sso_defaults", ID: org},
				Details: map[string]any{
					"from": map[string]any{"default_workspace_role": cur.DefaultWorkspaceRole, "default_workspace_ids": cur.DefaultWorkspaceIDs},
					"to":   map[string]any{"default_workspace_role": next.DefaultWorkspaceRole, "default_workspace_ids": next.DefaultWorkspaceIDs},
				},
			}),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue // a concurrent update won; merge onto it
		}
		return next, err
	}
	return SSODefaults{}, errContention
}
