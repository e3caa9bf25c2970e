package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver/charpages"
)

// maxRuns is the most runs one tool call reads (the platform's page limit
// and the original server's bound).
const maxRuns = 100

// maxListLimit bounds the list tools' limits: a call pages through the
// platform at 100 items a request, inside its deadline.
const maxListLimit = 1000

// runSelect is the SDKs' default select of POST /runs/query.
var runSelect = []string{
	"app_path", "completion_cost", "completion_tokens", "dotted_order", "end_time", "error", "events",
	"extra", "feedback_stats", "first_token_time", "id", "inputs", "name", "outputs", "parent_run_id",
	"parent_run_ids", "prompt_cost", "prompt_tokens", "reference_example_id", "run_type", "session_id",
	"start_time", "status", "tags", "total_cost", "total_tokens", "trace_id",
}

// pageMeta is the envelope of a character-paginated answer.
type pageMeta struct {
	PageNumber       int    `json:"page_number"`
	TotalPages       int    `json:"total_pages"`
	MaxCharsPerPage  int    `json:"max_chars_per_page"`
	PreviewChars     int    `json:"preview_chars"`
	Truncated        bool   `json:"_truncated,omitempty"`
	TruncatedMessage string `json:"_truncated_message,omitempty"`
}

func metaOf(p charpages.Page) pageMeta {
	m := pageMeta{PageNumber: p.PageNumber, TotalPages: p.TotalPages, MaxCharsPerPage: p.MaxChars, PreviewChars: p.PreviewChars}
	if p.Truncated {
		m.Truncated, m.TruncatedMessage = true, charpages.TruncatedMessage
	}
	return m
}

