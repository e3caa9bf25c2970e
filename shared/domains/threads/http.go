package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Prefix is where a deployment's thread API lives: the deployment URL is
// {base}/deployments/{deployment_id}.
const Prefix = "/deployments/{deployment_id}"

// Workspaces tells which organization a workspace belongs to
// (identity.Service).
type Workspaces interface {
	Workspace(ctx context.Context, id string) (identity.Workspace, error)
}

// RetryAfterSeconds is what a deployment without a DEPLOYED revision asks
// clients to wait.
const RetryAfterSeconds = 10

// Handler serves the thread API.
type Handler struct {
	svc *Service
	res Resolver
	ws  Workspaces
}

// NewHandler returns the HTTP handler of svc.
func NewHandler(svc *Service, res Resolver, ws Workspaces) *Handler {
	return &Handler{svc: svc, res: res, ws: ws}
}

// Routes is the "threads" route group: the thread API under each
// deployment URL. The edge authenticates the key at organization scope;
// scope then narrows it to the deployment's workspace.
var Routes = api.Group[*Handler]{
	Name:        "threads",
	Description: "the thread API of deployed agent servers, under each deployment URL",
	Routes: []api.Route[*Handler]{
		{Method: "POST", Path: Prefix + "/threads", Summary: "Create a thread (optionally from supersteps)", Auth: api.Key, Body: createBody{}, Result: Thread{}, Handle: (*Handler).create},
		{Method: "POST", Path: Prefix + "/threads/search", Summary: "Search threads", Auth: api.Key, Body: searchBody{}, Result: []Thread{}, Handle: (*Handler).search},
		{Method: "POST", Path: Prefix + "/threads/count", Summary: "Count threads", Auth: api.Key, Body: countBody{}, Result: 0, Handle: (*Handler).count},
		{Method: "GET", Path: Prefix + "/threads/{thread_id}", Summary: "Read a thread", Auth: api.Key, Result: Thread{}, Handle: (*Handler).get},
		{Method: "PATCH", Path: Prefix + "/threads/{thread_id}", Summary: "Update a thread's metadata or TTL", Auth: api.Key, Body: patchBody{}, Result: Thread{}, Handle: (*Handler).patch},
		{Method: "DELETE", Path: Prefix + "/threads/{thread_id}", Summary: "Delete a thread", Auth: api.Key, Status: http.StatusNoContent, Handle: (*Handler).delete},
		{Method: "POST", Path: Prefix + "/threads/{thread_id}/copy", Summary: "Copy a thread with its history", Auth: api.Key, Result: Thread{}, Handle: (*Handler).copy},
		{Method: "GET", Path: Prefix + "/threads/{thread_id}/state", Summary: "Current state", Auth: api.Key, Result: State{}, Handle: (*Handler).getState},
		{Method: "POST", Path: Prefix + "/threads/{thread_id}/state", Summary: "Update the state", Auth: api.Key, Body: updateStateBody{}, Result: map[string]any{}, Handle: (*Handler).updateState},
		{Method: "GET", Path: Prefix + "/threads/{thread_id}/state/{checkpoint_id}", Summary: "State at a checkpoint", Auth: api.Key, Result: State{}, Handle: (*Handler).getStateAt},
		{Method: "POST", Path: Prefix + "/threads/{thread_id}/state/checkpoint", Summary: "State at a checkpoint (body)", Auth: api.Key, Body: map[string]any{}, Result: State{}, Handle: (*Handler).getStateCheckpoint},
		{Method: "GET", Path: Prefix + "/threads/{thread_id}/history", Summary: "History, newest first", Auth: api.Key, Query: []api.Param{{Name: "limit", Type: "integer"}, {Name: "before", Type: "string"}}, Result: []State{}, Handle: (*Handler).historyGet},
		{Method: "POST", Path: Prefix + "/threads/{thread_id}/history", Summary: "History, newest first (filtered)", Auth: api.Key, Body: historyBody{}, Result: []State{}, Handle: (*Handler).historyPost},
	},
}

