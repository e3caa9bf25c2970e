package identity

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Routes is the "platform" route group: /health, the admin API
// (workspaces and API keys), the hosted regions' addresses, the platform
// operator's organization sign-up and the region link's lookups.
var Routes = api.Group[*Service]{
	Name:        "platform",
	Description: "health, the admin API (workspaces and API keys), the hosted regions' addresses, organization sign-up and the region link's lookups",
	Routes: []api.Route[*Service]{
		{Method: "GET", Path: "/health", Summary: "Health check", Auth: api.Public, Result: map[string]string{}, Handle: (*Service).health},
		{Method: "GET", Path: "/api/v1/workspaces", Summary: "List the workspaces the key reaches", Auth: api.Key, Result: []workspaceView{}, Handle: (*Service).listWorkspaces},
		{Method: "POST", Path: "/api/v1/workspaces", Summary: "Create a workspace", Auth: api.Key, Role: RoleAdmin, Body: workspaceRequest{}, Result: workspaceView{}, Status: http.StatusCreated, Handle: (*Service).createWorkspace},
		{Method: "GET", Path: "/api/v1/workspaces/{workspace_id}", Summary: "Read a workspace the key reaches", Auth: api.Key, Result: workspaceView{}, Handle: (*Service).getWorkspace},
		{Method: "GET", Path: "/api/v1/api-key", Summary: "List API keys (records, never keys)", Auth: api.Key, Role: RoleAdmin, Result: []APIKey{}, Handle: (*Service).listKeys},
		{Method: "POST", Path: "/api/v1/api-key", Summary: "Create an API key (shown once)", Auth: api.Key, Role: RoleAdmin, Body: keyRequest{}, Result: createdKey{}, Status: http.StatusCreated, Handle: (*Service).createKey},
		{Method: "DELETE", Path: "/api/v1/api-key/{api_key_id}", Summary: "Revoke an API key", Auth: api.Key, Role: RoleAdmin, Status: http.StatusNoContent, Handle: (*Service).revokeKey},
		{Method: "GET", Path: "/api/v1/regions", Summary: "The hosted regions: this region, the billing region, and each region's web, API and beacon URLs and egress and ingress addresses", Auth: api.Public, Result: regions.Document{}, Handle: (*Service).regionsInfo},
		{Method: "POST", Path: OrganizationsPath, Summary: "Create an organization in this region, with its default workspace and an admin API key (platform operator: Authorization: Bearer <operator token>)", Auth: api.Own, Body: signUpRequest{}, Result: SignedUp{}, Status: http.StatusCreated, Handle: (*Service).signUp},
		{Method: "POST", Path: regions.LocatePath(regions.KindAPIKey), Summary: "Region link: which region holds the API key with this SHA-256", Auth: api.Own, Body: regions.LocateRequest{}, Result: regions.LocateAnswer{}, Handle: (*Service).locateAPIKey},
		{Method: "POST", Path: regions.LocatePath(regions.KindSSOSlug), Summary: "Region link: which region holds the organization with this SSO login slug", Auth: api.Own, Body: regions.LocateRequest{}, Result: regions.LocateAnswer{}, Handle: (*Service).locateSSOSlug},
	},
}