// pageJSON assembles a paginated answer from its encoded items:
// {"<key>": [items], "page_number", "total_pages", ...}.
func pageJSON(key string, items []json.RawMessage, m pageMeta) (rawResult, error) {
	meta, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	n := len(key) + len(meta) + 8
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"`...)
	b = append(b, key...)
	b = append(b, `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, "],"...)
	b = append(b, meta[1:]...) // the envelope's fields, after its "{"
	return b, nil
}

// resolveProject finds a project's id by its exact name.
func (p *platform) resolveProject(ctx context.Context, name string) (string, error) {
	var sessions []map[string]any
	q := url.Values{"name": {name}, "limit": {"1"}, "include_stats": {"false"}}
	if err := p.get(ctx, "/sessions", q, &sessions); err != nil {
		return "", err
	}
	for _, s := range sessions {
		if s["name"] == name {
			if id, _ := s["id"].(string); id != "" {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("project %q not found", name)
}

// resolveDataset finds a dataset's id by its exact name.
func (p *platform) resolveDataset(ctx context.Context, name string) (string, error) {
	d, err := p.datasetBy(ctx, url.Values{"name": {name}})
	if err != nil {
		return "", err
	}
	id, _ := d["id"].(string)
	return id, nil
}

// datasetBy reads the one dataset GET /datasets?<q>&limit=1 answers.
func (p *platform) datasetBy(ctx context.Context, q url.Values) (map[string]any, error) {
	q.Set("limit", "1")
	q.Set("offset", "0")
	var list []map[string]any
	if err := p.get(ctx, "/datasets", q, &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		what := q.Get("name")
		if what == "" {
			what = q.Get("id")
		}
		return nil, fmt.Errorf("dataset %q not found", what)
	}
	return list[0], nil
}

// queryRuns posts body to /runs/query and follows cursors.next until it
// holds limit runs, the platform has no more, or a page is empty.
func (p *platform) queryRuns(ctx context.Context, body map[string]any, limit int) ([]any, error) {
	var runs []any
	for i := 0; i < maxRuns && len(runs) < limit; i++ {
		body["limit"] = min(limit-len(runs), maxRuns)
		var page struct {
			Runs    []any `json:"runs"`
			Cursors struct {
				Next any `json:"next"`
			} `json:"cursors"`
		}
		if err := p.post(ctx, "/runs/query", body, &page); err != nil {
			return nil, err
		}
		runs = append(runs, page.Runs...)
		next, _ := page.Cursors.Next.(string)
		if len(page.Runs) == 0 || next == "" {
			break
		}
		body["cursor"] = next
	}
	if len(runs) > limit {
		runs = runs[:limit]
	}
	return runs, nil
}

// listArray reads up to limit items of a bare-array list endpoint
// (/sessions, /datasets, /examples), 100 a request from offset, stopping
// at a short page.
func (p *platform) listArray(ctx context.Context, path string, q url.Values, limit, offset int) ([]map[string]any, error) {
	var out []map[string]any
	for len(out) < limit {
		n := min(limit-len(out), 100)
		q.Set("limit", strconv.Itoa(n))
		q.Set("offset", strconv.Itoa(offset+len(out)))
		var page []map[string]any
		if err := p.get(ctx, path, q, &page); err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < n {
			break
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

type threadHistoryIn struct {
	ThreadID        string `json:"thread_id"`
	ProjectName     string `json:"project_name"`
	PageNumber      int    `json:"page_number"`
	MaxCharsPerPage int    `json:"max_chars_per_page"`
	PreviewChars    int    `json:"preview_chars"`
}

// threadFilter is the filter of a thread's runs: the thread id in any of
// the three metadata keys that name a conversation.
func threadFilter(id string) (string, error) {
	if strings.ContainsAny(id, "\"\\") || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", errors.New("thread_id must not contain quotes, backslashes or control characters")
	}
	return `and(in(metadata_key, ["session_id","conversation_id","thread_id"]), eq(metadata_value, "` + id + `"))`, nil
}

func (s *Service) getThreadHistory(ctx context.Context, p *platform, in threadHistoryIn) (toolResult, error) {
	filter, err := threadFilter(in.ThreadID)
	if err != nil {
		return nil, err
	}
	project, err := p.resolveProject(ctx, in.ProjectName)
	if err != nil {
		return nil, fmt.Errorf("Error fetching thread history: %w", err)
	}
	runs, err := p.queryRuns(ctx, map[string]any{
		"session": []string{project}, "run_type": "llm", "filter": filter, "select": runSelect,
	}, maxRuns)
	if err != nil {
		return nil, fmt.Errorf("Error fetching thread history: %w", err)
	}
	if len(runs) == 0 {
		//lint:ignore ST1005 the original server's message, kept for clients that match it
		return nil, fmt.Errorf("No runs found for thread %s in project %s", in.ThreadID, in.ProjectName)
	}
	sortByStart(runs)
	var messages []any
	for _, r := range runs {
		messages = appendMessages(messages, r)
	}
	if len(messages) == 0 {
		//lint:ignore ST1005 the original server's message, kept for clients that match it
		return nil, fmt.Errorf("No messages found in the runs for thread %s", in.ThreadID)
	}
	page, err := charpages.Paginate(messages, in.PageNumber, in.MaxCharsPerPage, in.PreviewChars)
	if err != nil {
		return nil, err
	}
	return pageJSON("result", page.Items, metaOf(page))
}

// appendMessages adds a run's messages: all of inputs.messages as they
// are, then the output message (outputs.choices[0].message, else
// outputs.message).
func appendMessages(out []any, run any) []any {
	r, _ := run.(map[string]any)
	if inputs, ok := r["inputs"].(map[string]any); ok {
		if ms, ok := inputs["messages"].([]any); ok {
			out = append(out, ms...)
		}
	}
	outputs, ok := r["outputs"].(map[string]any)
	if !ok {
		return out
	}
	if choices, ok := outputs["choices"]; ok {
		if list, ok := choices.([]any); ok && len(list) > 0 {
			if c, ok := list[0].(map[string]any); ok {
				if m, ok := c["message"]; ok {
					out = append(out, m)
				}
			}
		}
		return out
	}
	if m, ok := outputs["message"]; ok {
		out = append(out, m)
	}
	return out
}

// sortByStart orders runs by start_time, oldest first, runs without one
// first; equal times keep the platform's order.
func sortByStart(runs []any) {
	type key struct {
		run  any
		set  bool
		at   time.Time
		text string
	}
	keys := make([]key, len(runs))
	for i, r := range runs {
		m, _ := r.(map[string]any)
		s, _ := m["start_time"].(string)
		keys[i] = key{run: r, set: s != "", text: s}
		if s != "" {
			keys[i].at, _ = parseTime(s)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if !a.set || !b.set {
			return !a.set && b.set
		}
		if !a.at.IsZero() && !b.at.IsZero() {
			return a.at.Before(b.at)
		}
		return a.text < b.text
	})
	for i, k := range keys {
		runs[i] = k.run
	}
}

// parseTime reads the platform's ISO 8601 times, with or without a zone
// (the LangSmith API writes naive UTC times).
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO 8601 time: %q", s)
}

type fetchRunsIn struct {
	ProjectName        string  `json:"project_name"`
	Limit              int     `json:"limit"`
	PageNumber         int     `json:"page_number"`
	TraceID            *string `json:"trace_id"`
	RunType            *string `json:"run_type"`
	Error              *string `json:"error"`
	IsRoot             *string `json:"is_root"`
	Filter             *string `json:"filter"`
	TraceFilter        *string `json:"trace_filter"`
	TreeFilter         *string `json:"tree_filter"`
	OrderBy            string  `json:"order_by"`
	ReferenceExampleID *string `json:"reference_example_id"`
	MaxCharsPerPage    int     `json:"max_chars_per_page"`
	PreviewChars       int     `json:"preview_chars"`
}

func (s *Service) fetchRuns(ctx context.Context, p *platform, in fetchRunsIn) (toolResult, error) {
	names, err := list("project_name", &in.ProjectName)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("project_name must name at least one project")
	}
	body := map[string]any{"select": runSelect}
	switch strings.TrimSpace(in.OrderBy) {
	case "-start_time", "":
		body["order"] = "desc"
	case "start_time":
		body["order"] = "asc"
	default:
		return nil, fmt.Errorf(`order_by must be "-start_time" or "start_time", not %q`, in.OrderBy)
	}
	ids := make([]string, 0, len(names))
	for _, n := range names {
		id, err := p.resolveProject(ctx, n)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	body["session"] = ids
	trace := str(in.TraceID)
	for key, v := range map[string]string{
		"trace": trace, "run_type": str(in.RunType), "filter": str(in.Filter),
		"trace_filter": str(in.TraceFilter), "tree_filter": str(in.TreeFilter),
	} {
		if v != "" {
			body[key] = v
		}
	}
	if b := optBool(in.Error); b != nil {
		body["error"] = *b
	}
	if b := optBool(in.IsRoot); b != nil {
		body["is_root"] = *b
	}
	if ex := str(in.ReferenceExampleID); ex != "" {
		body["reference_example"] = []string{ex}
	}
	runs, err := p.queryRuns(ctx, body, clampLimit(in.Limit, maxRuns))
	if err != nil {
		return nil, err
	}
	if trace != "" {
		page, err := charpages.Paginate(runs, in.PageNumber, in.MaxCharsPerPage, in.PreviewChars)
		if err != nil {
			return nil, err
		}
		return pageJSON("runs", page.Items, metaOf(page))
	}
	// One batch: page 1 of 1 (0 pages when there are no runs).
	meta := pageMeta{PageNumber: in.PageNumber, MaxCharsPerPage: charpages.Cap(in.MaxCharsPerPage), PreviewChars: in.PreviewChars}
	if len(runs) > 0 {
		meta.TotalPages = 1
	}
	var encoded []json.RawMessage
	if in.PageNumber == 1 {
		for _, r := range runs {
			b, err := charpages.Encode(charpages.Preview(r, in.PreviewChars))
			if err != nil {
				return nil, err
			}
			encoded = append(encoded, b)
		}
	}
	return pageJSON("runs", encoded, meta)
}

type listProjectsIn struct {
	Limit                int     `json:"limit"`
	ProjectName          *string `json:"project_name"`
	MoreInfo             string  `json:"more_info"`
	ReferenceDatasetID   *string `json:"reference_dataset_id"`
	ReferenceDatasetName *string `json:"reference_dataset_name"`
}

func (s *Service) listProjects(ctx context.Context, p *platform, in listProjectsIn) (toolResult, error) {
	dsID, dsName := str(in.ReferenceDatasetID), str(in.ReferenceDatasetName)
	if dsID != "" && dsName != "" {
		return nil, errors.New("give only one of reference_dataset_id and reference_dataset_name")
	}
	q := url.Values{}
	if name := str(in.ProjectName); name != "" {
		q.Set("name_contains", name)
	}
	if dsName != "" {
		id, err := p.resolveDataset(ctx, dsName)
		if err != nil {
			return nil, err
		}
		dsID = id
	}
	// Projects run against a dataset are experiments, never reference-free:
	// ask for reference-free projects only without a dataset filter.
	if dsID != "" {
		q.Set("reference_dataset", dsID)
	} else {
		q.Set("reference_free", "true")
	}
	projects, err := p.listArray(ctx, "/sessions", q, clampLimit(in.Limit, maxListLimit), 0)
	if err != nil {
		return nil, err
	}
	if isTrue(in.MoreInfo) {
		return map[string]any{"projects": nonNil(projects)}, nil
	}
	simple := make([]map[string]any, 0, len(projects))
	for _, pr := range projects {
		m := map[string]any{"name": pr["name"], "project_id": pr["id"]}
		if dep := findKey(pr, "deployment_id"); dep != nil {
			m["agent_deployment_id"] = dep
		}
		simple = append(simple, m)
	}
	return map[string]any{"projects": simple}, nil
}

func nonNil(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

// findKey is the first non-empty value under key anywhere in v, depth
// first with keys in sorted order (so the answer does not depend on map
// iteration).
func findKey(v any, key string) any {
	switch t := v.(type) {
	case map[string]any:
		if val, ok := t[key]; ok && val != nil && val != "" {
			return val
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if found := findKey(t[k], key); found != nil {
				return found
			}
		}
	case []any:
		for _, e := range t {
			if found := findKey(e, key); found != nil {
				return found
			}
		}
	}
	return nil
}
