package orgaccess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// GroupNamePrefix starts the display names of SCIM groups that map to a
// workspace role by naming convention: "agentplane:<workspace>:<Role>",
// where <workspace> is a workspace id or display name of the organization
// and <Role> is Viewer, User, Editor or Admin (for example
// "agentplane:Research:Editor"). Identity providers push groups by display
// name, so this needs no custom attribute on the IdP side.
const GroupNamePrefix = "agentplane:"

// MaxGroupMembers bounds a group so its record stays far below the store's
// item size limit.
const MaxGroupMembers = 5000

// ResolveMapping returns the workspace role a group gives: from ext (the
// group's workspace extension attribute: workspace id and role) when given,
// else from the display-name convention, else none.
func (s *Service) ResolveMapping(ctx context.Context, org, displayName string, ext *Mapping) (Mapping, error) {
	if ext != nil {
		if ext.WorkspaceID == "" || ext.Role == "" {
			return Mapping{}, invalid("mapping", "The workspace extension needs both workspaceId and role")
		}
		role, ok := parseRole(string(ext.Role))
		if !ok {
			return Mapping{}, invalid("mapping.role", "role must be Viewer, User, Editor or Admin, not %q", ext.Role)
		}
		id, err := uuid.Parse(ext.WorkspaceID)
		if err != nil || len(ext.WorkspaceID) != 36 {
			return Mapping{}, invalid("mapping.workspace_id", "workspaceId %q is not a workspace id", ext.WorkspaceID)
		}
		if _, err := s.workspaceOf(ctx, org, id.String()); errors.Is(err, ErrNotFound) {
			return Mapping{}, invalid("mapping.workspace_id", "Workspace %s does not exist in this organization", id)
		} else if err != nil {
			return Mapping{}, err
		}
		return Mapping{WorkspaceID: id.String(), Role: role, From: "extension"}, nil
	}
	if len(displayName) < len(GroupNamePrefix) || !strings.EqualFold(displayName[:len(GroupNamePrefix)], GroupNamePrefix) {
		return Mapping{}, nil
	}
	rest := displayName[len(GroupNamePrefix):]
	i := strings.LastIndex(rest, ":")
	if i <= 0 {
		return Mapping{}, invalid("display_name", "A group named %q must be agentplane:<workspace>:<role>", displayName)
	}
	ref := strings.TrimSpace(rest[:i])
	role, ok := parseRole(strings.TrimSpace(rest[i+1:]))
	if !ok {
		return Mapping{}, invalid("display_name", "Group %q: role must be Viewer, User, Editor or Admin", displayName)
	}
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		if _, err := s.workspaceOf(ctx, org, id.String()); err == nil {
			return Mapping{WorkspaceID: id.String(), Role: role, From: "display_name"}, nil
		} else if !errors.Is(err, ErrNotFound) {
			return Mapping{}, err
		}
	}
	wss, err := s.ids.Workspaces(ctx, org)
	if err != nil {
		return Mapping{}, err
	}
	var found []identity.Workspace
	for _, ws := range wss {
		if strings.EqualFold(strings.TrimSpace(ws.DisplayName), ref) {
			found = append(found, ws)
		}
	}
	switch len(found) {
	case 0:
		return Mapping{}, invalid("display_name", "Group %q: no workspace %q in this organization", displayName, ref)
	case 1:
		return Mapping{WorkspaceID: found[0].ID, Role: role, From: "display_name"}, nil
	}
	return Mapping{}, invalid("display_name", "Group %q: %d workspaces are named %q; use the workspace id", displayName, len(found), ref)
}

func parseRole(s string) (identity.Role, bool) {
	for _, r := range identity.Roles {
		if strings.EqualFold(string(r), s) {
			return r, true
		}
	}
	return "", false
}

// checkMembers verifies that every id not already in old is a member of
// the organization, and removes duplicates.
func (s *Service) checkMembers(ctx context.Context, org string, ids, old []string) ([]string, error) {
	if len(ids) > MaxGroupMembers {
		return nil, invalid("members", "A group can hold at most %d members", MaxGroupMembers)
	}
	out := make([]string, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if !contains(old, id) {
			if _, err := s.Member(ctx, org, id); errors.Is(err, ErrNotFound) {
				return nil, invalid("members", "Member %q is not a user of this organization", id)
			} else if err != nil {
				return nil, err
			}
		}
		out = append(out, id)
	}
	return out, nil
}

func groupAudit(action string, actor Actor, g Group, details map[string]any) AuditRecord {
	return AuditRecord{Action: action, Actor: actor, Target: AuditTarget{Type: "group", ID: g.ID}, Details: details}
}

