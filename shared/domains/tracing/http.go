package tracing

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing/fql"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the tracing API.
type Handler struct {
	s *Service
}

// NewHandler returns the HTTP handler of s.
func NewHandler(s *Service) *Handler { return &Handler{s: s} }

// Routes is the tracing API, served at "/" and again under "/api/v1" (so
// LANGSMITH_ENDPOINT may be the base URL or base + /api/v1).
var Routes = api.Group[*Handler]{
	Name:        "tracing",
	Description: "LangSmith-compatible tracing: run ingest, run queries, projects, feedback, threads",
	Mounts:      []string{"/api/v1"},
	Routes: []api.Route[*Handler]{
		{Method: "GET", Path: "/info", Summary: "Server info: batch ingest limits and instance flags", Auth: api.Public, Limit: "High throughput", Result: Info{}, Handle: (*Handler).info},
		{Method: "GET", Path: "/settings", Summary: "The workspace's settings", Auth: api.Workspace, Role: auth.RoleViewer, Result: Settings{}, Handle: (*Handler).settings},
		{Method: "POST", Path: "/runs", Summary: "Create a run (queued)", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Run ingest", Body: map[string]any{}, Result: IngestResult{}, Status: http.StatusAccepted, Handle: (*Handler).postRun},
		{Method: "PATCH", Path: "/runs/{run_id}", Summary: "Update a run (queued)", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Run ingest", Body: map[string]any{}, Result: IngestResult{}, Status: http.StatusAccepted, Handle: (*Handler).patchRun},
		{Method: "POST", Path: "/runs/batch", Summary: "Create and update runs (queued)", Auth: api.Workspace, Role: auth.RoleUser, Limit: "High throughput", Body: map[string]any{}, Result: IngestResult{}, Status: http.StatusAccepted, Handle: (*Handler).batch},
		{Method: "POST", Path: "/runs/multipart", Summary: "Create and update runs, feedback and attachments as multipart parts (queued)", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Multipart ingest", Result: IngestResult{}, Status: http.StatusAccepted, Handle: (*Handler).multipart},
		{Method: "POST", Path: "/otel/v1/traces", Summary: "OTLP/HTTP trace export (protobuf or JSON), mapped to runs (queued)", Auth: api.Workspace, Role: auth.RoleUser, Limit: "Run ingest", Handle: (*Handler).otlp},
		{Method: "GET", Path: "/runs/{run_id}", Summary: "Read a run", Auth: api.Workspace, Role: auth.RoleViewer, Limit: "Run lookup", Result: map[string]any{}, Handle: (*Handler).getRun},
		{Method: "GET", Path: "/runs/{run_id}/attachments/{name}", Summary: "Download a run's attachment", Auth: api.Workspace, Role: auth.RoleViewer, Handle: (*Handler).getAttachment},
		{Method: "POST", Path: "/runs/query", Summary: "Query runs (filters, the filter language, cursor paging)", Auth: api.Workspace, Role: auth.RoleViewer, Limit: "Run query (API)", Body: map[string]any{}, Result: RunPage{}, Handle: (*Handler).query},
		{Method: "POST", Path: "/runs/stats", Summary: "Statistics of the runs a query selects", Auth: api.Workspace, Role: auth.RoleViewer, Limit: "Stats", Body: map[string]any{}, Result: RunStats{}, Handle: (*Handler).stats},
		{Method: "GET", Path: "/sessions", Summary: "List projects", Auth: api.Workspace, Role: auth.RoleViewer, Result: []map[string]any{}, Query: sessionParams, Handle: (*Handler).listSessions},
		{Method: "POST", Path: "/sessions", Summary: "Create a project (?upsert=true returns an existing one)", Auth: api.Workspace, Role: auth.RoleUser, Body: map[string]any{}, Result: map[string]any{}, Query: []api.Param{{Name: "upsert", Type: "boolean"}}, Handle: (*Handler).createSession},
		{Method: "GET", Path: "/sessions/{session_id}", Summary: "Read a project", Auth: api.Workspace, Role: auth.RoleViewer, Result: map[string]any{}, Query: []api.Param{{Name: "include_stats", Type: "boolean"}}, Handle: (*Handler).getSession},
		{Method: "PATCH", Path: "/sessions/{session_id}", Summary: "Update a project", Auth: api.Workspace, Role: auth.RoleUser, Body: map[string]any{}, Result: map[string]any{}, Handle: (*Handler).patchSession},
		{Method: "DELETE", Path: "/sessions/{session_id}", Summary: "Delete a project and (in the background) its runs", Auth: api.Workspace, Role: auth.RoleEditor, Limit: "Deletion", Status: http.StatusAccepted, Handle: (*Handler).deleteSession},
		{Method: "GET", Path: "/sessions/{session_id}/threads", Summary: "A project's threads, latest activity first", Auth: api.Workspace, Role: auth.RoleViewer, Result: []ThreadSummary{}, Query: []api.Param{{Name: "limit", Type: "integer"}, {Name: "offset", Type: "integer"}}, Handle: (*Handler).listThreads},
		{Method: "GET", Path: "/sessions/{session_id}/threads/{thread_id}/runs", Summary: "The runs of one thread, oldest first", Auth: api.Workspace, Role: auth.RoleViewer, Result: RunPage{}, Query: threadRunParams, Handle: (*Handler).threadRuns},
		{Method: "POST", Path: "/feedback", Summary: "Create feedback", Auth: api.Workspace, Role: auth.RoleUser, Limit: "High throughput", Body: map[string]any{}, Result: Feedback{}, Handle: (*Handler).createFeedback},
		{Method: "GET", Path: "/feedback", Summary: "List feedback", Auth: api.Workspace, Role: auth.RoleViewer, Result: []Feedback{}, Query: feedbackParams, Handle: (*Handler).listFeedback},
		{Method: "GET", Path: "/feedback/{feedback_id}", Summary: "Read feedback", Auth: api.Workspace, Role: auth.RoleViewer, Result: Feedback{}, Handle: (*Handler).getFeedback},
		{Method: "PATCH", Path: "/feedback/{feedback_id}", Summary: "Update feedback", Auth: api.Workspace, Role: auth.RoleUser, Body: map[string]any{}, Result: Feedback{}, Handle: (*Handler).patchFeedback},
		{Method: "DELETE", Path: "/feedback/{feedback_id}", Summary: "Delete feedback", Auth: api.Workspace, Role: auth.RoleUser, Status: http.StatusNoContent, Handle: (*Handler).deleteFeedback},
	},
}

var sessionParams = []api.Param{
	{Name: "id", Type: "array"}, {Name: "name", Type: "string"}, {Name: "name_contains", Type: "string"},
	{Name: "reference_dataset", Type: "string"}, {Name: "reference_free", Type: "boolean"}, {Name: "include_stats", Type: "boolean"},
	{Name: "metadata", Type: "string", Description: "a JSON object: exact match on extra.metadata"},
	{Name: "sort_by", Type: "string", Description: "start_time (default) or name"}, {Name: "sort_by_desc", Type: "boolean"},
	{Name: "limit", Type: "integer"}, {Name: "offset", Type: "integer"},
}

var threadRunParams = []api.Param{{Name: "limit", Type: "integer"}, {Name: "cursor", Type: "string"}, {Name: "order", Type: "string"}, {Name: "select", Type: "array"}}

var feedbackParams = []api.Param{{Name: "run", Type: "array"}, {Name: "key", Type: "array"}, {Name: "session", Type: "array"},
	{Name: "source", Type: "array"}, {Name: "limit", Type: "integer"}, {Name: "offset", Type: "integer"}}

// Info is GET /info.
type Info struct {
	Version               string          `json:"version"`
	LicenseExpirationTime *string         `json:"license_expiration_time"`
	GitSHA                *string         `json:"git_sha"`
	BatchIngestConfig     map[string]any  `json:"batch_ingest_config"`
	InstanceFlags         map[string]bool `json:"instance_flags"`
	CustomerInfo          any             `json:"customer_info"`
	SDKVersions           any             `json:"sdk_versions"`
}

// Settings is GET /settings.
type Settings struct {
	ID           string    `json:"id"`
	DisplayName  string    `json:"display_name"`
	CreatedAt    time.Time `json:"created_at"`
	TenantHandle *string   `json:"tenant_handle"`
}

// RunPage is a page of runs.
type RunPage struct {
	Runs    []map[string]any `json:"runs"`
	Cursors map[string]any   `json:"cursors"`
}

func caller(r *http.Request) Caller {
	p := api.Caller(r)
	return Caller{OrganizationID: p.OrganizationID, WorkspaceID: p.WorkspaceID}
}

// mapErr turns service errors into the interface's shapes.
func mapErr(err error) error {
	var nf *NotFoundError
	var fe *fql.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return web.NotFound("%s %s not found", nf.What, nf.ID)
	case errors.Is(err, ErrConflict):
		return web.Conflict("%s", strings.TrimPrefix(err.Error(), ErrConflict.Error()+": "))
	case errors.Is(err, ErrNoScope):
		return web.BadRequest("A run query needs session, trace, parent_run, reference_example or id")
	case errors.Is(err, ErrBadCursor):
		return web.Invalid(web.Loc("body", "cursor"), "Invalid cursor", "value_error")
	case errors.Is(err, ErrStatsTooBroad):
		return web.BadRequest("The query selects more than %d runs: narrow it (statistics of a whole project need only session)", MaxStatsRuns)
	case errors.Is(err, ErrTooMany):
		return web.Invalid(web.Loc("body", "id"), "At most 1000 ids", "too_long")
	case errors.As(err, &fe):
		return web.Invalid(web.Loc("body", "filter", fe.Pos), "Invalid filter at position "+strconv.Itoa(fe.Pos)+": "+fe.Msg, "value_error")
	}
	return err
}

// readBody reads a request body up to the ingest limit, undoing a gzip
// Content-Encoding.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := h.s.bodyMax
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", limit)
		}
		return nil, web.BadRequest("Could not read the request body")
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, web.Invalid(web.Loc("body"), "The body is not valid gzip", "value_error")
		}
		out, err := io.ReadAll(io.LimitReader(zr, limit+1))
		if err != nil {
			return nil, web.Invalid(web.Loc("body"), "The body is not valid gzip", "value_error")
		}
		if int64(len(out)) > limit {
			return nil, web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes once decompressed", limit)
		}
		return out, nil
	default:
		return nil, web.Errorf(http.StatusUnsupportedMediaType, "Unsupported Content-Encoding %q: send identity or gzip", enc)
	}
}

