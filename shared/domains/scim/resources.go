package scim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/orgaccess"
)

// Resources are handled as JSON-shaped maps with canonical attribute names
// (the schema's spelling): input is normalized into that shape, filters and
// PATCH operations work on it, and it converts to and from the domain's
// members and groups.

// normalize checks v against attribute a (one element of a multi-valued
// attribute when element is true) and returns it with canonical names.
// Unknown sub-attributes are dropped; nil means unassigned.
func normalize(a *Attribute, path string, v any, element bool) (any, error) {
	if v == nil {
		return nil, nil
	}
	if a.MultiValued && !element {
		list, ok := v.([]any)
		if !ok {
			list = []any{v}
		}
		if limit := maxValues(a); len(list) > limit {
			return nil, badRequest(InvalidValue, "%s can hold at most %d values", path, limit)
		}
		out := make([]any, 0, len(list))
		for i, x := range list {
			n, err := normalize(a, fmt.Sprintf("%s[%d]", path, i), x, true)
			if err != nil {
				return nil, err
			}
			if n != nil {
				out = append(out, n)
			}
		}
		return out, nil
	}
	switch a.Type {
	case typeComplex:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badRequest(InvalidValue, "%s must be an object", path)
		}
		out := map[string]any{}
		for _, k := range sortedKeys(m) {
			s := a.sub(k)
			if s == nil {
				continue
			}
			n, err := normalize(s, path+"."+s.Name, m[k], false)
			if err != nil {
				return nil, err
			}
			if n != nil {
				out[s.Name] = n
			}
		}
		return out, nil
	case typeBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			// Some identity providers (Entra ID) send "True"/"False".
			if strings.EqualFold(x, "true") {
				return true, nil
			}
			if strings.EqualFold(x, "false") {
				return false, nil
			}
		}
		return nil, badRequest(InvalidValue, "%s must be a boolean", path)
	case typeDateTime:
		s, ok := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); !ok || err != nil {
			return nil, badRequest(InvalidValue, "%s must be an RFC 3339 date-time", path)
		}
		return s, nil
	default:
		s, ok := v.(string)
		if !ok {
			return nil, badRequest(InvalidValue, "%s must be a string", path)
		}
		if len(s) > 2048 {
			return nil, badRequest(InvalidValue, "%s is longer than 2048 characters", path)
		}
		return s, nil
	}
}

// maxValues bounds multi-valued attributes, so a resource always fits in
// one store item.
func maxValues(a *Attribute) int {
	if a.Name == "members" {
		return orgaccess.MaxGroupMembers
	}
	return 100
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normalizeResource checks a POST or PUT body: its schemas must list the
// resource type's core schema; read-only and unknown attributes are
// ignored (RFC 7644 §3.3, §3.5.1).
func normalizeResource(rt *ResourceType, body map[string]any) (map[string]any, error) {
	if err := checkSchemas(body, rt.Schema.ID); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range sortedKeys(body) {
		if strings.EqualFold(k, "schemas") {
			continue
		}
		a := rt.attr(k)
		if a == nil || a.Mutability == readOnly {
			continue
		}
		n, err := normalize(a, a.Name, body[k], false)
		if err != nil {
			return nil, err
		}
		if n != nil {
			out[a.Name] = n
		}
	}
	return out, nil
}

func checkSchemas(body map[string]any, want string) error {
	for k, v := range body {
		if !strings.EqualFold(k, "schemas") {
			continue
		}
		list, _ := v.([]any)
		for _, s := range list {
			if str, ok := s.(string); ok && strings.EqualFold(str, want) {
				return nil
			}
		}
	}
	return badRequest(InvalidSyntax, "The request body's schemas must list %s", want)
}

// decodeBody reads a JSON object body.
func decodeBody(r *http.Request) (map[string]any, error) {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errorf(http.StatusRequestEntityTooLarge, "", "The request body is too large")
		}
		return nil, badRequest(InvalidSyntax, "The request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, badRequest(InvalidSyntax, "The request body holds data after the JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest(InvalidSyntax, "The request body must be a JSON object")
	}
	return m, nil
}

// --- projection (attributes / excludedAttributes, RFC 7644 §3.4.2.5) ---

type projection struct {
	include []attrRef
	exclude []attrRef
}

func parseProjection(rt *ResourceType, r *http.Request) (*projection, error) {
	p := &projection{}
	for _, param := range []string{"attributes", "excludedAttributes"} {
		raw := r.URL.Query().Get(param)
		if raw == "" {
			continue
		}
		if len(raw) > MaxFilterLength {
			return nil, badRequest(InvalidValue, "%s is too long", param)
		}
		for _, part := range strings.Split(raw, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			ref, err := resolveAttrPath(rt, part)
			if err != nil {
				return nil, badRequest(InvalidPath, "%s: %v", param, err)
			}
			if param == "attributes" {
				p.include = append(p.include, ref)
			} else {
				p.exclude = append(p.exclude, ref)
			}
		}
	}
	if len(p.include) > 0 && len(p.exclude) > 0 {
		return nil, badRequest(InvalidSyntax, "Use attributes or excludedAttributes, not both")
	}
	return p, nil
}

