package identity

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Register adds the admin API (workspaces and API keys) and /health to mux.
// These are the routes of the "platform" group in shared/routes.
func (s *Service) Register(mux *web.Mux) {
	mux.HandleFunc("GET", "/health", func(w http.ResponseWriter, r *http.Request) error {
		web.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	})
	mux.Handle("GET", "/api/v1/workspaces", s.RequireKey(web.HandlerFunc(s.listWorkspaces)))
	mux.Handle("POST", "/api/v1/workspaces", s.RequireKey(web.HandlerFunc(s.createWorkspace)))
	mux.Handle("GET", "/api/v1/api-key", s.RequireKey(web.HandlerFunc(s.listKeys)))
	mux.Handle("POST", "/api/v1/api-key", s.RequireKey(web.HandlerFunc(s.createKey)))
	mux.Handle("DELETE", "/api/v1/api-key/{api_key_id}", s.RequireKey(web.HandlerFunc(s.revokeKey)))
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

func (s *Service) createWorkspace(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	var body struct {
		DisplayName *string `json:"display_name"`
	}
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
	if err := NeedOrgAdmin(p); err != nil {
		return err
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
	if err := NeedOrgAdmin(p); err != nil {
		return err
	}
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

type createdKey struct {
	APIKey
	// Key is the raw key, returned only here.
	Key string `json:"key"`
}

func (s *Service) createKey(w http.ResponseWriter, r *http.Request) error {
	p, _ := FromContext(r.Context())
	var body struct {
		Description string  `json:"description"`
		OrgRole     *Role   `json:"org_role"`
		Workspaces  []Grant `json:"workspaces"`
	}
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
	if err := NeedOrgAdmin(p); err != nil {
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
	if err := NeedOrgAdmin(p); err != nil {
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
