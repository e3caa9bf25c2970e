// Package platformtest is a test double of the platform API the tool
// server calls: an HTTP server answering the LangSmith REST shapes
// (POST /runs/query, GET /sessions, /datasets, /examples, /examples/{id},
// /repos/, /commits/{owner}/{repo}/{ref}, billing usage and workspaces)
// from data held in memory, per API key, with real filtering. Only tests
// use it; the tool server's product path always calls a real platform.
package platformtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Tenant is one API key's data: a workspace (all data lives in it), the
// organization's workspaces (for billing names) and the objects, as JSON
// objects in the platform's shapes.
type Tenant struct {
	WorkspaceID string
	// Workspaces are the organization's workspaces: {"id", "display_name"}.
	Workspaces []map[string]any
	Projects   []map[string]any
	Runs       []map[string]any
	Datasets   []map[string]any
	Examples   []*Example
	// Tags name dataset versions: dataset id → tag → time.
	Tags    map[string]map[string]time.Time
	Repos   []map[string]any
	Commits map[string][]map[string]any // repo handle → commits, newest first
	// Usage are billing metrics, each with "period_start" and "groups".
	Usage []map[string]any
}

// Example is a dataset example with its history: each version holds the
// example's fields from its time on.
type Example struct {
	ID        string
	DatasetID string
	Versions  []ExampleVersion // oldest first
}

// ExampleVersion is an example's state from At on; Deleted ends it.
type ExampleVersion struct {
	At       time.Time
	Inputs   map[string]any
	Outputs  map[string]any
	Metadata map[string]any
	Deleted  bool
	// AttachmentURLs, when set, answers the attachment_urls select.
	AttachmentURLs map[string]any
}

// Request is one call the double received.
type Request struct {
	Method, Path string
	Query        url.Values
	Body         map[string]any
	APIKey       string
	Workspace    string
}

// Server is the double. Its handler is safe for concurrent use.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	tenants  map[string]*Tenant
	requests []Request
	// Fault, when set, may answer a request itself (returning true):
	// errors, slow answers, odd bodies.
	fault func(w http.ResponseWriter, r *http.Request) bool
	// maxPage, when positive, caps the runs of one /runs/query answer
	// (the rest follow through cursors.next).
	maxPage int
}

// SetMaxPage caps the runs of one /runs/query answer (0: the request's
// limit).
func (s *Server) SetMaxPage(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxPage = n
}

// New starts the double on 127.0.0.1 with the given tenants (by API key).
func New(tenants map[string]*Tenant) *Server {
	s := &Server{tenants: tenants}
	s.Server = httptest.NewServer(s)
	return s
}

// SetFault installs (or, with nil, removes) a fault.
func (s *Server) SetFault(f func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests returns the calls received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func detail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"detail": fmt.Sprintf(format, args...)})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	fault := s.fault
	s.mu.Unlock()
	if fault != nil && fault(w, r) {
		return
	}
	key := r.Header.Get("X-Api-Key")
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), APIKey: key, Workspace: r.Header.Get("X-Tenant-Id")}
	if r.Method == http.MethodPost {
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			detail(w, http.StatusUnprocessableEntity, "body is not a JSON object")
			return
		}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	t := s.tenants[key]
	s.mu.Unlock()
	if key == "" || t == nil {
		detail(w, http.StatusUnauthorized, "Invalid API key")
		return
	}
	if ws := req.Workspace; ws != "" && ws != t.WorkspaceID {
		detail(w, http.StatusForbidden, "This API key cannot access workspace %s", ws)
		return
	}
	path := r.URL.Path
	if !strings.HasPrefix(path, "/api/v1/orgs/") && !strings.HasPrefix(path, "/api/v1/workspaces") {
		path = strings.TrimPrefix(path, "/api/v1")
	}
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && path == "/runs/query":
		s.queryRuns(w, t, req.Body)
	case r.Method != http.MethodGet:
		detail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	case path == "/sessions":
		s.sessions(w, t, q)
	case path == "/datasets":
		s.datasets(w, t, q)
	case path == "/examples":
		s.examples(w, t, q)
	case strings.HasPrefix(path, "/examples/"):
		s.example(w, t, strings.TrimPrefix(path, "/examples/"), q)
	case path == "/repos/" || path == "/repos":
		s.repos(w, t, q)
	case strings.HasPrefix(path, "/commits/"):
		s.commit(w, t, strings.Split(strings.TrimPrefix(path, "/commits/"), "/"))
	case path == "/api/v1/orgs/current/billing/usage":
		s.usage(w, t, q)
	case path == "/api/v1/workspaces":
		writeJSON(w, http.StatusOK, orEmpty(t.Workspaces))
	default:
		detail(w, http.StatusNotFound, "Not Found")
	}
}