// wants reports whether the projection returns attribute name at all.
func (p *projection) wants(name string) bool {
	if len(p.include) > 0 {
		for _, r := range p.include {
			if r.attr.Name == name {
				return true
			}
		}
		return false
	}
	for _, r := range p.exclude {
		if r.attr.Name == name && r.sub == nil {
			return false
		}
	}
	return true
}

func (p *projection) apply(res map[string]any) map[string]any {
	if len(p.include) == 0 && len(p.exclude) == 0 {
		return res
	}
	if len(p.exclude) > 0 {
		out := map[string]any{}
		for k, v := range res {
			out[k] = v
		}
		for _, r := range p.exclude {
			if r.attr.Returned == "always" {
				continue
			}
			if r.sub == nil {
				delete(out, r.attr.Name)
				continue
			}
			out[r.attr.Name] = withoutSub(out[r.attr.Name], r.sub.Name)
		}
		return out
	}
	out := map[string]any{"schemas": res["schemas"], "id": res["id"]}
	for _, r := range p.include {
		v, ok := res[r.attr.Name]
		if !ok {
			continue
		}
		if r.sub == nil {
			out[r.attr.Name] = v
			continue
		}
		out[r.attr.Name] = withSub(out[r.attr.Name], v, r.sub.Name)
	}
	return out
}

// withSub adds sub-attribute sub of src to dst (both a map, or lists of
// maps aligned by index).
func withSub(dst, src any, sub string) any {
	switch s := src.(type) {
	case map[string]any:
		d, _ := dst.(map[string]any)
		if d == nil {
			d = map[string]any{}
		}
		if v, ok := s[sub]; ok {
			d[sub] = v
		}
		return d
	case []any:
		d, _ := dst.([]any)
		if d == nil {
			d = make([]any, len(s))
		}
		for i, e := range s {
			d[i] = withSub(d[i], e, sub)
		}
		return d
	}
	return dst
}

func withoutSub(v any, sub string) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k != sub {
				out[k] = e
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutSub(e, sub)
		}
		return out
	}
	return v
}

// --- Users ---

// ETag is a resource version as an entity tag.
func ETag(version int64) string { return `W/"` + strconv.FormatInt(version, 10) + `"` }

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// profileAttrs are the User attributes kept in Member.Profile.
var profileAttrs = []string{"name", "displayName", "nickName", "profileUrl", "title", "userType",
	"preferredLanguage", "locale", "timezone", "emails"}

// userResource renders a member as a SCIM User.
func userResource(m orgaccess.Member, groups []orgaccess.Group, base string) map[string]any {
	res := map[string]any{}
	for _, k := range profileAttrs {
		if v, ok := m.Profile[k]; ok {
			res[k] = v
		}
	}
	if _, ok := res["displayName"]; !ok && m.Name != "" {
		res["displayName"] = m.Name
	}
	if _, ok := res["emails"]; !ok && m.Email != "" {
		res["emails"] = []any{map[string]any{"value": m.Email, "type": "work", "primary": true}}
	}
	res["schemas"] = []any{URNUser}
	res["id"] = m.ID
	res["userName"] = m.UserName
	if m.ExternalID != "" {
		res["externalId"] = m.ExternalID
	}
	res["active"] = m.Active
	var gs []any
	for _, g := range groups {
		for _, id := range g.Members {
			if id == m.ID {
				gs = append(gs, map[string]any{"value": g.ID, "display": g.DisplayName, "$ref": base + "/Groups/" + g.ID, "type": "direct"})
				break
			}
		}
	}
	if len(gs) > 0 {
		res["groups"] = gs
	}
	res["meta"] = map[string]any{
		"resourceType": "User", "created": stamp(m.CreatedAt), "lastModified": stamp(m.UpdatedAt),
		"location": base + "/Users/" + m.ID, "version": ETag(m.Version),
	}
	return res
}

// applyUser sets a member's SCIM-managed fields from a normalized User
// resource (a POST or PUT body, or a resource after PATCH operations).
func applyUser(res map[string]any, m *orgaccess.Member) error {
	userName, _ := res["userName"].(string)
	userName = strings.TrimSpace(userName)
	if userName == "" {
		return badRequest(InvalidValue, "userName is required")
	}
	if len(userName) > 256 {
		return badRequest(InvalidValue, "userName is longer than 256 characters")
	}
	active := true
	if a, ok := res["active"].(bool); ok {
		active = a
	}
	profile := map[string]any{}
	for _, k := range profileAttrs {
		if v, ok := res[k]; ok {
			profile[k] = v
		}
	}
	email, err := primaryEmail(res)
	if err != nil {
		return err
	}
	if email == "" && orgaccess.ValidEmail(strings.ToLower(userName)) {
		email = strings.ToLower(userName)
	}
	ext, _ := res["externalId"].(string)
	m.UserName, m.Email, m.ExternalID, m.Active = userName, email, ext, active
	m.Name = displayName(res)
	m.Profile = profile
	m.SCIMManaged = true
	return nil
}

