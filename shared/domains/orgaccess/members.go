package orgaccess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Access is one workspace role a member effectively holds.
type Access struct {
	WorkspaceID string        `json:"workspace_id"`
	Role        identity.Role `json:"role"`
	Source      Source        `json:"source"`
	// GroupID is the SCIM group the role comes from (Source "scim").
	GroupID string `json:"group_id,omitempty"`
}

// EffectiveAccess computes a member's workspace roles: their own grants,
// overridden workspace by workspace by the roles of the SCIM groups they
// belong to (the seed's rule: SCIM group membership overrides manually
// assigned and JIT roles). When several of the member's groups map to the
// same workspace, the strongest role wins. An inactive member has none.
func EffectiveAccess(m Member, groups []Group) []Access {
	if !m.Active {
		return []Access{}
	}
	byWS := map[string]Access{}
	for _, g := range m.Grants {
		byWS[g.WorkspaceID] = Access{WorkspaceID: g.WorkspaceID, Role: g.Role, Source: g.Source}
	}
	fromSCIM := map[string]Access{}
	for _, g := range groups {
		if g.Mapping.WorkspaceID == "" || !contains(g.Members, m.ID) {
			continue
		}
		cur, ok := fromSCIM[g.Mapping.WorkspaceID]
		if !ok || !cur.Role.AtLeast(g.Mapping.Role) || (cur.Role == g.Mapping.Role && g.ID < cur.GroupID) {
			fromSCIM[g.Mapping.WorkspaceID] = Access{WorkspaceID: g.Mapping.WorkspaceID, Role: g.Mapping.Role, Source: SourceSCIM, GroupID: g.ID}
		}
	}
	for ws, a := range fromSCIM {
		byWS[ws] = a
	}
	out := make([]Access, 0, len(byWS))
	for _, a := range byWS {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WorkspaceID < out[j].WorkspaceID })
	return out
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// uniqueMarkers lists the marker keys a member holds, with the field each
// guards.
func uniqueMarkers(m Member) (keys []store.Key, fields []string) {
	if m.UserName != "" {
		keys, fields = append(keys, userNameKey(m.OrganizationID, m.UserName)), append(fields, "user_name")
	}
	if m.Email != "" {
		keys, fields = append(keys, emailKey(m.OrganizationID, m.Email)), append(fields, "email")
	}
	if m.IDPSubject != "" {
		keys, fields = append(keys, subjectKey(m.OrganizationID, m.IDPSubject)), append(fields, "idp_subject")
	}
	return keys, fields
}

func conflictFor(field string, m Member) error {
	switch field {
	case "user_name":
		return &ConflictError{Field: field, Detail: fmt.Sprintf("A user with userName %q already exists in this organization", m.UserName)}
	case "email":
		return &ConflictError{Field: field, Detail: fmt.Sprintf("A member with email %s already exists in this organization", m.Email)}
	case "idp_subject":
		return &ConflictError{Field: field, Detail: "Another member already signed in with this identity provider subject"}
	}
	return &ConflictError{Detail: "Conflicting change, retry"}
}