func (h *Handler) info(w http.ResponseWriter, r *http.Request) error {
	web.WriteJSON(w, http.StatusOK, h.s.Info())
	return nil
}

// Info is what GET /info answers.
func (s *Service) Info() Info {
	flags := make(map[string]bool, len(s.flags))
	for k, v := range s.flags {
		flags[k] = v
	}
	return Info{Version: s.version, InstanceFlags: flags, BatchIngestConfig: map[string]any{
		"use_multipart_endpoint": true, "size_limit": 100, "size_limit_bytes": s.batchMax,
		"scale_up_qsize_trigger": 1000, "scale_up_nthreads_limit": 16, "scale_down_nempty_trigger": 4,
	}}
}

func (h *Handler) settings(w http.ResponseWriter, r *http.Request) error {
	ws := caller(r).WorkspaceID
	info, err := h.s.workspace(r.Context(), ws)
	if err != nil {
		return err
	}
	st := Settings{ID: ws, DisplayName: info.DisplayName, CreatedAt: info.CreatedAt}
	if info.Handle != "" {
		st.TenantHandle = &info.Handle
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

func (h *Handler) ingest(w http.ResponseWriter, r *http.Request, kind, pathID string) error {
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	res, err := h.s.Ingest(r.Context(), caller(r), kind, r.Header.Get("Content-Type"), body, pathID)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusAccepted, res)
	return nil
}

func (h *Handler) postRun(w http.ResponseWriter, r *http.Request) error {
	return h.ingest(w, r, kindRun, "")
}

func (h *Handler) patchRun(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "run_id")
	if err != nil {
		return err
	}
	return h.ingest(w, r, kindPatch, id)
}

