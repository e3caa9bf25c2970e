package prompts

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the prompts API.
type Handler struct{ svc *Service }

// NewHandler returns the HTTP handler of svc.
func NewHandler(svc *Service) *Handler { return &Handler{svc: svc} }

type repoResult struct {
	Repo Prompt `json:"repo"`
}

type reposResult struct {
	Repos []Prompt `json:"repos"`
	Total int      `json:"total"`
}

type commitsResult struct {
	Commits []Commit `json:"commits"`
	Total   int64    `json:"total"`
}

type commitResult struct {
	Commit Commit `json:"commit"`
}

type pulledCommit struct {
	CommitHash string          `json:"commit_hash"`
	Manifest   json.RawMessage `json:"manifest"`
	Examples   []any           `json:"examples"`
}

var repoListQuery = []api.Param{
	{Name: "limit", Type: "integer", Description: "1 to 100 (default 20)"},
	{Name: "offset", Type: "integer", Description: "0 or more"},
	{Name: "is_public", Type: "boolean"},
	{Name: "is_archived", Type: "boolean"},
	{Name: "query", Type: "string", Description: "substring of the handle or description"},
	{Name: "match_prefix", Type: "boolean", Description: "query is a prefix of the handle"},
	{Name: "sort_field", Type: "string", Description: strings.Join(SortFields, ", ")},
	{Name: "sort_direction", Type: "string", Description: "asc or desc (default desc)"},
}

// Routes is the prompts route group, served at / and under /api/v1. The
// SDKs call both /repos and /repos/ (and /commits/{owner}/{repo}/): the
// trailing-slash forms are exact patterns ({$}), not subtree matches.
var Routes = api.Group[*Handler]{
	Name:        "prompts",
	Description: "Prompt repositories and their commits (LangSmith hub API)",
	Mounts:      []string{"/api/v1"},
	Routes: []api.Route[*Handler]{
		{Method: "GET", Path: "/repos", Summary: "List prompts", Auth: api.Workspace, Role: auth.RoleViewer, Limit: "Repository",
			Result: reposResult{}, Query: repoListQuery, Handle: (*Handler).listRepos},
		{Method: "GET", Path: "/repos/{$}", Summary: "List prompts", Auth: api.Workspace, Role: auth.RoleViewer, Limit: "Repository",
			Result: reposResult{}, Query: repoListQuery, Handle: (*Handler).listRepos},
		{Method: "POST", Path: "/repos", Summary: "Create a prompt", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Repository",
			Body: repoBody{}, Result: repoResult{}, Handle: (*Handler).createRepo},
		{Method: "POST", Path: "/repos/{$}", Summary: "Create a prompt", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Repository",
			Body: repoBody{}, Result: repoResult{}, Handle: (*Handler).createRepo},
		{Method: "GET", Path: "/repos/{owner}/{repo}", Summary: "Read a prompt", Auth: api.Workspace, Role: auth.RoleViewer,
			Limit: "Repository", Result: repoResult{}, Handle: (*Handler).getRepo},
		{Method: "PATCH", Path: "/repos/{owner}/{repo}", Summary: "Update a prompt", Auth: api.Workspace, Role: auth.RoleUser,
			Limit: "Repository", Body: repoPatchBody{}, Result: repoResult{}, Handle: (*Handler).patchRepo},
		{Method: "DELETE", Path: "/repos/{owner}/{repo}", Summary: "Delete a prompt", Auth: api.Workspace, Role: auth.RoleUser,
			Limit: "Repository", Handle: (*Handler).deleteRepo},
		{Method: "POST", Path: "/repos/{owner}/{repo}/tags", Summary: "Tag a commit", Auth: api.Workspace, Role: auth.RoleUser,
			Limit: "Repository", Body: tagBody{}, Result: Tag{}, Handle: (*Handler).createTag},
		{Method: "GET", Path: "/commits/{owner}/{repo}", Summary: "List commits, newest first", Auth: api.Workspace,
			Role: auth.RoleViewer, Limit: "Commits", Result: commitsResult{}, Handle: (*Handler).listCommits,
			Query: []api.Param{{Name: "limit", Type: "integer"}, {Name: "offset", Type: "integer"}}},
		{Method: "GET", Path: "/commits/{owner}/{repo}/{$}", Summary: "List commits, newest first", Auth: api.Workspace,
			Role: auth.RoleViewer, Limit: "Commits", Result: commitsResult{}, Handle: (*Handler).listCommits,
			Query: []api.Param{{Name: "limit", Type: "integer"}, {Name: "offset", Type: "integer"}}},
		{Method: "GET", Path: "/commits/{owner}/{repo}/{ref}", Summary: "Read a commit (hash, tag or latest)", Auth: api.Workspace,
			Role: auth.RoleViewer, Limit: "Commits", Result: pulledCommit{}, Handle: (*Handler).getCommit,
			Query: []api.Param{{Name: "include_model", Type: "boolean"}}},
		{Method: "POST", Path: "/commits/{owner}/{repo}", Summary: "Commit a manifest on the latest commit", Auth: api.Workspace,
			Role: auth.RoleUser, Limit: "Commits", Body: commitBody{}, Result: commitResult{}, Handle: (*Handler).createCommit},
	},
}

func httpError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case ErrNotFound:
		return web.NotFound("%s", e.Msg)
	case ErrConflict:
		return web.Conflict("%s", e.Msg)
	}
	loc := e.Loc
	if loc == nil {
		loc = web.Loc("body")
	}
	return web.Invalid(loc, e.Msg, "value_error")
}

func ws(r *http.Request) string { return api.Caller(r).WorkspaceID }

