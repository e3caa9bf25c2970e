// Package scim is the SCIM 2.0 protocol layer (RFC 7643, RFC 7644) over
// shared/domains/orgaccess: Users are organization members, Groups are SCIM groups
// whose membership gives workspace roles. It holds the resource schemas and
// their JSON shapes, the filter grammar, paging, sorting, attribute
// projection, PATCH operations, ETags and the SCIM error bodies; the rules
// (uniqueness, role mapping and override, audit) stay in orgaccess.
//
// Requests authenticate with a per-organization SCIM bearer token created
// by an organization admin (POST /api/v1/orgs/current/scim-tokens); every
// request acts on the token's organization.
package scim

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/orgaccess"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Prefix is the SCIM base path.
const Prefix = "/scim/v2"

// Paging bounds (ServiceProviderConfig filter.maxResults).
const (
	MaxResults   = 200
	DefaultCount = 100
)

// Server serves SCIM (route group "scim").
type Server struct {
	svc *orgaccess.Service
}

// New returns the SCIM server over the organization-access service.
func New(svc *orgaccess.Service) *Server { return &Server{svc: svc} }

type scimHandler func(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error

// Routes is the "scim" route group. SCIM routes authenticate with a SCIM
// bearer token of the organization (api.Own), and answer errors in SCIM's
// own shape.
var Routes = api.Group[*Server]{
	Name:        "scim",
	Description: "SCIM 2.0 (RFC 7643/7644): Users, Groups and discovery, authenticated with per-organization SCIM tokens",
	Routes: []api.Route[*Server]{
		{Method: "GET", Path: Prefix + "/ServiceProviderConfig", Summary: "Service provider configuration", Auth: api.Own, Handle: withToken((*Server).serviceProviderConfig)},
		{Method: "GET", Path: Prefix + "/ResourceTypes", Summary: "Resource types", Auth: api.Own, Handle: withToken((*Server).resourceTypes)},
		{Method: "GET", Path: Prefix + "/ResourceTypes/{id}", Summary: "A resource type", Auth: api.Own, Handle: withToken((*Server).resourceType)},
		{Method: "GET", Path: Prefix + "/Schemas", Summary: "Schemas", Auth: api.Own, Handle: withToken((*Server).schemas)},
		{Method: "GET", Path: Prefix + "/Schemas/{id}", Summary: "A schema", Auth: api.Own, Handle: withToken((*Server).schema)},
		{Method: "GET", Path: Prefix + "/Users", Summary: "List users (filter, paging)", Auth: api.Own, Handle: withToken((*Server).listUsers)},
		{Method: "POST", Path: Prefix + "/Users", Summary: "Provision a user", Auth: api.Own, Status: http.StatusCreated, Handle: withToken((*Server).createUser)},
		{Method: "GET", Path: Prefix + "/Users/{id}", Summary: "Read a user", Auth: api.Own, Handle: withToken((*Server).getUser)},
		{Method: "PUT", Path: Prefix + "/Users/{id}", Summary: "Replace a user", Auth: api.Own, Handle: withToken((*Server).putUser)},
		{Method: "PATCH", Path: Prefix + "/Users/{id}", Summary: "Patch a user", Auth: api.Own, Handle: withToken((*Server).patchUser)},
		{Method: "DELETE", Path: Prefix + "/Users/{id}", Summary: "Deprovision a user", Auth: api.Own, Status: http.StatusNoContent, Handle: withToken((*Server).deleteUser)},
		{Method: "GET", Path: Prefix + "/Groups", Summary: "List groups", Auth: api.Own, Handle: withToken((*Server).listGroups)},
		{Method: "POST", Path: Prefix + "/Groups", Summary: "Create a group", Auth: api.Own, Status: http.StatusCreated, Handle: withToken((*Server).createGroup)},
		{Method: "GET", Path: Prefix + "/Groups/{id}", Summary: "Read a group", Auth: api.Own, Handle: withToken((*Server).getGroup)},
		{Method: "PUT", Path: Prefix + "/Groups/{id}", Summary: "Replace a group", Auth: api.Own, Handle: withToken((*Server).putGroup)},
		{Method: "PATCH", Path: Prefix + "/Groups/{id}", Summary: "Patch a group", Auth: api.Own, Handle: withToken((*Server).patchGroup)},
		{Method: "DELETE", Path: Prefix + "/Groups/{id}", Summary: "Delete a group", Auth: api.Own, Status: http.StatusNoContent, Handle: withToken((*Server).deleteGroup)},
	},
}

// withToken adapts a SCIM handler to a route: the token is checked first,
// and errors are written in SCIM's shape.
func withToken(f func(*Server, http.ResponseWriter, *http.Request, orgaccess.SCIMToken) error) func(*Server, http.ResponseWriter, *http.Request) error {
	return func(s *Server, w http.ResponseWriter, r *http.Request) error {
		s.auth(func(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error { return f(s, w, r, tok) }).ServeHTTP(w, r)
		return nil
	}
}

func unauthorized(detail string) *Error {
	return &Error{Status: http.StatusUnauthorized, Detail: detail,
		Header: http.Header{"WWW-Authenticate": {`Bearer realm="SCIM"`}}}
}

// auth checks the SCIM bearer token and the request's media type.
func (s *Server) auth(f scimHandler) http.Handler {
	return handlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		auth := r.Header.Get("Authorization")
		if len(auth) < 7 || !strings.EqualFold(auth[:7], "Bearer ") {
			return unauthorized("Missing bearer token: send Authorization: Bearer <SCIM token>")
		}
		tok, err := s.svc.AuthenticateSCIM(r.Context(), strings.TrimSpace(auth[7:]))
		var mis *regions.MisdirectedError
		if errors.As(err, &mis) {
			// The organization lives in the other region: say where.
			e := errorf(http.StatusMisdirectedRequest, "", "%s", mis.Detail())
			e.Header = mis.Header()
			return e
		}
		if errors.Is(err, orgaccess.ErrInvalidToken) {
			return unauthorized("Invalid SCIM token")
		}
		if err != nil {
			return err
		}
		if r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH" {
			if ct := r.Header.Get("Content-Type"); ct != "" {
				mt, _, err := mime.ParseMediaType(ct)
				if err != nil || (mt != ContentType && mt != "application/json") {
					return errorf(http.StatusUnsupportedMediaType, "", "Send the body as %s or application/json", ContentType)
				}
			}
		}
		return f(w, r, tok)
	})
}