func (h *Handler) batch(w http.ResponseWriter, r *http.Request) error {
	return h.ingest(w, r, kindBatch, "")
}

func (h *Handler) multipart(w http.ResponseWriter, r *http.Request) error {
	return h.ingest(w, r, kindMultipart, "")
}

func (h *Handler) getRun(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "run_id")
	if err != nil {
		return err
	}
	c := caller(r)
	lr, err := h.s.loadRun(r.Context(), c.WorkspaceID, id)
	if err != nil {
		return err
	}
	if lr.rec == nil || !lr.rec.complete() {
		return web.NotFound("Run %s not found", id)
	}
	v := h.s.newViewer(c.OrganizationID, append(append([]string(nil), DefaultSelect...), "serialized", "attachments"))
	m, err := v.view(r.Context(), lr.rec)
	v.br.close()
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, m)
	return nil
}

func (h *Handler) getAttachment(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "run_id")
	if err != nil {
		return err
	}
	name := r.PathValue("name")
	lr, err := h.s.loadRun(r.Context(), caller(r).WorkspaceID, id)
	if err != nil {
		return err
	}
	if lr.rec == nil || !lr.rec.complete() {
		return web.NotFound("Run %s not found", id)
	}
	a, ok := lr.rec.Attachments[name]
	if !ok {
		return web.NotFound("Attachment %q of run %s not found", name, id)
	}
	rc, err := h.s.blobs.Get(r.Context(), a.Key)
	if err != nil {
		return web.NotFound("Attachment %q of run %s not found", name, id)
	}
	defer rc.Close()
	w.Header().Set("Content-Type", a.ContentType)
	w.Header().Set("Content-Length", strconv.FormatInt(a.Size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, rc)
	return nil
}