// primaryEmail validates emails and returns the primary one, else the
// first, lower-cased.
func primaryEmail(res map[string]any) (string, error) {
	list, _ := res["emails"].([]any)
	if len(list) > 100 {
		return "", badRequest(InvalidValue, "emails can hold at most 100 values")
	}
	first, primary := "", ""
	for i, e := range list {
		m, _ := e.(map[string]any)
		v, _ := m["value"].(string)
		v = strings.ToLower(strings.TrimSpace(v))
		if !orgaccess.ValidEmail(v) {
			return "", badRequest(InvalidValue, "emails[%d].value is not a valid email address", i)
		}
		if first == "" {
			first = v
		}
		if p, _ := m["primary"].(bool); p {
			if primary != "" {
				return "", badRequest(InvalidValue, "Only one email can be primary")
			}
			primary = v
		}
	}
	if primary != "" {
		return primary, nil
	}
	return first, nil
}

func displayName(res map[string]any) string {
	if s, _ := res["displayName"].(string); strings.TrimSpace(s) != "" {
		return strings.TrimSpace(s)
	}
	name, _ := res["name"].(map[string]any)
	if s, _ := name["formatted"].(string); strings.TrimSpace(s) != "" {
		return strings.TrimSpace(s)
	}
	given, _ := name["givenName"].(string)
	family, _ := name["familyName"].(string)
	return strings.TrimSpace(given + " " + family)
}

// --- Groups ---

// groupResource renders a group; names maps member ids to display names
// (nil leaves display out). Ids without a member are left out: the member
// was removed and the group is being cleaned up.
func groupResource(g orgaccess.Group, names map[string]string, base string) map[string]any {
	res := map[string]any{"schemas": []any{URNGroup}, "id": g.ID, "displayName": g.DisplayName}
	if g.ExternalID != "" {
		res["externalId"] = g.ExternalID
	}
	members := []any{}
	for _, id := range g.Members {
		m := map[string]any{"value": id, "$ref": base + "/Users/" + id, "type": "User"}
		if names != nil {
			name, ok := names[id]
			if !ok {
				continue
			}
			if name != "" {
				m["display"] = name
			}
		}
		members = append(members, m)
	}
	if len(members) > 0 {
		res["members"] = members
	}
	if g.Mapping.From == "extension" {
		res["schemas"] = []any{URNGroup, URNWorkspaceGroup}
		res[URNWorkspaceGroup] = map[string]any{"workspaceId": g.Mapping.WorkspaceID, "role": string(g.Mapping.Role)}
	}
	res["meta"] = map[string]any{
		"resourceType": "Group", "created": stamp(g.CreatedAt), "lastModified": stamp(g.UpdatedAt),
		"location": base + "/Groups/" + g.ID, "version": ETag(g.Version),
	}
	return res
}

// groupFields are a Group resource's writable fields.
type groupFields struct {
	displayName string
	externalID  string
	members     []string
	ext         *orgaccess.Mapping
}

func parseGroup(res map[string]any) (groupFields, error) {
	var f groupFields
	f.displayName, _ = res["displayName"].(string)
	f.displayName = strings.TrimSpace(f.displayName)
	if f.displayName == "" {
		return f, badRequest(InvalidValue, "displayName is required")
	}
	if len(f.displayName) > 256 {
		return f, badRequest(InvalidValue, "displayName is longer than 256 characters")
	}
	f.externalID, _ = res["externalId"].(string)
	list, _ := res["members"].([]any)
	for i, e := range list {
		m, _ := e.(map[string]any)
		if t, ok := m["type"].(string); ok && !strings.EqualFold(t, "User") {
			return f, badRequest(InvalidValue, "members[%d]: only users can be members (nested groups are not supported)", i)
		}
		v, _ := m["value"].(string)
		if v == "" {
			return f, badRequest(InvalidValue, "members[%d].value is required", i)
		}
		f.members = append(f.members, v)
	}
	if ext, ok := res[URNWorkspaceGroup].(map[string]any); ok && len(ext) > 0 {
		ws, _ := ext["workspaceId"].(string)
		role, _ := ext["role"].(string)
		f.ext = &orgaccess.Mapping{WorkspaceID: strings.TrimSpace(ws), Role: identity.Role(strings.TrimSpace(role))}
	}
	return f, nil
}

// memberNames maps every member id of org to the name shown in groups.
func memberNames(ctx context.Context, svc *orgaccess.Service, org string) (map[string]string, error) {
	ms, err := svc.Members(ctx, org)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		name := m.Name
		if name == "" {
			name = m.UserName
		}
		out[m.ID] = name
	}
	return out, nil
}