func actor(tok orgaccess.SCIMToken) orgaccess.Actor {
	return orgaccess.Actor{Type: "scim_token", ID: tok.ID}
}

// baseURL is the absolute SCIM base of this request, for meta.location.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0])); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host + Prefix
}

// mapErr turns domain errors into SCIM errors.
func mapErr(err error, what, id string) error {
	var ce *orgaccess.ConflictError
	var ie *orgaccess.InvalidError
	switch {
	case errors.Is(err, orgaccess.ErrNotFound):
		return errorf(http.StatusNotFound, "", "%s %s not found", what, id)
	case errors.Is(err, orgaccess.ErrPrecondition):
		return errorf(http.StatusPreconditionFailed, "", "%s %s changed: its version does not match If-Match", what, id)
	case errors.As(err, &ce):
		if ce.Field != "" {
			return errorf(http.StatusConflict, Uniqueness, "%s", ce.Detail)
		}
		return errorf(http.StatusConflict, "", "%s", ce.Detail)
	case errors.As(err, &ie):
		return badRequest(InvalidValue, "%s", ie.Detail)
	case errors.Is(err, store.ErrTooLarge):
		return badRequest(InvalidValue, "The %s is too large to store", strings.ToLower(what))
	}
	return err
}

// ifMatch reads If-Match: 0 means no condition ("*" or absent).
func ifMatch(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return 0, nil
	}
	v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, errorf(http.StatusPreconditionFailed, "", "If-Match %q matches no version of this resource", r.Header.Get("If-Match"))
	}
	return n, nil
}