// scope resolves and authorizes the deployment of a request: 422 for a
// malformed id, 401 without a valid key, 404 for a missing deployment or
// one the key cannot reach (never 403, so other tenants learn nothing),
// 403 for a role too weak to write, 503 while the first revision is on its
// way, 409 when no revision is DEPLOYED and none is on its way.
func (h *Handler) scope(r *http.Request, write bool) (Target, error) {
	dep, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return Target{}, err
	}
	p := api.Caller(r)
	// Made only when needed: the hot reads pass here on every request.
	notFound := func() error { return web.NotFound("Deployment %s not found", dep) }
	tgt, err := h.res.ThreadTarget(r.Context(), dep)
	if errors.Is(err, ErrDeploymentNotFound) {
		return Target{}, notFound()
	}
	if err != nil {
		return Target{}, err
	}
	role, ok := p.RoleIn(tgt.WorkspaceID)
	if !ok {
		return Target{}, notFound()
	}
	ws, err := h.ws.Workspace(r.Context(), tgt.WorkspaceID)
	if errors.Is(err, identity.ErrNotFound) || err == nil && ws.OrganizationID != p.OrganizationID {
		return Target{}, notFound()
	}
	if err != nil {
		return Target{}, err
	}
	need := identity.RoleViewer
	if write {
		need = identity.RoleUser
	}
	if !role.AtLeast(need) {
		return Target{}, web.Forbidden("This operation needs the %s role in the deployment's workspace", need)
	}
	if tgt.ActiveRevisionID == "" && tgt.FailedRevisionID != "" {
		// 409, not 503: nothing will change until someone makes a new
		// revision, and clients retry 503 (and 424) on their own; they
		// do not retry 409.
		return Target{}, web.Conflict("Deployment %s has no DEPLOYED revision and none in progress: its latest revision %s ended %s. Its threads are available once a new revision (a PATCH of the deployment, or a redeploy) reaches DEPLOYED; see the revision's status_message and build log for the cause.", dep, tgt.FailedRevisionID, tgt.FailedRevisionStatus)
	}
	if tgt.ActiveRevisionID == "" {
		e := web.Errorf(http.StatusServiceUnavailable, "Deployment %s has no DEPLOYED revision yet: its threads are available once a revision reaches DEPLOYED. Retry in %d seconds.", dep, RetryAfterSeconds)
		e.Header = http.Header{"Retry-After": []string{strconv.Itoa(RetryAfterSeconds)}}
		return Target{}, e
	}
	return tgt, nil
}

// threadScope is scope plus the thread id of the path.
func (h *Handler) threadScope(r *http.Request, write bool) (Target, string, error) {
	tgt, err := h.scope(r, write)
	if err != nil {
		return Target{}, "", err
	}
	tid, err := web.PathUUID(r, "thread_id")
	return tgt, tid, err
}

// checkMetadata validates metadata: its size and graph_id.
func checkMetadata(md map[string]any, graphs []string, p *web.Problems) {
	if md == nil {
		return
	}
	if raw, _ := json.Marshal(md); len(raw) > maxMetadataBytes {
		p.Add(web.Loc("body", "metadata"), fmt.Sprintf("Metadata may take at most %d bytes", maxMetadataBytes), "value_error")
		return
	}
	g, present := md["graph_id"]
	if !present {
		return
	}
	gs, ok := g.(string)
	if !ok {
		p.Add(web.Loc("body", "metadata", "graph_id"), "Input should be a valid string", "string_type")
		return
	}
	if graphs != nil && !contains(graphs, gs) {
		p.Add(web.Loc("body", "metadata", "graph_id"), fmt.Sprintf("Graph '%s' is not a graph of the deployment's active revision (graphs: %s)", gs, strings.Join(graphs, ", ")), "value_error")
	}
}

// MaxTTLMinutes bounds a thread's ttl: 100 years of 365 days.
const MaxTTLMinutes = 100 * 365 * 24 * 60