// CreateGroup stores a new group. Its Mapping must come from ResolveMapping.
func (s *Service) CreateGroup(ctx context.Context, org string, g Group, actor Actor) (Group, error) {
	g.ID, g.OrganizationID = newID(), org
	members, err := s.checkMembers(ctx, org, g.Members, nil)
	if err != nil {
		return Group{}, err
	}
	g.Members = members
	now := s.now()
	g.CreatedAt, g.UpdatedAt = now, now
	err = s.st.Transact(ctx, []store.TxOp{
		putNew(store.Item{Key: groupKey(org, g.ID), Data: mustJSON(g)}),
		s.auditOp(org, groupAudit(ActionGroupCreated, actor, g, map[string]any{
			"display_name": g.DisplayName, "mapping": g.Mapping, "members": g.Members,
		})),
	})
	if err != nil {
		return Group{}, err
	}
	g.Version = 1
	return g, nil
}

func decodeGroup(it store.Item) (Group, error) {
	var g Group
	if err := json.Unmarshal(it.Data, &g); err != nil {
		return g, fmt.Errorf("orgaccess: group %s: %w", it.SK, err)
	}
	if g.Members == nil {
		g.Members = []string{}
	}
	g.Version = it.Version
	return g, nil
}

// Group returns one group.
func (s *Service) Group(ctx context.Context, org, id string) (Group, error) {
	it, err := s.st.Get(ctx, groupKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return Group{}, ErrNotFound
	}
	if err != nil {
		return Group{}, err
	}
	return decodeGroup(it)
}

// Groups returns every group of org.
func (s *Service) Groups(ctx context.Context, org string) ([]Group, error) {
	items, err := s.queryAll(ctx, orgPK(org), "grp#")
	if err != nil {
		return nil, err
	}
	out := make([]Group, 0, len(items))
	for _, it := range items {
		g, err := decodeGroup(it)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// UpdateGroup applies fn with a versioned write (see UpdateMember for
// ifVersion). fn must set Mapping through ResolveMapping when it changes
// the display name or the extension.
func (s *Service) UpdateGroup(ctx context.Context, org, id string, ifVersion int64, actor Actor, fn func(*Group) error) (Group, error) {
	for attempt := 0; attempt < 20; attempt++ {
		old, err := s.Group(ctx, org, id)
		if err != nil {
			return Group{}, err
		}
		if ifVersion > 0 && old.Version != ifVersion {
			return old, ErrPrecondition
		}
		g := old
		g.Members = append([]string(nil), old.Members...)
		if err := fn(&g); err != nil {
			return old, err
		}
		g.ID, g.OrganizationID, g.CreatedAt, g.UpdatedAt = old.ID, old.OrganizationID, old.CreatedAt, old.UpdatedAt
		if g.Members, err = s.checkMembers(ctx, org, g.Members, old.Members); err != nil {
			return old, err
		}
		if bytes.Equal(mustJSON(old), mustJSON(g)) {
			return old, nil
		}
		g.UpdatedAt = s.now()
		details := map[string]any{}
		var added, removed []string
		for _, m := range g.Members {
			if !contains(old.Members, m) {
				added = append(added, m)
			}
		}
		for _, m := range old.Members {
			if !contains(g.Members, m) {
				removed = append(removed, m)
			}
		}
		if len(added) > 0 {
			details["members_added"] = added
		}
		if len(removed) > 0 {
			details["members_removed"] = removed
		}
		if old.DisplayName != g.DisplayName {
			details["display_name"] = map[string]string{"from": old.DisplayName, "to": g.DisplayName}
		}
		if old.Mapping != g.Mapping {
			details["mapping"] = map[string]any{"from": old.Mapping, "to": g.Mapping}
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: groupKey(org, id), Data: mustJSON(g)}, Cond: store.HasVersion(old.Version)},
			s.auditOp(org, groupAudit(ActionGroupUpdated, actor, g, details)),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			if ifVersion > 0 {
				return old, ErrPrecondition
			}
			continue
		}
		if err != nil {
			return old, err
		}
		g.Version = old.Version + 1
		return g, nil
	}
	return Group{}, errContention
}

// DeleteGroup removes a group: its members lose the roles it gave.
func (s *Service) DeleteGroup(ctx context.Context, org, id string, ifVersion int64, actor Actor) error {
	for attempt := 0; attempt < 20; attempt++ {
		g, err := s.Group(ctx, org, id)
		if err != nil {
			return err
		}
		if ifVersion > 0 && g.Version != ifVersion {
			return ErrPrecondition
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpDelete, Key: groupKey(org, id), Cond: store.HasVersion(g.Version)},
			s.auditOp(org, groupAudit(ActionGroupRemoved, actor, g, map[string]any{
				"display_name": g.DisplayName, "mapping": g.Mapping, "members": g.Members,
			})),
		})
		if errors.Is(err, store.ErrConditionFailed) {
			if ifVersion > 0 {
				return ErrPrecondition
			}
			continue
		}
		return err
	}
	return errContention
}

func (s *Service) removeFromGroups(ctx context.Context, org, memberID string, actor Actor) error {
	groups, err := s.Groups(ctx, org)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range groups {
		if !contains(g.Members, memberID) {
			continue
		}
		_, err := s.UpdateGroup(ctx, org, g.ID, 0, actor, func(g *Group) error {
			out := g.Members[:0]
			for _, m := range g.Members {
				if m != memberID {
					out = append(out, m)
				}
			}
			g.Members = out
			return nil
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
