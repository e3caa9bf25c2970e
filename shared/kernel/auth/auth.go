// Package auth holds who a request acts as: the Principal an API key
// resolves to, the roles it holds, and how a credential is read from a
// request. Every domain authorizes with these; the identity domain is what
// issues and checks keys.
package auth

import (
	"context"
	"net/http"
	"sort"
	"strings"
)

// Role is a workspace or organization role. The seed's default SSO role is
// one of Viewer, User, Editor, Admin.
type Role string

const (
	RoleViewer Role = "Viewer"
	RoleUser   Role = "User"
	RoleEditor Role = "Editor"
	RoleAdmin  Role = "Admin"
)

// rank orders the roles, weakest first; 0 for an unknown one. (A switch,
// not a map: every authorized request ranks two roles.)
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleUser:
		return 2
	case RoleEditor:
		return 3
	case RoleAdmin:
		return 4
	}
	return 0
}

// Roles lists the valid roles, weakest first.
var Roles = []Role{RoleViewer, RoleUser, RoleEditor, RoleAdmin}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r grants at least what o grants.
func (r Role) AtLeast(o Role) bool { return r.rank() >= o.rank() && r.Valid() }

// Principal is who a request acts as.
type Principal struct {
	OrganizationID string
	OrgRole        Role
	KeyID          string
	// WorkspaceID and WorkspaceRole are set once the request's workspace
	// is known (X-Tenant-Id, or the workspace of the object addressed).
	WorkspaceID   string
	WorkspaceRole Role
	grants        map[string]Role
}

// NewPrincipal returns the principal of a credential with an organization
// role and explicit workspace grants.
func NewPrincipal(org string, orgRole Role, keyID string, grants map[string]Role) Principal {
	g := make(map[string]Role, len(grants))
	for ws, r := range grants {
		g[ws] = r
	}
	return Principal{OrganizationID: org, OrgRole: orgRole, KeyID: keyID, grants: g}
}

// RoleIn returns the principal's role in workspace ws, if it reaches it.
// An organization admin reaches every workspace of its organization; the
// caller checks that ws belongs to that organization.
func (p Principal) RoleIn(ws string) (Role, bool) {
	if p.OrgRole == RoleAdmin {
		return RoleAdmin, true
	}
	r, ok := p.grants[ws]
	return r, ok
}

// Reachable lists the workspace ids granted explicitly, sorted (org admins
// reach every workspace of their organization in addition).
func (p Principal) Reachable() []string {
	out := make([]string, 0, len(p.grants))
	for ws := range p.grants {
		out = append(out, ws)
	}
	sort.Strings(out)
	return out
}

// In returns p narrowed to workspace ws with role r.
func (p Principal) In(ws string, r Role) Principal {
	p.WorkspaceID, p.WorkspaceRole = ws, r
	return p
}

// Effective is the role that authorizes an operation: the workspace role
// once a workspace is selected, else the organization role.
func (p Principal) Effective() Role {
	if p.WorkspaceID != "" {
		return p.WorkspaceRole
	}
	return p.OrgRole
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal the edge authenticated.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Credential returns the API key of a request: the X-Api-Key header, else an
// Authorization: Bearer token.
func Credential(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// TenantHeader selects the workspace a workspace-scoped call acts on.
const TenantHeader = "X-Tenant-Id"