// parseTTL reads a ttl: a number of minutes (strategy delete) or
// {"strategy": "delete" | "keep_latest", "ttl": minutes}.
func parseTTL(raw json.RawMessage, p *web.Problems) *TTLIn {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil
	}
	loc := web.Loc("body", "ttl")
	out := &TTLIn{Strategy: TTLDelete}
	var minutes json.Number
	if s[0] == '{' {
		var body struct {
			Strategy *string     `json:"strategy"`
			TTL      json.Number `json:"ttl"`
		}
		if err := web.DecodeBytes(raw, &body, false); err != nil {
			var ve *web.ValidationError
			if errors.As(err, &ve) {
				for _, fe := range ve.Errors {
					p.Add(append(append([]any{}, loc...), fe.Loc[1:]...), fe.Msg, fe.Type)
				}
			} else {
				p.Add(loc, "Invalid ttl", "value_error")
			}
			return nil
		}
		if body.Strategy != nil {
			if *body.Strategy != TTLDelete && *body.Strategy != TTLKeepLatest {
				p.Add(append(loc, "strategy"), "Input should be 'delete' or 'keep_latest'", "enum")
				return nil
			}
			out.Strategy = *body.Strategy
		}
		if body.TTL == "" {
			p.Add(append(loc, "ttl"), "Field required", "missing")
			return nil
		}
		minutes, loc = body.TTL, append(loc, "ttl")
	} else if err := json.Unmarshal(raw, &minutes); err != nil {
		p.Add(loc, "Input should be a number of minutes or an object {strategy, ttl}", "value_error")
		return nil
	}
	f, err := minutes.Float64()
	if err != nil || f <= 0 || math.IsNaN(f) {
		if err != nil && strings.Contains(err.Error(), "value out of range") {
			p.Add(loc, fmt.Sprintf("Input should be less than or equal to %d", MaxTTLMinutes), "less_than_equal")
			return nil
		}
		p.Add(loc, "Input should be a number of minutes greater than 0", "greater_than")
		return nil
	}
	if f > MaxTTLMinutes {
		// Beyond it expires_at cannot follow ttl_minutes (time.Duration
		// ends at 292 years) and no thread needs it.
		p.Add(loc, fmt.Sprintf("Input should be less than or equal to %d (100 years in minutes)", MaxTTLMinutes), "less_than_equal")
		return nil
	}
	out.Minutes = f
	return out
}