func writeResource(w http.ResponseWriter, status int, res map[string]any, p *projection) {
	if meta, ok := res["meta"].(map[string]any); ok {
		if v, ok := meta["version"].(string); ok {
			w.Header().Set("ETag", v)
		}
		if status == http.StatusCreated {
			if loc, ok := meta["location"].(string); ok {
				w.Header().Set("Location", loc)
			}
		}
	}
	writeJSON(w, status, p.apply(res))
}

// --- listing ---

type listQuery struct {
	filter     Expr
	startIndex int
	count      int
	sortBy     *attrRef
	descending bool
	proj       *projection
}

func parseListQuery(rt *ResourceType, r *http.Request) (listQuery, error) {
	q := listQuery{startIndex: 1, count: DefaultCount}
	v := r.URL.Query()
	if f := v.Get("filter"); f != "" {
		e, err := ParseFilter(rt, f)
		if err != nil {
			return q, err
		}
		q.filter = e
	}
	if s := v.Get("startIndex"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return q, badRequest(InvalidValue, "startIndex must be an integer")
		}
		if n > 1 {
			q.startIndex = n // values below 1 are read as 1 (RFC 7644 §3.4.2.4)
		}
	}
	if s := v.Get("count"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return q, badRequest(InvalidValue, "count must be an integer")
		}
		q.count = min(max(n, 0), MaxResults) // negative means 0
	}
	if s := v.Get("sortBy"); s != "" {
		ref, err := resolveAttrPath(rt, s)
		if err != nil {
			return q, badRequest(InvalidPath, "sortBy: %v", err)
		}
		if ref.sub == nil && ref.attr.Type == typeComplex {
			if vs := ref.attr.sub("value"); vs != nil && ref.attr.MultiValued {
				ref.sub = vs
			} else {
				return q, badRequest(InvalidPath, "sortBy: %s is complex; sort by one of its sub-attributes", ref.attr.Name)
			}
		}
		q.sortBy = &ref
	}
	switch strings.ToLower(v.Get("sortOrder")) {
	case "", "ascending":
	case "descending":
		q.descending = true
	default:
		return q, badRequest(InvalidValue, "sortOrder must be ascending or descending")
	}
	p, err := parseProjection(rt, r)
	if err != nil {
		return q, err
	}
	q.proj = p
	return q, nil
}

type listResponse struct {
	Schemas      []string         `json:"schemas"`
	TotalResults int              `json:"totalResults"`
	StartIndex   int              `json:"startIndex"`
	ItemsPerPage int              `json:"itemsPerPage"`
	Resources    []map[string]any `json:"Resources"`
}

// sortKey is the first value of ref, lower-cased unless case-exact.
func sortKey(res map[string]any, ref attrRef) (string, bool) {
	vals := ref.values(res)
	if len(vals) == 0 {
		return "", false
	}
	var s string
	switch x := vals[0].(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	default:
		return "", false
	}
	if !ref.leaf().CaseExact && ref.leaf().Type != typeDateTime {
		s = strings.ToLower(s)
	}
	return s, true
}

// page filters, sorts and pages rendered resources. Without sortBy the
// order is creation time, then id, so paging is stable.
func (q listQuery) page(all []map[string]any, rt *ResourceType) listResponse {
	var matched []map[string]any
	for _, res := range all {
		if q.filter == nil || q.filter.Match(res) {
			matched = append(matched, res)
		}
	}
	ref := attrRef{attr: rt.attr("meta"), sub: rt.attr("meta").sub("created")}
	if q.sortBy != nil {
		ref = *q.sortBy
	}
	sort.SliceStable(matched, func(i, j int) bool {
		a, okA := sortKey(matched[i], ref)
		b, okB := sortKey(matched[j], ref)
		switch {
		case okA != okB:
			return okA // unassigned values sort last in both orders
		case a != b:
			return (a < b) != q.descending
		}
		return matched[i]["id"].(string) < matched[j]["id"].(string)
	})
	out := listResponse{Schemas: []string{URNListResponse}, TotalResults: len(matched), StartIndex: q.startIndex, Resources: []map[string]any{}}
	for i := q.startIndex - 1; i < len(matched) && len(out.Resources) < q.count; i++ {
		out.Resources = append(out.Resources, q.proj.apply(matched[i]))
	}
	out.ItemsPerPage = len(out.Resources)
	return out
}

