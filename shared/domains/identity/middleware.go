package identity

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return auth.WithPrincipal(ctx, p)
}

// FromContext returns the principal set by the auth middleware.
func FromContext(ctx context.Context) (Principal, bool) { return auth.FromContext(ctx) }

// Credential returns the API key of a request: the X-Api-Key header, else an
// Authorization: Bearer token.
func Credential(r *http.Request) string { return auth.Credential(r) }

// AuthenticateRequest returns the principal of r's credential, or a 401.
func (s *Service) AuthenticateRequest(r *http.Request) (Principal, error) {
	raw := Credential(r)
	if raw == "" {
		return Principal{}, web.Unauthorized("Missing API key: send it in the X-Api-Key header or as Authorization: Bearer <API_KEY>")
	}
	p, err := s.Authenticate(r.Context(), raw)
	if errors.Is(err, ErrInvalidKey) {
		// A key of the other region's organization is unknown here: say
		// where it belongs (regions.go).
		return Principal{}, s.locateKey(r.Context(), raw, web.Unauthorized("Invalid API key"))
	}
	if err != nil {
		return Principal{}, err
	}
	// Every key-authenticated route passes here: an organization is
	// served only in its home region.
	if err := s.CheckHome(r.Context(), p.OrganizationID); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// RequireKey authenticates the request (X-Api-Key or Bearer) at
// organization scope.
func (s *Service) RequireKey(next http.Handler) http.Handler {
	return web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.AuthenticateRequest(r)
		if err != nil {
			return err
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		return nil
	})
}

// TenantHeader selects the workspace a workspace-scoped call acts on.
const TenantHeader = auth.TenantHeader

// InWorkspace narrows p to the workspace r selects with X-Tenant-Id (which
// may be left out when the key reaches exactly one workspace). It and
// AuthenticateRequest make Service the kernel's api.Authenticator.
func (s *Service) InWorkspace(r *http.Request, p Principal) (Principal, error) {
	return s.resolveWorkspace(r.Context(), p, strings.TrimSpace(r.Header.Get(TenantHeader)))
}

// RequireWorkspace authenticates the request and resolves its workspace from
// X-Tenant-Id, which may be omitted when the key reaches exactly one
// workspace.
func (s *Service) RequireWorkspace(next http.Handler) http.Handler {
	return web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.AuthenticateRequest(r)
		if err != nil {
			return err
		}
		p, err = s.resolveWorkspace(r.Context(), p, strings.TrimSpace(r.Header.Get(TenantHeader)))
		if err != nil {
			return err
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		return nil
	})
}

func (s *Service) resolveWorkspace(ctx context.Context, p Principal, tenant string) (Principal, error) {
	if tenant != "" {
		id, err := web.ParseUUID(tenant)
		if err != nil {
			return p, web.Invalid(web.Loc("header", TenantHeader), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		role, ok := p.RoleIn(id)
		if ok {
			ws, err := s.Workspace(ctx, id)
			if err == nil && ws.OrganizationID == p.OrganizationID {
				p.WorkspaceID, p.WorkspaceRole = id, role
				return p, nil
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				return p, err
			}
		}
		return p, web.Forbidden("This API key has no access to workspace %s", id)
	}
	var candidates []string
	if p.OrgRole == RoleAdmin {
		wss, err := s.Workspaces(ctx, p.OrganizationID)
		if err != nil {
			return p, err
		}
		for _, ws := range wss {
			candidates = append(candidates, ws.ID)
		}
	} else {
		candidates = p.Reachable()
	}
	switch len(candidates) {
	case 1:
		p.WorkspaceID = candidates[0]
		p.WorkspaceRole, _ = p.RoleIn(candidates[0])
		return p, nil
	case 0:
		return p, web.Forbidden("This API key has no access to any workspace")
	default:
		return p, web.BadRequest("The %s header is required: this API key reaches %d workspaces", TenantHeader, len(candidates))
	}
}

// Need returns a 403 unless the principal's role in its workspace (or, with
// no workspace, in its organization) is at least min.
func Need(p Principal, min Role) error {
	role := p.OrgRole
	if p.WorkspaceID != "" {
		role = p.WorkspaceRole
	}
	if !role.AtLeast(min) {
		return web.Forbidden("This operation needs the %s role", min)
	}
	return nil
}

// NeedOrgAdmin returns a 403 unless the principal is an organization admin.
func NeedOrgAdmin(p Principal) error {
	if p.OrgRole != RoleAdmin {
		return web.Forbidden("Only organization admins can do this")
	}
	return nil
}