// validate checks roles and that every granted workspace belongs to the
// member's organization.
func (s *Service) validate(ctx context.Context, m *Member) error {
	if !m.OrgRole.Valid() {
		return invalid("org_role", "Input should be 'Viewer', 'User', 'Editor' or 'Admin'")
	}
	if m.Grants == nil {
		m.Grants = []Grant{}
	}
	seen := map[string]bool{}
	for i, g := range m.Grants {
		field := fmt.Sprintf("workspaces.%d", i)
		if !g.Role.Valid() {
			return invalid(field+".role", "Input should be 'Viewer', 'User', 'Editor' or 'Admin'")
		}
		if seen[g.WorkspaceID] {
			return invalid(field+".workspace_id", "Workspace %s is listed twice", g.WorkspaceID)
		}
		seen[g.WorkspaceID] = true
		if _, err := s.workspaceOf(ctx, m.OrganizationID, g.WorkspaceID); errors.Is(err, ErrNotFound) {
			return invalid(field+".workspace_id", "Workspace %s does not exist in this organization", g.WorkspaceID)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// newMemberOps are the writes creating m (record and unique markers) and
// the field each operation guards, aligned with the ops.
func newMemberOps(m Member) ([]store.TxOp, []string) {
	ops := []store.TxOp{putNew(store.Item{Key: memberKey(m.OrganizationID, m.ID), Data: mustJSON(m)})}
	fields := []string{""}
	keys, fs := uniqueMarkers(m)
	for i, k := range keys {
		ops = append(ops, putNew(store.Item{Key: k, Data: []byte(m.ID)}))
		fields = append(fields, fs[i])
	}
	return ops, fields
}

func (s *Service) prepareNew(ctx context.Context, org string, m *Member) error {
	m.OrganizationID = org
	if m.ID == "" {
		m.ID = newID()
	}
	m.Email = strings.ToLower(m.Email)
	now := s.now()
	m.CreatedAt, m.UpdatedAt = now, now
	return s.validate(ctx, m)
}

// CreateMember adds a member; a clash of user name, email or subject with
// another member is a *ConflictError.
func (s *Service) CreateMember(ctx context.Context, org string, m Member, actor Actor) (Member, error) {
	if err := s.prepareNew(ctx, org, &m); err != nil {
		return Member{}, err
	}
	ops, fields := newMemberOps(m)
	ops = append(ops, s.auditOp(org, AuditRecord{
		Action: ActionMemberCreated, Actor: actor,
		Target:  AuditTarget{Type: "member", ID: m.ID, Email: m.Email},
		Details: map[string]any{"source": m.Source, "org_role": m.OrgRole, "grants": m.Grants, "active": m.Active},
	}))
	fields = append(fields, "")
	err := s.st.Transact(ctx, ops)
	var tce *store.TxConditionError
	if errors.As(err, &tce) {
		return Member{}, conflictFor(fields[tce.Index], m)
	}
	if err != nil {
		return Member{}, err
	}
	m.Version = 1
	return m, nil
}

func decodeMember(it store.Item) (Member, error) {
	var m Member
	if err := json.Unmarshal(it.Data, &m); err != nil {
		return m, fmt.Errorf("orgaccess: member %s: %w", it.SK, err)
	}
	m.Version = it.Version
	if m.Grants == nil {
		m.Grants = []Grant{}
	}
	return m, nil
}

// Member returns one member of org.
func (s *Service) Member(ctx context.Context, org, id string) (Member, error) {
	it, err := s.st.Get(ctx, memberKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return Member{}, ErrNotFound
	}
	if err != nil {
		return Member{}, err
	}
	return decodeMember(it)
}

func (s *Service) memberByMarker(ctx context.Context, org string, k store.Key) (Member, error) {
	it, err := s.st.Get(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return Member{}, ErrNotFound
	}
	if err != nil {
		return Member{}, err
	}
	return s.Member(ctx, org, string(it.Data))
}

// MemberByUserName finds a member by user name (case-insensitive).
func (s *Service) MemberByUserName(ctx context.Context, org, userName string) (Member, error) {
	return s.memberByMarker(ctx, org, userNameKey(org, userName))
}

// MemberByEmail finds a member by email (case-insensitive).
func (s *Service) MemberByEmail(ctx context.Context, org, email string) (Member, error) {
	return s.memberByMarker(ctx, org, emailKey(org, strings.ToLower(email)))
}

func (s *Service) memberBySubject(ctx context.Context, org, sub string) (Member, error) {
	return s.memberByMarker(ctx, org, subjectKey(org, sub))
}

// Members returns every member of org.
func (s *Service) Members(ctx context.Context, org string) ([]Member, error) {
	items, err := s.queryAll(ctx, orgPK(org), "mem#")
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(items))
	for _, it := range items {
		m, err := decodeMember(it)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// MembersPage returns one page of members.
func (s *Service) MembersPage(ctx context.Context, org string, limit int, cursor string) ([]Member, string, error) {
	page, err := s.st.Query(ctx, store.Query{PK: orgPK(org), SK: store.SKCond{Op: store.SKBeginsWith, A: "mem#"}, Limit: limit, Cursor: cursor})
	if errors.Is(err, store.ErrInvalid) {
		return nil, "", ErrBadCursor
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]Member, 0, len(page.Items))
	for _, it := range page.Items {
		m, err := decodeMember(it)
		if err != nil {
			return nil, "", err
		}
		out = append(out, m)
	}
	return out, page.Next, nil
}

// Describe builds the audit record of a member change; nil means the
// default member.updated record listing the changed fields.
type Describe func(old, new Member) AuditRecord

func describeUpdate(actor Actor) Describe {
	return func(old, m Member) AuditRecord {
		return AuditRecord{
			Action: ActionMemberUpdated, Actor: actor,
			Target:  AuditTarget{Type: "member", ID: m.ID, Email: m.Email},
			Details: map[string]any{"changes": memberChanges(old, m)},
		}
	}
}

// memberChanges lists the access-relevant fields that differ.
func memberChanges(a, b Member) map[string]any {
	out := map[string]any{}
	pair := func(name string, x, y any) {
		if !bytes.Equal(mustJSON(x), mustJSON(y)) {
			out[name] = map[string]any{"from": x, "to": y}
		}
	}
	pair("user_name", a.UserName, b.UserName)
	pair("email", a.Email, b.Email)
	pair("name", a.Name, b.Name)
	pair("external_id", a.ExternalID, b.ExternalID)
	pair("idp_subject", a.IDPSubject, b.IDPSubject)
	pair("org_role", a.OrgRole, b.OrgRole)
	pair("grants", a.Grants, b.Grants)
	pair("active", a.Active, b.Active)
	pair("scim_managed", a.SCIMManaged, b.SCIMManaged)
	if !bytes.Equal(mustJSON(a.Profile), mustJSON(b.Profile)) {
		out["profile"] = "changed"
	}
	return out
}

// UpdateMember applies fn to a member with a versioned conditional write,
// moving its unique markers when user name, email or subject change. With
// ifVersion > 0 the member must be at that version (ErrPrecondition
// otherwise); with 0 concurrent writes are retried, so none is lost. fn may
// run more than once. A change that leaves the record as it was writes
// nothing.
func (s *Service) UpdateMember(ctx context.Context, org, id string, ifVersion int64, actor Actor, describe Describe, fn func(*Member) error) (Member, error) {
	if describe == nil {
		describe = describeUpdate(actor)
	}
	for attempt := 0; attempt < 20; attempt++ {
		old, err := s.Member(ctx, org, id)
		if err != nil {
			return Member{}, err
		}
		if ifVersion > 0 && old.Version != ifVersion {
			return old, ErrPrecondition
		}
		m := old
		m.Grants = append([]Grant(nil), old.Grants...)
		m.Profile = cloneMap(old.Profile)
		if err := fn(&m); err != nil {
			return old, err
		}
		m.ID, m.OrganizationID, m.CreatedAt = old.ID, old.OrganizationID, old.CreatedAt
		m.Email = strings.ToLower(m.Email)
		if err := s.validate(ctx, &m); err != nil {
			return old, err
		}
		m.UpdatedAt = old.UpdatedAt
		if bytes.Equal(mustJSON(old), mustJSON(m)) {
			return old, nil
		}
		m.UpdatedAt = s.now()
		ops := []store.TxOp{{Kind: store.OpPut, Item: store.Item{Key: memberKey(org, id), Data: mustJSON(m)}, Cond: store.HasVersion(old.Version)}}
		fields := []string{""}
		oldKeys, _ := uniqueMarkers(old)
		newKeys, newFields := uniqueMarkers(m)
		for _, k := range oldKeys {
			if !containsKey(newKeys, k) {
				ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: k})
				fields = append(fields, "")
			}
		}
		for i, k := range newKeys {
			if !containsKey(oldKeys, k) {
				ops = append(ops, putNew(store.Item{Key: k, Data: []byte(id)}))
				fields = append(fields, newFields[i])
			}
		}
		ops = append(ops, s.auditOp(org, describe(old, m)))
		err = s.st.Transact(ctx, ops)
		var tce *store.TxConditionError
		if errors.As(err, &tce) {
			if tce.Index == 0 {
				if ifVersion > 0 {
					return old, ErrPrecondition
				}
				continue
			}
			return old, conflictFor(fields[tce.Index], m)
		}
		if err != nil {
			return old, err
		}
		m.Version = old.Version + 1
		return m, nil
	}
	return Member{}, errContention
}

func containsKey(keys []store.Key, k store.Key) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	var out map[string]any
	_ = json.Unmarshal(mustJSON(m), &out)
	return out
}