// lenient decodes a JSON object body into its keys; the LangSmith bodies
// accept (and ignore) keys this API does not read.
func lenient(r *http.Request, allowEmpty bool) (map[string]json.RawMessage, error) {
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, web.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", mbe.Limit)
		}
		return nil, web.BadRequest("Could not read the request body")
	}
	if len(bytes.TrimSpace(data)) == 0 && allowEmpty {
		return map[string]json.RawMessage{}, nil
	}
	if err := jsonObject(data); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, web.Invalid(web.Loc("body"), "Input should be a valid dictionary", "model_attributes_type")
	}
	return m, nil
}

// fields reads typed values out of a lenient body, collecting problems.
type fields struct {
	m map[string]json.RawMessage
	p web.Problems
}

func (f *fields) has(k string) bool { raw, ok := f.m[k]; return ok && !isNull(raw) }

func (f *fields) str(k string, max int) *string {
	if !f.has(k) {
		return nil
	}
	var s string
	if json.Unmarshal(f.m[k], &s) != nil {
		f.p.Add(web.Loc("body", k), "Input should be a valid string", "string_type")
		return nil
	}
	if len(s) > max {
		f.p.Add(web.Loc("body", k), fmt.Sprintf("String should have at most %d characters", max), "string_too_long")
		return nil
	}
	return &s
}