func optBool(r *http.Request, name string) (*bool, error) {
	if r.URL.Query().Get(name) == "" {
		return nil, nil
	}
	b, err := web.QueryBool(r, name, false)
	return &b, err
}

func (h *Handler) listRepos(w http.ResponseWriter, r *http.Request) error {
	var q RepoQuery
	var err error
	if q.Limit, err = web.QueryInt(r, "limit", 20, 1, 100); err != nil {
		return err
	}
	if q.Offset, err = web.QueryInt(r, "offset", 0, 0, 1_000_000); err != nil {
		return err
	}
	if q.IsPublic, err = optBool(r, "is_public"); err != nil {
		return err
	}
	if q.IsArchived, err = optBool(r, "is_archived"); err != nil {
		return err
	}
	if q.MatchPrefix, err = web.QueryBool(r, "match_prefix", false); err != nil {
		return err
	}
	q.Query = r.URL.Query().Get("query")
	if len(q.Query) > 256 {
		return web.Invalid(web.Loc("query", "query"), "query is at most 256 characters", "string_too_long")
	}
	q.SortField = r.URL.Query().Get("sort_field")
	if q.SortField == "" {
		q.SortField = "updated_at"
	}
	valid := false
	for _, f := range SortFields {
		valid = valid || f == q.SortField
	}
	if !valid {
		return web.Invalid(web.Loc("query", "sort_field"), "Input should be one of "+strings.Join(SortFields, ", "), "enum")
	}
	switch strings.ToLower(r.URL.Query().Get("sort_direction")) {
	case "", "desc":
	case "asc":
		q.SortAscending = true
	default:
		return web.Invalid(web.Loc("query", "sort_direction"), "Input should be 'asc' or 'desc'", "enum")
	}
	repos, total, err := h.svc.ListRepos(r.Context(), ws(r), q)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, reposResult{Repos: repos, Total: total})
	return nil
}

type repoBody struct {
	RepoHandle  string   `json:"repo_handle"`
	Description *string  `json:"description"`
	Readme      *string  `json:"readme"`
	Tags        []string `json:"tags"`
	IsPublic    bool     `json:"is_public"`
	IsArchived  bool     `json:"is_archived"`
}

func (h *Handler) createRepo(w http.ResponseWriter, r *http.Request) error {
	var b repoBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	p, err := h.svc.CreateRepo(r.Context(), ws(r), NewRepo(b))
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, repoResult{Repo: p})
	return nil
}

func (h *Handler) getRepo(w http.ResponseWriter, r *http.Request) error {
	p, err := h.svc.GetRepo(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"))
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, repoResult{Repo: p})
	return nil
}

type repoPatchBody struct {
	Description *string   `json:"description"`
	Readme      *string   `json:"readme"`
	Tags        *[]string `json:"tags"`
	IsPublic    *bool     `json:"is_public"`
	IsArchived  *bool     `json:"is_archived"`
}

func (h *Handler) patchRepo(w http.ResponseWriter, r *http.Request) error {
	var b repoPatchBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	p, err := h.svc.UpdateRepo(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"), RepoPatch(b))
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, repoResult{Repo: p})
	return nil
}

func (h *Handler) deleteRepo(w http.ResponseWriter, r *http.Request) error {
	if err := h.svc.DeleteRepo(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo")); err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

type tagBody struct {
	TagName  string `json:"tag_name"`
	CommitID string `json:"commit_id"`
}

func (h *Handler) createTag(w http.ResponseWriter, r *http.Request) error {
	var b tagBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	id, err := web.ParseUUID(b.CommitID)
	if err != nil {
		return web.Invalid(web.Loc("body", "commit_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
	}
	t, err := h.svc.CreateTag(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"), b.TagName, id)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, t)
	return nil
}

func (h *Handler) listCommits(w http.ResponseWriter, r *http.Request) error {
	limit, err := web.QueryInt(r, "limit", 100, 1, 100)
	if err != nil {
		return err
	}
	offset, err := web.QueryInt(r, "offset", 0, 0, 1_000_000_000)
	if err != nil {
		return err
	}
	cs, total, err := h.svc.ListCommits(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"), limit, offset)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, commitsResult{Commits: cs, Total: total})
	return nil
}

func (h *Handler) getCommit(w http.ResponseWriter, r *http.Request) error {
	if _, err := web.QueryBool(r, "include_model", false); err != nil {
		return err
	}
	c, err := h.svc.GetCommit(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"), r.PathValue("ref"))
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, pulledCommit{CommitHash: c.CommitHash, Manifest: c.Manifest, Examples: []any{}})
	return nil
}

type commitBody struct {
	Manifest      json.RawMessage `json:"manifest"`
	ParentCommit  *string         `json:"parent_commit"`
	Description   *string         `json:"description"`
	ExampleRunIDs []string        `json:"example_run_ids"`
	SkipWebhooks  json.RawMessage `json:"skip_webhooks"`
}

func (h *Handler) createCommit(w http.ResponseWriter, r *http.Request) error {
	var b commitBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if len(b.Manifest) == 0 || string(b.Manifest) == "null" {
		return web.Invalid(web.Loc("body", "manifest"), "Field required", "missing")
	}
	if json.Unmarshal(b.Manifest, &m) != nil {
		return web.Invalid(web.Loc("body", "manifest"), "Input should be a valid dictionary", "dict_type")
	}
	c, err := h.svc.CreateCommit(r.Context(), ws(r), r.PathValue("owner"), r.PathValue("repo"),
		NewCommit{Manifest: b.Manifest, ParentCommit: b.ParentCommit, Description: b.Description})
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, commitResult{Commit: c})
	return nil
}