// userNameEq recognizes the filter identity providers send before
// provisioning a user (userName eq "…"), answered with one lookup.
func userNameEq(e Expr) (string, bool) {
	c, ok := e.(cmpExpr)
	if !ok || c.op != "eq" || c.ref.sub != nil || c.ref.attr != Users.attr("userName") {
		return "", false
	}
	s, ok := c.val.(string)
	return s, ok
}

// --- Users ---

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	q, err := parseListQuery(Users, r)
	if err != nil {
		return err
	}
	ctx, org := r.Context(), tok.OrganizationID
	var members []orgaccess.Member
	if name, ok := userNameEq(q.filter); ok {
		m, err := s.svc.MemberByUserName(ctx, org, name)
		if err == nil {
			members = []orgaccess.Member{m}
		} else if !errors.Is(err, orgaccess.ErrNotFound) {
			return err
		}
	} else if members, err = s.svc.Members(ctx, org); err != nil {
		return err
	}
	groups, err := s.svc.Groups(ctx, org)
	if err != nil {
		return err
	}
	base := baseURL(r)
	all := make([]map[string]any, len(members))
	for i, m := range members {
		all[i] = userResource(m, groups, base)
	}
	writeJSON(w, http.StatusOK, q.page(all, Users))
	return nil
}

func (s *Server) renderUser(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, m orgaccess.Member) error {
	p, err := parseProjection(Users, r)
	if err != nil {
		return err
	}
	groups, err := s.svc.Groups(ctx, m.OrganizationID)
	if err != nil {
		return err
	}
	writeResource(w, status, userResource(m, groups, baseURL(r)), p)
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	res, err := normalizeResource(Users, body)
	if err != nil {
		return err
	}
	m := orgaccess.Member{Source: orgaccess.SourceSCIM, OrgRole: identity.RoleUser}
	if err := applyUser(res, &m); err != nil {
		return err
	}
	m, err = s.svc.CreateMember(r.Context(), tok.OrganizationID, m, actor(tok))
	if err != nil {
		return mapErr(err, "User", "")
	}
	return s.renderUser(r.Context(), w, r, http.StatusCreated, m)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	m, err := s.svc.Member(r.Context(), tok.OrganizationID, id)
	if err != nil {
		return mapErr(err, "User", id)
	}
	return s.renderUser(r.Context(), w, r, http.StatusOK, m)
}

func (s *Server) putUser(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	res, err := normalizeResource(Users, body)
	if err != nil {
		return err
	}
	m, err := s.svc.UpdateMember(r.Context(), tok.OrganizationID, id, ifv, actor(tok), nil, func(m *orgaccess.Member) error {
		return applyUser(res, m)
	})
	if err != nil {
		return mapErr(err, "User", id)
	}
	return s.renderUser(r.Context(), w, r, http.StatusOK, m)
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	ops, err := parsePatchBody(body)
	if err != nil {
		return err
	}
	base := baseURL(r)
	// The operations run on the stored state each attempt reads, so a
	// concurrent change is never overwritten with stale values.
	m, err := s.svc.UpdateMember(r.Context(), tok.OrganizationID, id, ifv, actor(tok), nil, func(m *orgaccess.Member) error {
		res := userResource(*m, nil, base)
		if err := applyPatch(Users, res, ops); err != nil {
			return err
		}
		return applyUser(res, m)
	})
	if err != nil {
		return mapErr(err, "User", id)
	}
	return s.renderUser(r.Context(), w, r, http.StatusOK, m)
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteMember(r.Context(), tok.OrganizationID, id, ifv, actor(tok)); err != nil {
		return mapErr(err, "User", id)
	}
	web.NoContent(w)
	return nil
}

// --- Groups ---

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	q, err := parseListQuery(Groups, r)
	if err != nil {
		return err
	}
	ctx, org := r.Context(), tok.OrganizationID
	groups, err := s.svc.Groups(ctx, org)
	if err != nil {
		return err
	}
	names, err := memberNames(ctx, s.svc, org)
	if err != nil {
		return err
	}
	base := baseURL(r)
	all := make([]map[string]any, len(groups))
	for i, g := range groups {
		all[i] = groupResource(g, names, base)
	}
	writeJSON(w, http.StatusOK, q.page(all, Groups))
	return nil
}