func (f *fields) uuid(k string) *string {
	s := f.str(k, 64)
	if s == nil {
		return nil
	}
	id, err := web.ParseUUID(*s)
	if err != nil {
		f.p.Add(web.Loc("body", k), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		return nil
	}
	return &id
}

// uuids reads a list of UUIDs, also accepting a single one.
func (f *fields) uuids(k string) []string {
	if !f.has(k) {
		return nil
	}
	var list []string
	if json.Unmarshal(f.m[k], &list) != nil {
		var one string
		if json.Unmarshal(f.m[k], &one) != nil {
			f.p.Add(web.Loc("body", k), "Input should be a valid list of UUIDs", "list_type")
			return nil
		}
		list = []string{one}
	}
	if len(list) > 1000 {
		f.p.Add(web.Loc("body", k), "At most 1000 values", "too_long")
		return nil
	}
	out := make([]string, 0, len(list))
	for i, s := range list {
		id, err := web.ParseUUID(s)
		if err != nil {
			f.p.Add(web.Loc("body", k, i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
			return nil
		}
		out = append(out, id)
	}
	return out
}

func (f *fields) strings(k string) []string {
	if !f.has(k) {
		return nil
	}
	var list []string
	if json.Unmarshal(f.m[k], &list) != nil {
		f.p.Add(web.Loc("body", k), "Input should be a valid list of strings", "list_type")
		return nil
	}
	return list
}

func (f *fields) boolean(k string) *bool {
	if !f.has(k) {
		return nil
	}
	var b bool
	if json.Unmarshal(f.m[k], &b) != nil {
		var s string
		if json.Unmarshal(f.m[k], &s) == nil {
			if v, err := strconv.ParseBool(strings.ToLower(s)); err == nil {
				return &v
			}
		}
		f.p.Add(web.Loc("body", k), "Input should be a valid boolean", "bool_type")
		return nil
	}
	return &b
}

func (f *fields) integer(k string, min, max int) *int {
	if !f.has(k) {
		return nil
	}
	var n float64
	if json.Unmarshal(f.m[k], &n) != nil || n != float64(int(n)) {
		f.p.Add(web.Loc("body", k), "Input should be a valid integer", "int_type")
		return nil
	}
	v := int(n)
	if v < min || v > max {
		f.p.Add(web.Loc("body", k), fmt.Sprintf("Input should be between %d and %d", min, max), "value_error")
		return nil
	}
	return &v
}

func (f *fields) time(k string) *time.Time {
	if !f.has(k) {
		return nil
	}
	t, ok := parseWireTime(f.m[k])
	if !ok {
		f.p.Add(web.Loc("body", k), "Input should be a valid datetime", "datetime_parsing")
		return nil
	}
	return &t
}

func (f *fields) filter(k string) fql.Expr {
	s := f.str(k, fql.MaxLength)
	if s == nil {
		return nil
	}
	e, err := fql.Parse(*s)
	if err != nil {
		var fe *fql.Error
		if errors.As(err, &fe) {
			f.p.Add(web.Loc("body", k, fe.Pos), "Invalid filter at position "+strconv.Itoa(fe.Pos)+": "+fe.Msg, "value_error")
		}
		return nil
	}
	return e
}

func (f *fields) object(k string) map[string]json.RawMessage {
	if !f.has(k) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(f.m[k], &m) != nil {
		f.p.Add(web.Loc("body", k), "Input should be a valid dictionary", "dict_type")
		return nil
	}
	return m
}

// parseRunQuery reads a /runs/query (or /runs/stats) body.
func parseRunQuery(m map[string]json.RawMessage, forStats bool) (*RunQuery, []string, error) {
	f := &fields{m: m}
	q := &RunQuery{Limit: 100}
	q.IDs = f.uuids("id")
	q.Sessions = f.uuids("session")
	if t := f.uuid("trace"); t != nil {
		q.Trace = *t
	}
	if p := f.uuid("parent_run"); p != nil {
		q.ParentRun = *p
	}
	if rt := f.str("run_type", 32); rt != nil {
		if !validRunType(*rt) {
			f.p.Add(web.Loc("body", "run_type"), "Input should be 'tool', 'chain', 'llm', 'retriever', 'embedding', 'prompt' or 'parser'", "enum")
		}
		q.RunType = *rt
	}
	q.Error = f.boolean("error")
	q.IsRoot = f.boolean("is_root")
	if eo := f.integer("execution_order", 1, 1<<30); eo != nil && *eo == 1 && q.IsRoot == nil {
		t := true
		q.IsRoot = &t
	}
	q.StartTime = f.time("start_time")
	q.EndTime = f.time("end_time")
	q.ReferenceExamples = f.uuids("reference_example")
	q.Filter = f.filter("filter")
	q.TraceFilter = f.filter("trace_filter")
	q.TreeFilter = f.filter("tree_filter")
	if text := f.str("query", 4096); text != nil && strings.TrimSpace(*text) != "" {
		// A free-text query is a search over the run.
		c := &fql.Cond{Op: fql.Search, Value: fql.Value{Kind: fql.VString, Str: *text}}
		if q.Filter == nil {
			q.Filter = c
		} else {
			q.Filter = &fql.Logical{Op: fql.And, Args: []fql.Expr{q.Filter, c}}
		}
	}
	sel := f.strings("select")
	if !forStats {
		if l := f.integer("limit", 1, 1<<30); l != nil {
			q.Limit = min(*l, 100)
		}
		if o := f.str("order", 8); o != nil {
			switch strings.ToLower(*o) {
			case "asc":
				q.Asc = true
			case "desc":
			default:
				f.p.Add(web.Loc("body", "order"), "Input should be 'asc' or 'desc'", "enum")
			}
		}
		if c := f.str("cursor", 1024); c != nil {
			q.Cursor = *c
		}
	}
	return q, sel, f.p.Err()
}

func (h *Handler) query(w http.ResponseWriter, r *http.Request) error {
	body, err := lenient(r, true)
	if err != nil {
		return err
	}
	q, sel, err := parseRunQuery(body, false)
	if err != nil {
		return err
	}
	c := caller(r)
	runs, next, _, err := h.s.queryRuns(r.Context(), c.WorkspaceID, q)
	if err != nil {
		return mapErr(err)
	}
	views, err := h.s.newViewer(c.OrganizationID, sel).views(r.Context(), runs)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, RunPage{Runs: views, Cursors: map[string]any{"next": nullable(next), "prev": nil}})
	return nil
}

func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	body, err := lenient(r, true)
	if err != nil {
		return err
	}
	q, _, err := parseRunQuery(body, true)
	if err != nil {
		return err
	}
	st, err := h.s.runStats(r.Context(), caller(r).WorkspaceID, q)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, st)
	return nil
}