// DeleteMember removes a member and so all of their access, then takes
// them out of every SCIM group.
func (s *Service) DeleteMember(ctx context.Context, org, id string, ifVersion int64, actor Actor) error {
	for attempt := 0; attempt < 20; attempt++ {
		m, err := s.Member(ctx, org, id)
		if err != nil {
			return err
		}
		if ifVersion > 0 && m.Version != ifVersion {
			return ErrPrecondition
		}
		ops := []store.TxOp{{Kind: store.OpDelete, Key: memberKey(org, id), Cond: store.HasVersion(m.Version)}}
		keys, _ := uniqueMarkers(m)
		for _, k := range keys {
			ops = append(ops, store.TxOp{Kind: store.OpDelete, Key: k})
		}
		ops = append(ops, s.auditOp(org, AuditRecord{
			Action: ActionMemberRemoved, Actor: actor,
			Target:  AuditTarget{Type: "member", ID: id, Email: m.Email},
			Details: map[string]any{"access_removed": s.accessOrGrants(ctx, m)},
		}))
		err = s.st.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			if ifVersion > 0 {
				return ErrPrecondition
			}
			continue
		}
		if err != nil {
			return err
		}
		// Group records may still list the id until this cleanup ends;
		// EffectiveAccess and the SCIM views ignore ids without a member,
		// so access is gone as soon as the transaction above commits.
		return s.removeFromGroups(ctx, org, id, actor)
	}
	return errContention
}

// AccessOf computes m's effective workspace roles with the organization's
// SCIM groups.
func (s *Service) AccessOf(ctx context.Context, m Member) ([]Access, error) {
	groups, err := s.Groups(ctx, m.OrganizationID)
	if err != nil {
		return nil, err
	}
	return EffectiveAccess(m, groups), nil
}

// accessOrGrants is AccessOf for audit details, where a failed read of
// the groups must not block the change: it falls back to the own grants.
func (s *Service) accessOrGrants(ctx context.Context, m Member) []Access {
	if a, err := s.AccessOf(ctx, m); err == nil {
		return a
	}
	return EffectiveAccess(m, nil)
}