type createBody struct {
	ThreadID   *string         `json:"thread_id"`
	Metadata   map[string]any  `json:"metadata"`
	IfExists   *string         `json:"if_exists"`
	TTL        json.RawMessage `json:"ttl"`
	Supersteps []SuperstepIn   `json:"supersteps"`
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) error {
	tgt, err := h.scope(r, true)
	if err != nil {
		return err
	}
	var b createBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	in := CreateIn{Metadata: b.Metadata}
	if b.ThreadID != nil {
		id, err := web.ParseUUID(*b.ThreadID)
		if err != nil {
			p.Add(web.Loc("body", "thread_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		in.ThreadID = id
	}
	if b.IfExists != nil {
		switch *b.IfExists {
		case "raise":
		case "do_nothing":
			in.DoNothing = true
		default:
			p.Add(web.Loc("body", "if_exists"), "Input should be 'raise' or 'do_nothing'", "enum")
		}
	}
	checkMetadata(b.Metadata, tgt.Graphs, &p)
	in.TTL = parseTTL(b.TTL, &p)
	if len(b.Supersteps) > maxSupersteps {
		p.Add(web.Loc("body", "supersteps"), fmt.Sprintf("List should have at most %d items", maxSupersteps), "too_long")
	}
	for i, ss := range b.Supersteps {
		if ss.Updates == nil {
			p.Add(web.Loc("body", "supersteps", i, "updates"), "Field required", "missing")
		}
		for j, u := range ss.Updates {
			if u.AsNode == nil {
				p.Add(web.Loc("body", "supersteps", i, "updates", j, "as_node"), "Field required", "missing")
			}
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	in.Supersteps = b.Supersteps
	th, err := h.svc.Create(r.Context(), tgt.DeploymentID, in)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, th)
	return nil
}

type searchBody struct {
	IDs       []string          `json:"ids"`
	Metadata  map[string]any    `json:"metadata"`
	Values    map[string]any    `json:"values"`
	Status    *string           `json:"status"`
	Limit     *int              `json:"limit"`
	Offset    *int              `json:"offset"`
	SortBy    *string           `json:"sort_by"`
	SortOrder *string           `json:"sort_order"`
	Select    []string          `json:"select"`
	Extract   map[string]string `json:"extract"`
}

func checkStatus(s *string, p *web.Problems) string {
	if s == nil {
		return ""
	}
	if !validStatus(*s) {
		p.Add(web.Loc("body", "status"), "Input should be 'idle', 'busy', 'interrupted' or 'error'", "enum")
		return ""
	}
	return *s
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) error {
	tgt, err := h.scope(r, false)
	if err != nil {
		return err
	}
	var b searchBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	in := SearchIn{Limit: 10, SortBy: DefaultSortBy, Desc: DefaultSortOrder == "desc"}
	in.Status = checkStatus(b.Status, &p)
	in.Metadata, in.Values = b.Metadata, b.Values
	if len(b.IDs) > 1000 {
		p.Add(web.Loc("body", "ids"), "List should have at most 1000 items", "too_long")
	}
	for i, id := range b.IDs {
		u, err := web.ParseUUID(id)
		if err != nil {
			p.Add(web.Loc("body", "ids", i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		in.IDs = append(in.IDs, u)
	}
	if b.Limit != nil {
		if *b.Limit < 1 || *b.Limit > 1000 {
			p.Add(web.Loc("body", "limit"), "Input should be between 1 and 1000", "value_error")
		}
		in.Limit = *b.Limit
	}
	if b.Offset != nil {
		if *b.Offset < 0 {
			p.Add(web.Loc("body", "offset"), "Input should be greater than or equal to 0", "greater_than_equal")
		}
		in.Offset = *b.Offset
	}
	sorts := []string{SortThreadID, SortStatus, SortCreatedAt, SortUpdatedAt, SortStateUpdatedAt}
	if b.SortBy != nil {
		if !contains(sorts, *b.SortBy) {
			return invalidSort("sort_by", *b.SortBy, sorts)
		}
		in.SortBy = *b.SortBy
	}
	if b.SortOrder != nil {
		switch *b.SortOrder {
		case "asc":
			in.Desc = false
		case "desc":
			in.Desc = true
		default:
			return invalidSort("sort_order", *b.SortOrder, []string{"asc", "desc"})
		}
	}
	for i, f := range b.Select {
		if !contains(SelectFields, f) {
			p.Add(web.Loc("body", "select", i), fmt.Sprintf("Invalid select field '%s'. Expected one of ['%s']", f, strings.Join(SelectFields, "', '")), "enum")
		}
	}
	if len(b.Select) > 0 {
		in.Select = b.Select
	}
	if len(b.Extract) > 10 {
		p.Add(web.Loc("body", "extract"), "extract takes at most 10 paths", "too_long")
	}
	for alias, path := range b.Extract {
		parsed, err := ParseExtractPath(path)
		if err != nil {
			p.Add(web.Loc("body", "extract", alias), "Invalid path '"+path+"': "+err.Error(), "value_error")
			continue
		}
		if in.Extract == nil {
			in.Extract = map[string][]any{}
		}
		in.Extract[alias] = parsed
	}
	if err := p.Err(); err != nil {
		return err
	}
	res, err := h.svc.Search(r.Context(), tgt.DeploymentID, in)
	if err != nil {
		return err
	}
	w.Header().Set("X-Pagination-Total", strconv.Itoa(res.Total))
	if res.More {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(in.Offset+in.Limit))
	}
	web.WriteJSON(w, http.StatusOK, res.Threads)
	return nil
}

type countBody struct {
	Metadata map[string]any `json:"metadata"`
	Values   map[string]any `json:"values"`
	Status   *string        `json:"status"`
}

func (h *Handler) count(w http.ResponseWriter, r *http.Request) error {
	tgt, err := h.scope(r, false)
	if err != nil {
		return err
	}
	var b countBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	f := Filter{Metadata: b.Metadata, Values: b.Values, Status: checkStatus(b.Status, &p)}
	if err := p.Err(); err != nil {
		return err
	}
	n, err := h.svc.Count(r.Context(), tgt.DeploymentID, f)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, n)
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	withTTL := false
	if r.URL.RawQuery != "" { // most GETs have none: no map to build
		for _, v := range r.URL.Query()["include"] {
			for _, part := range strings.Split(v, ",") {
				if strings.TrimSpace(part) == "ttl" {
					withTTL = true
				}
			}
		}
	}
	b, err := h.svc.GetJSON(r.Context(), tgt.DeploymentID, tid, withTTL)
	if err != nil {
		return err
	}
	web.WriteJSONBytes(w, http.StatusOK, b)
	return nil
}

type patchBody struct {
	Metadata map[string]any  `json:"metadata"`
	TTL      json.RawMessage `json:"ttl"`
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, true)
	if err != nil {
		return err
	}
	var b patchBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	checkMetadata(b.Metadata, tgt.Graphs, &p)
	in := PatchIn{Metadata: b.Metadata, TTL: parseTTL(b.TTL, &p)}
	if err := p.Err(); err != nil {
		return err
	}
	th, err := h.svc.Patch(r.Context(), tgt.DeploymentID, tid, in)
	if err != nil {
		return err
	}
	if strings.Contains(strings.ToLower(r.Header.Get("Prefer")), "return=minimal") {
		web.NoContent(w)
		return nil
	}
	web.WriteJSON(w, http.StatusOK, th)
	return nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, true)
	if err != nil {
		return err
	}
	if err := h.svc.Delete(r.Context(), tgt.DeploymentID, tid); err != nil {
		return err
	}
	web.NoContent(w)
	return nil
}

func (h *Handler) copy(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, true)
	if err != nil {
		return err
	}
	th, err := h.svc.Copy(r.Context(), tgt.DeploymentID, tid)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, th)
	return nil
}

func (h *Handler) getState(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	if _, err := web.QueryBool(r, "subgraphs", false); err != nil {
		return err
	}
	b, err := h.svc.GetStateJSON(r.Context(), tgt.DeploymentID, tid)
	if err != nil {
		return err
	}
	web.WriteJSONBytes(w, http.StatusOK, b)
	return nil
}

func (h *Handler) getStateAt(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	cid, err := web.PathUUID(r, "checkpoint_id")
	if err != nil {
		return err
	}
	if _, err := web.QueryBool(r, "subgraphs", false); err != nil {
		return err
	}
	st, err := h.svc.GetState(r.Context(), tgt.DeploymentID, tid, cid)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

// checkpointBody is a CheckpointConfig.
type checkpointBody struct {
	CheckpointID  *string        `json:"checkpoint_id"`
	ThreadID      *string        `json:"thread_id"`
	CheckpointNS  *string        `json:"checkpoint_ns"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

// id validates the checkpoint id of a CheckpointConfig at loc.
func (c *checkpointBody) id(loc []any, p *web.Problems) (string, string) {
	if c == nil {
		return "", ""
	}
	ns := ""
	if c.CheckpointNS != nil {
		ns = *c.CheckpointNS
	}
	if c.CheckpointID == nil || *c.CheckpointID == "" {
		return "", ns
	}
	id, err := web.ParseUUID(*c.CheckpointID)
	if err != nil {
		p.Add(append(loc, "checkpoint_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
	}
	return id, ns
}

type stateCheckpointBody struct {
	Checkpoint *checkpointBody `json:"checkpoint"`
	Subgraphs  *bool           `json:"subgraphs"`
}

func (h *Handler) getStateCheckpoint(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	var b stateCheckpointBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	if b.Checkpoint == nil {
		return web.Invalid(web.Loc("body", "checkpoint"), "Field required", "missing")
	}
	var p web.Problems
	cid, ns := b.Checkpoint.id(web.Loc("body", "checkpoint"), &p)
	if err := p.Err(); err != nil {
		return err
	}
	if ns != "" {
		web.WriteJSON(w, http.StatusOK, emptyState())
		return nil
	}
	st, err := h.svc.GetState(r.Context(), tgt.DeploymentID, tid, cid)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

type updateStateBody struct {
	Values       any             `json:"values"`
	Checkpoint   *checkpointBody `json:"checkpoint"`
	CheckpointID *string         `json:"checkpoint_id"`
	AsNode       *string         `json:"as_node"`
}

func (h *Handler) updateState(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, true)
	if err != nil {
		return err
	}
	var b updateStateBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	in := UpdateStateIn{Update: UpdateIn{Values: b.Values, AsNode: b.AsNode}}
	cid, ns := b.Checkpoint.id(web.Loc("body", "checkpoint"), &p)
	if b.CheckpointID != nil && *b.CheckpointID != "" {
		id, err := web.ParseUUID(*b.CheckpointID)
		if err != nil {
			p.Add(web.Loc("body", "checkpoint_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		cid = id
	}
	if ns != "" {
		p.Add(web.Loc("body", "checkpoint", "checkpoint_ns"), "Subgraph namespaces have no checkpoints on this server", "value_error")
	}
	if err := p.Err(); err != nil {
		return err
	}
	in.CheckpointID = cid
	res, err := h.svc.UpdateState(r.Context(), tgt.DeploymentID, tid, in, tgt.Graphs)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, res)
	return nil
}

type historyBody struct {
	Limit      *int            `json:"limit"`
	Before     json.RawMessage `json:"before"`
	Metadata   map[string]any  `json:"metadata"`
	Checkpoint *checkpointBody `json:"checkpoint"`
}

// parseBefore accepts a checkpoint id, {"configurable": {"checkpoint_id"}}
// or a CheckpointConfig.
func parseBefore(raw json.RawMessage, p *web.Problems) string {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return ""
	}
	loc := web.Loc("body", "before")
	var id string
	if s[0] == '"' {
		_ = json.Unmarshal(raw, &id)
	} else {
		var obj struct {
			CheckpointID string `json:"checkpoint_id"`
			Configurable struct {
				CheckpointID string `json:"checkpoint_id"`
			} `json:"configurable"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			p.Add(loc, "Input should be a checkpoint id, a CheckpointConfig or a config with configurable.checkpoint_id", "value_error")
			return ""
		}
		id = obj.CheckpointID
		if id == "" {
			id = obj.Configurable.CheckpointID
		}
		if id == "" {
			return ""
		}
	}
	u, err := web.ParseUUID(id)
	if err != nil {
		p.Add(loc, "The checkpoint id should be a valid UUID, "+err.Error(), "uuid_parsing")
	}
	return u
}