func queryInts(r *http.Request, defLimit, maxLimit int) (int, int, error) {
	limit, err := web.QueryInt(r, "limit", defLimit, 1, maxLimit)
	if err != nil {
		return 0, 0, err
	}
	offset, err := web.QueryInt(r, "offset", 0, 0, 1<<20)
	return limit, offset, err
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) error {
	qs := r.URL.Query()
	var p web.Problems
	q := ProjectQuery{Name: qs.Get("name"), NameContains: qs.Get("name_contains"), SortBy: "start_time", Desc: true}
	for i, id := range qs["id"] {
		u, err := web.ParseUUID(id)
		if err != nil {
			p.Add(web.Loc("query", "id", i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
			continue
		}
		q.IDs = append(q.IDs, u)
	}
	if d := qs.Get("reference_dataset"); d != "" {
		u, err := web.ParseUUID(d)
		if err != nil {
			p.Add(web.Loc("query", "reference_dataset"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		q.ReferenceDataset = u
	}
	if qs.Get("reference_free") != "" {
		b, err := web.QueryBool(r, "reference_free", false)
		if err != nil {
			return err
		}
		q.ReferenceFree = &b
	}
	stats, err := web.QueryBool(r, "include_stats", false)
	if err != nil {
		return err
	}
	if sb := qs.Get("sort_by"); sb != "" {
		if sb != "name" && sb != "start_time" {
			p.Add(web.Loc("query", "sort_by"), "Input should be 'start_time' or 'name'", "enum")
		}
		q.SortBy = sb
	}
	if q.Desc, err = web.QueryBool(r, "sort_by_desc", q.SortBy != "name"); err != nil {
		return err
	}
	if md := qs.Get("metadata"); md != "" {
		if json.Unmarshal([]byte(md), &q.Metadata) != nil {
			p.Add(web.Loc("query", "metadata"), "Input should be a JSON object", "json_invalid")
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	if q.Limit, q.Offset, err = queryInts(r, 100, 1000); err != nil {
		return err
	}
	ws := caller(r).WorkspaceID
	ps, err := h.s.listProjects(r.Context(), ws, q)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(ps))
	err = parallel(r.Context(), len(ps), func(i int) error {
		var st *ProjectStats
		if stats {
			var err error
			if st, err = h.s.projectStats(r.Context(), ws, ps[i].ID); err != nil {
				return err
			}
		}
		out[i] = projectView(ps[i], st)
		return nil
	})
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

// projectBody reads the fields POST and PATCH /sessions share.
func projectBody(f *fields) (desc *string, extra map[string]json.RawMessage, end *time.Time, dataset *string, days int) {
	desc = f.str("description", 64<<10)
	extra = f.object("extra")
	end = f.time("end_time")
	dataset = f.uuid("default_dataset_id")
	if t := f.str("trace_tier", 16); t != nil {
		switch *t {
		case TierLong:
			days = MaxRetentionDays
		case TierShort:
			days = 14
		default:
			f.p.Add(web.Loc("body", "trace_tier"), "Input should be 'longlived' or 'shortlived'", "enum")
		}
	}
	if d := f.integer("retention_days", 1, MaxRetentionDays); d != nil {
		days = *d
	}
	return
}

func (h *Handler) createSession(w http.ResponseWriter, r *http.Request) error {
	upsert, err := web.QueryBool(r, "upsert", false)
	if err != nil {
		return err
	}
	body, err := lenient(r, false)
	if err != nil {
		return err
	}
	f := &fields{m: body}
	name := f.str("name", maxNameLen)
	if name == nil || strings.TrimSpace(*name) == "" {
		if f.p.Len() == 0 {
			f.p.Add(web.Loc("body", "name"), "Field required", "missing")
		}
	}
	c := ProjectCreate{ReferenceDatasetID: f.uuid("reference_dataset_id"), StartTime: f.time("start_time")}
	if id := f.uuid("id"); id != nil {
		c.ID = *id
	}
	c.Description, c.Extra, c.EndTime, c.DefaultDatasetID, c.RetentionDays = projectBody(f)
	if err := f.p.Err(); err != nil {
		return err
	}
	c.Name = *name
	ws := caller(r).WorkspaceID
	p, err := h.s.createProject(r.Context(), ws, c)
	if errors.Is(err, ErrConflict) && upsert {
		p, err = h.s.projectByName(r.Context(), ws, c.Name)
		if err == nil && (c.Description != nil || c.Extra != nil || c.EndTime != nil) {
			p, err = h.s.patchProject(r.Context(), ws, p.ID, ProjectPatch{Description: c.Description, Extra: c.Extra, EndTime: c.EndTime})
		}
	}
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, projectView(p, nil))
	return nil
}

func (h *Handler) getSession(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "session_id")
	if err != nil {
		return err
	}
	stats, err := web.QueryBool(r, "include_stats", false)
	if err != nil {
		return err
	}
	ws := caller(r).WorkspaceID
	p, err := h.s.getProject(r.Context(), ws, id)
	if err != nil {
		return mapErr(err)
	}
	var st *ProjectStats
	if stats {
		if st, err = h.s.projectStats(r.Context(), ws, id); err != nil {
			return err
		}
	}
	web.WriteJSON(w, http.StatusOK, projectView(p, st))
	return nil
}

func (h *Handler) patchSession(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "session_id")
	if err != nil {
		return err
	}
	body, err := lenient(r, true)
	if err != nil {
		return err
	}
	f := &fields{m: body}
	var u ProjectPatch
	u.Name = f.str("name", maxNameLen)
	if u.Name != nil && strings.TrimSpace(*u.Name) == "" {
		f.p.Add(web.Loc("body", "name"), "String should have at least 1 character", "string_too_short")
	}
	u.Description, u.Extra, u.EndTime, u.DefaultDatasetID, u.RetentionDays = projectBody(f)
	if err := f.p.Err(); err != nil {
		return err
	}
	p, err := h.s.patchProject(r.Context(), caller(r).WorkspaceID, id, u)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, projectView(p, nil))
	return nil
}

func (h *Handler) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "session_id")
	if err != nil {
		return err
	}
	if err := h.s.deleteProject(r.Context(), caller(r).WorkspaceID, id); err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusAccepted, map[string]string{"message": "Project " + id + " deleted; its runs are being removed"})
	return nil
}