func orEmpty(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

// page applies limit and offset (limit default 100, at most 100).
func page(q url.Values, items []map[string]any) ([]map[string]any, error) {
	limit, offset := 100, 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("limit must be 1..100")
		}
		limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("offset must be ≥ 0")
		}
		offset = n
	}
	if offset >= len(items) {
		return []map[string]any{}, nil
	}
	return items[offset:min(len(items), offset+limit)], nil
}

func boolParam(q url.Values, name string) (*bool, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(strings.ToLower(v))
	if err != nil {
		return nil, fmt.Errorf("%s must be a boolean", name)
	}
	return &b, nil
}

func (s *Server) queryRuns(w http.ResponseWriter, t *Tenant, body map[string]any) {
	var filters []*expr
	for _, k := range []string{"filter", "trace_filter", "tree_filter"} {
		f, _ := body[k].(string)
		if f == "" {
			filters = append(filters, nil)
			continue
		}
		e, err := parseFilter(f)
		if err != nil {
			detail(w, http.StatusBadRequest, "Invalid %s: %v", k, err)
			return
		}
		filters = append(filters, e)
	}
	strs := func(k string) []string {
		l, _ := body[k].([]any)
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	sessions, refs := strs("session"), strs("reference_example")
	trace, _ := body["trace"].(string)
	runType, _ := body["run_type"].(string)
	var matched []map[string]any
	for _, r := range t.Runs {
		switch {
		case len(sessions) > 0 && !contains(sessions, r["session_id"]):
		case trace != "" && r["trace_id"] != trace:
		case runType != "" && r["run_type"] != runType:
		case len(refs) > 0 && !contains(refs, r["reference_example_id"]):
		case body["error"] != nil && body["error"] != (r["error"] != nil && r["error"] != ""):
		case body["is_root"] != nil && body["is_root"] != (r["parent_run_id"] == nil):
		case filters[0] != nil && !matchRun(filters[0], r):
		case filters[1] != nil && !matchRun(filters[1], t.root(r)):
		case filters[2] != nil && !t.anyInTrace(r, filters[2]):
		default:
			matched = append(matched, r)
		}
	}
	desc := body["order"] != "asc"
	sort.SliceStable(matched, func(i, j int) bool {
		a, b := matched[i]["start_time"].(string), matched[j]["start_time"].(string)
		if desc {
			return a > b
		}
		return a < b
	})
	offset := 0
	if c, _ := body["cursor"].(string); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 {
			detail(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
		offset = n
	}
	limit := 100
	if l, ok := body["limit"].(float64); ok {
		if l < 1 || l > 100 {
			detail(w, http.StatusUnprocessableEntity, "limit must be 1..100")
			return
		}
		limit = int(l)
	}
	s.mu.Lock()
	if s.maxPage > 0 {
		limit = min(limit, s.maxPage)
	}
	s.mu.Unlock()
	var next any
	runs := []map[string]any{}
	if offset < len(matched) {
		end := min(len(matched), offset+limit)
		for _, r := range matched[offset:end] {
			runs = append(runs, selectFields(r, strs("select")))
		}
		if end < len(matched) {
			next = strconv.Itoa(end)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs, "cursors": map[string]any{"next": next, "prev": nil}})
}

func contains(list []string, v any) bool {
	s, _ := v.(string)
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func selectFields(r map[string]any, sel []string) map[string]any {
	if len(sel) == 0 {
		return r
	}
	out := map[string]any{"id": r["id"]}
	for _, f := range sel {
		if v, ok := r[f]; ok {
			out[f] = v
		}
	}
	return out
}

func (t *Tenant) root(r map[string]any) map[string]any {
	for _, x := range t.Runs {
		if x["id"] == r["trace_id"] {
			return x
		}
	}
	return r
}

func (t *Tenant) anyInTrace(r map[string]any, e *expr) bool {
	for _, x := range t.Runs {
		if x["trace_id"] == r["trace_id"] && matchRun(e, x) {
			return true
		}
	}
	return false
}

func (s *Server) sessions(w http.ResponseWriter, t *Tenant, q url.Values) {
	free, err := boolParam(q, "reference_free")
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	stats, err := boolParam(q, "include_stats")
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	var out []map[string]any
	for _, p := range t.Projects {
		name, _ := p["name"].(string)
		switch {
		case q.Has("id") && !contains(q["id"], p["id"]):
		case q.Get("name") != "" && name != q.Get("name"):
		case q.Get("name_contains") != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(q.Get("name_contains"))):
		case q.Get("reference_dataset") != "" && p["reference_dataset_id"] != q.Get("reference_dataset"):
		case free != nil && *free != (p["reference_dataset_id"] == nil):
		default:
			c := map[string]any{"tenant_id": t.WorkspaceID, "reference_dataset_id": nil}
			for k, v := range p {
				if (stats == nil || !*stats) && (strings.HasPrefix(k, "latency_") || strings.HasSuffix(k, "_cost") || k == "feedback_stats") {
					continue
				}
				c[k] = v
			}
			out = append(out, c)
		}
	}
	res, err := page(q, orEmpty(out))
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func subset(want, have map[string]any) bool {
	for k, v := range want {
		if !same(have[k], v) {
			return false
		}
	}
	return true
}

func (s *Server) datasets(w http.ResponseWriter, t *Tenant, q url.Values) {
	var meta map[string]any
	if m := q.Get("metadata"); m != "" {
		if err := json.Unmarshal([]byte(m), &meta); err != nil {
			detail(w, http.StatusUnprocessableEntity, "metadata must be a JSON object")
			return
		}
	}
	var out []map[string]any
	for _, d := range t.Datasets {
		name, _ := d["name"].(string)
		dm, _ := d["metadata"].(map[string]any)
		switch {
		case q.Has("id") && !contains(q["id"], d["id"]):
		case q.Get("name") != "" && name != q.Get("name"):
		case q.Get("name_contains") != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(q.Get("name_contains"))):
		case q.Get("data_type") != "" && d["data_type"] != q.Get("data_type"):
		case meta != nil && !subset(meta, dm):
		default:
			out = append(out, d)
		}
	}
	res, err := page(q, orEmpty(out))
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// asOf resolves as_of: empty is now, else a tag of the dataset or an ISO
// time.
func (t *Tenant) asOf(datasetID, v string) (time.Time, error) {
	if v == "" || v == "latest" {
		return time.Now().Add(time.Hour), nil
	}
	if at, ok := t.Tags[datasetID][v]; ok {
		return at, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02"} {
		if at, err := time.Parse(layout, v); err == nil {
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("as_of must be a version tag or an ISO 8601 time: %q", v)
}

// at is the example as of a time, or nil when it did not exist then.
func (e *Example) at(when time.Time, attachments bool) map[string]any {
	var cur *ExampleVersion
	for i := range e.Versions {
		if !e.Versions[i].At.After(when) {
			cur = &e.Versions[i]
		}
	}
	if cur == nil || cur.Deleted {
		return nil
	}
	out := map[string]any{
		"id": e.ID, "dataset_id": e.DatasetID, "inputs": cur.Inputs, "outputs": cur.Outputs,
		"metadata": cur.Metadata, "created_at": e.Versions[0].At.UTC().Format("2006-01-02T15:04:05.000000"),
		"modified_at": cur.At.UTC().Format("2006-01-02T15:04:05.000000"), "source_run_id": nil,
	}
	if attachments && cur.AttachmentURLs != nil {
		out["attachment_urls"] = cur.AttachmentURLs
	}
	return out
}

func (s *Server) examples(w http.ResponseWriter, t *Tenant, q url.Values) {
	if f := q.Get("filter"); f != "" {
		detail(w, http.StatusBadRequest, "Invalid filter: unsupported expression %q", f)
		return
	}
	var meta map[string]any
	if m := q.Get("metadata"); m != "" {
		if err := json.Unmarshal([]byte(m), &meta); err != nil {
			detail(w, http.StatusUnprocessableEntity, "metadata must be a JSON object")
			return
		}
	}
	ds := q.Get("dataset")
	when, err := t.asOf(ds, q.Get("as_of"))
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	attachments := contains(q["select"], "attachment_urls")
	var out []map[string]any
	for _, e := range t.Examples {
		if (ds != "" && e.DatasetID != ds) || (q.Has("id") && !contains(q["id"], e.ID)) {
			continue
		}
		x := e.at(when, attachments)
		if x == nil {
			continue
		}
		m, _ := x["metadata"].(map[string]any)
		if meta != nil && !subset(meta, m) {
			continue
		}
		if q.Has("splits") && !contains(q["splits"], m["dataset_split"]) {
			continue
		}
		out = append(out, x)
	}
	res, err := page(q, orEmpty(out))
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) example(w http.ResponseWriter, t *Tenant, id string, q url.Values) {
	for _, e := range t.Examples {
		if e.ID != id {
			continue
		}
		when, err := t.asOf(e.DatasetID, q.Get("as_of"))
		if err != nil {
			detail(w, http.StatusUnprocessableEntity, "%v", err)
			return
		}
		if x := e.at(when, true); x != nil {
			writeJSON(w, http.StatusOK, x)
			return
		}
	}
	detail(w, http.StatusNotFound, "Example %s not found", id)
}

func (s *Server) repos(w http.ResponseWriter, t *Tenant, q url.Values) {
	public, err := boolParam(q, "is_public")
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	archived, err := boolParam(q, "is_archived")
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	var out []map[string]any
	for _, r := range t.Repos {
		switch {
		case public != nil && r["is_public"] != *public:
		case archived != nil && r["is_archived"] != *archived:
		default:
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i]["updated_at"].(string), out[j]["updated_at"].(string)
		if q.Get("sort_direction") == "asc" {
			return a < b
		}
		return a > b
	})
	res, err := page(q, orEmpty(out))
	if err != nil {
		detail(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"repos": res, "total": len(out)})
}

func (s *Server) commit(w http.ResponseWriter, t *Tenant, parts []string) {
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		detail(w, http.StatusNotFound, "Not Found")
		return
	}
	owner, repo, ref := parts[0], parts[1], parts[2]
	var found map[string]any
	for _, r := range t.Repos {
		if r["repo_handle"] == repo && (owner == "-" || r["owner"] == owner) {
			found = r
		}
	}
	commits := t.Commits[repo]
	if found == nil || len(commits) == 0 {
		detail(w, http.StatusNotFound, "Prompt %s/%s not found", owner, repo)
		return
	}
	for _, c := range commits {
		h, _ := c["commit_hash"].(string)
		if ref == "latest" || strings.HasPrefix(h, ref) {
			writeJSON(w, http.StatusOK, map[string]any{"commit_hash": h, "manifest": c["manifest"], "examples": []any{}})
			return
		}
	}
	detail(w, http.StatusNotFound, "Commit %s not found", ref)
}

func (s *Server) usage(w http.ResponseWriter, t *Tenant, q url.Values) {
	from, err1 := time.Parse(time.RFC3339, q.Get("starting_on"))
	to, err2 := time.Parse(time.RFC3339, q.Get("ending_before"))
	if err1 != nil || err2 != nil {
		detail(w, http.StatusUnprocessableEntity, "starting_on and ending_before must be ISO 8601 date-times")
		return
	}
	out := []map[string]any{}
	for _, u := range t.Usage {
		start, _ := time.Parse(time.RFC3339, fmt.Sprint(u["period_start"]))
		if !start.Before(from) && start.Before(to) {
			out = append(out, u)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