func (s *Server) renderGroup(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, g orgaccess.Group) error {
	p, err := parseProjection(Groups, r)
	if err != nil {
		return err
	}
	var names map[string]string
	if p.wants("members") {
		if names, err = memberNames(ctx, s.svc, g.OrganizationID); err != nil {
			return err
		}
	}
	writeResource(w, status, groupResource(g, names, baseURL(r)), p)
	return nil
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	res, err := normalizeResource(Groups, body)
	if err != nil {
		return err
	}
	f, err := parseGroup(res)
	if err != nil {
		return err
	}
	ctx, org := r.Context(), tok.OrganizationID
	mapping, err := s.svc.ResolveMapping(ctx, org, f.displayName, f.ext)
	if err != nil {
		return mapErr(err, "Group", "")
	}
	g, err := s.svc.CreateGroup(ctx, org, orgaccess.Group{
		DisplayName: f.displayName, ExternalID: f.externalID, Members: f.members, Mapping: mapping,
	}, actor(tok))
	if err != nil {
		return mapErr(err, "Group", "")
	}
	return s.renderGroup(ctx, w, r, http.StatusCreated, g)
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	g, err := s.svc.Group(r.Context(), tok.OrganizationID, id)
	if err != nil {
		return mapErr(err, "Group", id)
	}
	return s.renderGroup(r.Context(), w, r, http.StatusOK, g)
}

// setGroup applies parsed fields to g, resolving the workspace mapping
// again only when the display name or the extension changed (so a renamed
// workspace does not break unrelated membership updates).
func (s *Server) setGroup(ctx context.Context, g *orgaccess.Group, f groupFields) error {
	extChanged := (f.ext == nil) != (g.Mapping.From != "extension") ||
		(f.ext != nil && (f.ext.WorkspaceID != g.Mapping.WorkspaceID || !strings.EqualFold(string(f.ext.Role), string(g.Mapping.Role))))
	if f.displayName != g.DisplayName || extChanged {
		m, err := s.svc.ResolveMapping(ctx, g.OrganizationID, f.displayName, f.ext)
		if err != nil {
			return err
		}
		g.Mapping = m
	}
	g.DisplayName, g.ExternalID, g.Members = f.displayName, f.externalID, f.members
	if g.Members == nil {
		g.Members = []string{}
	}
	return nil
}

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	res, err := normalizeResource(Groups, body)
	if err != nil {
		return err
	}
	f, err := parseGroup(res)
	if err != nil {
		return err
	}
	ctx := r.Context()
	g, err := s.svc.UpdateGroup(ctx, tok.OrganizationID, id, ifv, actor(tok), func(g *orgaccess.Group) error {
		return s.setGroup(ctx, g, f)
	})
	if err != nil {
		return mapErr(err, "Group", id)
	}
	return s.renderGroup(ctx, w, r, http.StatusOK, g)
}

func (s *Server) patchGroup(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	body, err := decodeBody(r)
	if err != nil {
		return err
	}
	ops, err := parsePatchBody(body)
	if err != nil {
		return err
	}
	ctx, base := r.Context(), baseURL(r)
	g, err := s.svc.UpdateGroup(ctx, tok.OrganizationID, id, ifv, actor(tok), func(g *orgaccess.Group) error {
		res := groupResource(*g, nil, base)
		if err := applyPatch(Groups, res, ops); err != nil {
			return err
		}
		f, err := parseGroup(res)
		if err != nil {
			return err
		}
		return s.setGroup(ctx, g, f)
	})
	if err != nil {
		return mapErr(err, "Group", id)
	}
	return s.renderGroup(ctx, w, r, http.StatusOK, g)
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, tok orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	ifv, err := ifMatch(r)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteGroup(r.Context(), tok.OrganizationID, id, ifv, actor(tok)); err != nil {
		return mapErr(err, "Group", id)
	}
	web.NoContent(w)
	return nil
}