func (h *Handler) listThreads(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "session_id")
	if err != nil {
		return err
	}
	limit, offset, err := queryInts(r, 20, 100)
	if err != nil {
		return err
	}
	ws := caller(r).WorkspaceID
	if _, err := h.s.getProject(r.Context(), ws, id); err != nil {
		return mapErr(err)
	}
	ts, err := h.s.listThreads(r.Context(), ws, id, limit, offset)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, ts)
	return nil
}

func (h *Handler) threadRuns(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "session_id")
	if err != nil {
		return err
	}
	thread := r.PathValue("thread_id")
	if thread == "" || len(thread) > maxThreadIDLen {
		return web.Invalid(web.Loc("path", "thread_id"), "A thread id has 1 to 256 characters", "value_error")
	}
	limit, err := web.QueryInt(r, "limit", 100, 1, 100)
	if err != nil {
		return err
	}
	q := &RunQuery{Sessions: []string{id}, Limit: limit, Asc: true, Cursor: r.URL.Query().Get("cursor"),
		Filter: &fql.Cond{Op: fql.Eq, Field: "thread_id", Value: fql.Value{Kind: fql.VString, Str: thread}}}
	switch strings.ToLower(r.URL.Query().Get("order")) {
	case "", "asc":
	case "desc":
		q.Asc = false
	default:
		return web.Invalid(web.Loc("query", "order"), "Input should be 'asc' or 'desc'", "enum")
	}
	c := caller(r)
	if _, err := h.s.getProject(r.Context(), c.WorkspaceID, id); err != nil {
		return mapErr(err)
	}
	runs, next, _, err := h.s.queryRuns(r.Context(), c.WorkspaceID, q)
	if errors.Is(err, ErrBadCursor) {
		return web.Invalid(web.Loc("query", "cursor"), "Invalid cursor", "value_error")
	}
	if err != nil {
		return mapErr(err)
	}
	views, err := h.s.newViewer(c.OrganizationID, r.URL.Query()["select"]).views(r.Context(), runs)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, RunPage{Runs: views, Cursors: map[string]any{"next": nullable(next), "prev": nil}})
	return nil
}