func (h *Handler) historyPost(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	var b historyBody
	if err := web.DecodeJSON(r, &b, true); err != nil {
		return err
	}
	var p web.Problems
	in := HistoryIn{Limit: 10, Metadata: b.Metadata}
	if b.Limit != nil {
		if *b.Limit < 1 || *b.Limit > 1000 {
			p.Add(web.Loc("body", "limit"), "Input should be between 1 and 1000", "value_error")
		}
		in.Limit = *b.Limit
	}
	in.Before = parseBefore(b.Before, &p)
	_, in.Namespace = b.Checkpoint.id(web.Loc("body", "checkpoint"), &p)
	if err := p.Err(); err != nil {
		return err
	}
	return h.writeHistory(w, r, tgt, tid, in)
}

func (h *Handler) historyGet(w http.ResponseWriter, r *http.Request) error {
	tgt, tid, err := h.threadScope(r, false)
	if err != nil {
		return err
	}
	limit, err := web.QueryInt(r, "limit", 10, 1, 1000)
	if err != nil {
		return err
	}
	in := HistoryIn{Limit: limit}
	if before := r.URL.Query().Get("before"); before != "" {
		id, err := web.ParseUUID(before)
		if err != nil {
			return web.Invalid(web.Loc("query", "before"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		in.Before = id
	}
	return h.writeHistory(w, r, tgt, tid, in)
}

func (h *Handler) writeHistory(w http.ResponseWriter, r *http.Request, tgt Target, tid string, in HistoryIn) error {
	states, err := h.svc.History(r.Context(), tgt.DeploymentID, tid, in)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, states)
	return nil
}