func (s *Service) health(w http.ResponseWriter, r *http.Request) error {
	web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

type workspaceView struct {
	Workspace
	Role Role `json:"role"`
}

func (s *Service) listWorkspaces(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	all, err := s.Workspaces(r.Context(), p.OrganizationID)
	if err != nil {
		return err
	}
	out := []workspaceView{}
	for _, ws := range all {
		if role, ok := p.RoleIn(ws.ID); ok {
			out = append(out, workspaceView{Workspace: ws, Role: role})
		}
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) getWorkspace(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	id, err := web.PathUUID(r, "workspace_id")
	if err != nil {
		return err
	}
	// A workspace the key cannot reach answers exactly like a missing one.
	ws, err := s.Workspace(r.Context(), id)
	role, ok := p.RoleIn(id)
	if errors.Is(err, ErrNotFound) || err == nil && (!ok || ws.OrganizationID != p.OrganizationID) {
		return web.NotFound("Workspace %s not found", id)
	}
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, workspaceView{Workspace: ws, Role: role})
	return nil
}

func (s *Service) createWorkspace(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	var body workspaceRequest
	if err := web.DecodeJSON(r, &body, false); err != nil {
		return err
	}
	if body.DisplayName == nil {
		return web.Invalid(web.Loc("body", "display_name"), "Field required", "missing")
	}
	name := strings.TrimSpace(*body.DisplayName)
	if name == "" || len(name) > 200 {
		return web.Invalid(web.Loc("body", "display_name"), "String should have 1 to 200 characters", "string_too_short")
	}
	ws, err := s.CreateWorkspace(r.Context(), p.OrganizationID, name)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusCreated, workspaceView{Workspace: ws, Role: RoleAdmin})
	return nil
}

func (s *Service) listKeys(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	keys, err := s.APIKeys(r.Context(), p.OrganizationID)
	if err != nil {
		return err
	}
	if keys == nil {
		keys = []APIKey{}
	}
	web.WriteJSON(w, http.StatusOK, keys)
	return nil
}

// workspaceRequest is the body of POST /api/v1/workspaces.
type workspaceRequest struct {
	DisplayName *string `json:"display_name"`
}

// keyRequest is the body of POST /api/v1/api-key.
type keyRequest struct {
	Description string  `json:"description"`
	OrgRole     *Role   `json:"org_role"`
	Workspaces  []Grant `json:"workspaces"`
}

type createdKey struct {
	APIKey
	// Key is the raw key, returned only here.
	Key string `json:"key"`
}

func (s *Service) createKey(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	var body keyRequest
	if err := web.DecodeJSON(r, &body, true); err != nil {
		return err
	}
	var probs web.Problems
	if len(body.Description) > 500 {
		probs.Add(web.Loc("body", "description"), "String should have at most 500 characters", "string_too_long")
	}
	nk := NewKey{OrganizationID: p.OrganizationID, Description: body.Description, OrgRole: RoleViewer, Workspaces: body.Workspaces}
	if body.OrgRole != nil {
		if !body.OrgRole.Valid() {
			probs.Add(web.Loc("body", "org_role"), "Input should be 'Viewer', 'User', 'Editor' or 'Admin'", "enum")
		}
		nk.OrgRole = *body.OrgRole
	}
	seen := map[string]bool{}
	for i, g := range body.Workspaces {
		id, err := web.ParseUUID(g.WorkspaceID)
		if err != nil {
			probs.Add(web.Loc("body", "workspaces", i, "workspace_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		} else if seen[id] {
			probs.Add(web.Loc("body", "workspaces", i, "workspace_id"), "Workspace listed twice", "value_error")
		}
		seen[id] = true
		nk.Workspaces[i].WorkspaceID = id
		if !g.Role.Valid() {
			probs.Add(web.Loc("body", "workspaces", i, "role"), "Input should be 'Viewer', 'User', 'Editor' or 'Admin'", "enum")
		}
	}
	if err := probs.Err(); err != nil {
		return err
	}
	k, raw, err := s.CreateAPIKey(r.Context(), nk)
	if errors.Is(err, ErrNotFound) {
		return web.NotFound("A listed workspace does not exist in this organization")
	}
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusCreated, createdKey{APIKey: k, Key: raw})
	return nil
}

func (s *Service) revokeKey(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	id, err := web.PathUUID(r, "api_key_id")
	if err != nil {
		return err
	}
	if err := s.RevokeAPIKey(r.Context(), p.OrganizationID, id); errors.Is(err, ErrNotFound) {
		return web.NotFound("API key %s not found.", id)
	} else if err != nil {
		return err
	}
	web.NoContent(w)
	return nil
}