func (h *Handler) createFeedback(w http.ResponseWriter, r *http.Request) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, web.MaxBodyBytes))
	if err != nil {
		return web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", web.MaxBodyBytes)
	}
	var p web.Problems
	if err := jsonObject(data); err != nil {
		return err
	}
	fc := parseFeedbackCreate(data, "", web.Loc("body"), &p)
	if err := p.Err(); err != nil {
		return err
	}
	f, err := h.s.createFeedback(r.Context(), caller(r).WorkspaceID, fc)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, f.view())
	return nil
}

func (h *Handler) listFeedback(w http.ResponseWriter, r *http.Request) error {
	qs := r.URL.Query()
	var p web.Problems
	q := FeedbackQuery{Keys: qs["key"], Sources: qs["source"]}
	for _, name := range []string{"run", "session"} {
		for i, v := range qs[name] {
			u, err := web.ParseUUID(v)
			if err != nil {
				p.Add(web.Loc("query", name, i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
				continue
			}
			if name == "run" {
				q.Runs = append(q.Runs, u)
			} else {
				q.Sessions = append(q.Sessions, u)
			}
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	var err error
	if q.Limit, q.Offset, err = queryInts(r, 100, 100); err != nil {
		return err
	}
	fs, err := h.s.listFeedback(r.Context(), caller(r).WorkspaceID, q)
	if err != nil {
		return err
	}
	out := make([]Feedback, len(fs))
	for i, f := range fs {
		out[i] = f.view()
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) getFeedback(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "feedback_id")
	if err != nil {
		return err
	}
	f, _, err := h.s.loadFeedback(r.Context(), caller(r).WorkspaceID, id)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, f.view())
	return nil
}

func (h *Handler) patchFeedback(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "feedback_id")
	if err != nil {
		return err
	}
	body, err := lenient(r, true)
	if err != nil {
		return err
	}
	f := &fields{m: body}
	fp := &fieldParser{p: &f.p, loc: web.Loc("body")}
	u := &FeedbackUpdate{}
	if raw, ok := body["score"]; ok {
		if isNull(raw) {
			u.ClearScore = true
		} else {
			u.Score = fp.score(raw)
		}
	}
	if raw, ok := body["value"]; ok {
		u.Value = rawOrNull(raw)
	}
	if raw, ok := body["correction"]; ok {
		u.Correction = rawOrNull(raw)
	}
	if raw, ok := body["comment"]; ok {
		if isNull(raw) {
			u.ClearComment = true
		} else {
			u.Comment = f.str("comment", 64<<10)
		}
	}
	if err := f.p.Err(); err != nil {
		return err
	}
	fr, err := h.s.changeFeedback(r.Context(), caller(r).WorkspaceID, id, u)
	if err != nil {
		return mapErr(err)
	}
	web.WriteJSON(w, http.StatusOK, fr.view())
	return nil
}

func rawOrNull(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage("null")
	}
	return append(json.RawMessage(nil), bytes.TrimSpace(raw)...)
}

func (h *Handler) deleteFeedback(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "feedback_id")
	if err != nil {
		return err
	}
	if _, err := h.s.changeFeedback(r.Context(), caller(r).WorkspaceID, id, nil); err != nil {
		return mapErr(err)
	}
	web.NoContent(w)
	return nil
}
