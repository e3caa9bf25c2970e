package tracing

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// DefaultSelect are the run fields a query returns when it names none:
// the 27 fields both SDKs ask for, and thread_id.
var DefaultSelect = []string{
	"app_path", "completion_cost", "completion_tokens", "dotted_order", "end_time", "error", "events", "extra",
	"feedback_stats", "first_token_time", "id", "inputs", "name", "outputs", "parent_run_id", "parent_run_ids",
	"prompt_cost", "prompt_tokens", "reference_example_id", "run_type", "session_id", "start_time", "status",
	"tags", "total_cost", "total_tokens", "trace_id", "thread_id",
}

// selectable are the fields a run can return. Unknown names in a select
// are ignored (newer SDKs may ask for fields this API does not have).
var selectable = map[string]bool{
	"app_path": true, "completion_cost": true, "completion_tokens": true, "dotted_order": true, "end_time": true,
	"error": true, "events": true, "extra": true, "feedback_stats": true, "first_token_time": true, "id": true,
	"inputs": true, "name": true, "outputs": true, "parent_run_id": true, "parent_run_ids": true, "prompt_cost": true,
	"prompt_tokens": true, "reference_example_id": true, "run_type": true, "session_id": true, "start_time": true,
	"status": true, "tags": true, "total_cost": true, "total_tokens": true, "trace_id": true, "thread_id": true,
	"serialized": true, "child_run_ids": true, "attachments": true, "latency": true, "in_dataset": true,
	"metadata": true,
}

// alwaysSelected are returned whatever the select: the Python SDK's Run
// model requires them.
var alwaysSelected = []string{"id", "name", "run_type", "start_time", "trace_id"}

func apiTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z")
}

// viewer renders runs for one request.
type viewer struct {
	s      *Service
	org    string
	fields map[string]bool
	br     *cachedReader
}

func (s *Service) newViewer(org string, sel []string) *viewer {
	if len(sel) == 0 {
		sel = DefaultSelect
	}
	f := map[string]bool{}
	for _, x := range sel {
		if selectable[x] {
			f[x] = true
		}
	}
	for _, x := range alwaysSelected {
		f[x] = true
	}
	return &viewer{s: s, org: org, fields: f, br: newCachedReader(s.blobs)}
}

// views renders runs, reading their large fields in parallel.
func (v *viewer) views(ctx context.Context, runs []*runRecord) ([]map[string]any, error) {
	defer v.br.close()
	out := make([]map[string]any, len(runs))
	err := parallel(ctx, len(runs), func(i int) error {
		m, err := v.view(ctx, runs[i])
		out[i] = m
		return err
	})
	return out, err
}

func (v *viewer) view(ctx context.Context, r *runRecord) (map[string]any, error) {
	m := make(map[string]any, len(v.fields))
	set := func(k string, val any) {
		if v.fields[k] {
			m[k] = val
		}
	}
	blob := func(k string, ref *blobRef, empty any) error {
		if !v.fields[k] {
			return nil
		}
		raw, err := v.br.read(ctx, ref)
		if err != nil {
			return err
		}
		if raw == nil {
			m[k] = empty
		} else {
			m[k] = json.RawMessage(raw)
		}
		return nil
	}
	set("id", r.ID)
	set("name", r.Name)
	set("run_type", r.RunType)
	set("start_time", apiTime(r.StartTime))
	set("end_time", apiTime(r.EndTime))
	set("trace_id", r.TraceID)
	set("dotted_order", r.DottedOrder)
	set("session_id", r.SessionID)
	set("status", r.Status)
	set("thread_id", nullable(r.ThreadID))
	set("parent_run_id", nullable(r.ParentRunID))
	set("reference_example_id", nullable(r.ReferenceExampleID))
	set("error", nullable(r.Error))
	tags := r.Tags
	if tags == nil {
		tags = []string{}
	}
	set("tags", tags)
	set("prompt_tokens", r.PromptTokens)
	set("completion_tokens", r.CompletionTokens)
	set("total_tokens", r.TotalTokens)
	if r.HasCost {
		set("prompt_cost", decimal(r.PromptCost))
		set("completion_cost", decimal(r.CompletionCost))
		set("total_cost", decimal(r.TotalCost))
	} else {
		set("prompt_cost", nil)
		set("completion_cost", nil)
		set("total_cost", nil)
	}
	set("first_token_time", apiTime(r.FirstTokenTime))
	set("parent_run_ids", parentRunIDs(r))
	set("child_run_ids", nil)
	set("in_dataset", false)
	if v.fields["latency"] {
		if r.EndTime.IsZero() {
			m["latency"] = nil
		} else {
			m["latency"] = r.EndTime.Sub(r.StartTime).Seconds()
		}
	}
	if v.fields["extra"] || v.fields["metadata"] {
		extra := make(map[string]json.RawMessage, len(r.Extra)+1)
		for k, x := range r.Extra {
			extra[k] = x
		}
		md := r.Metadata
		if md == nil {
			md = map[string]json.RawMessage{}
		}
		raw, _ := json.Marshal(md)
		extra["metadata"] = raw
		set("extra", extra)
		set("metadata", md)
	}
	if v.fields["feedback_stats"] {
		fs := feedbackStatsOfRun(r)
		if len(fs) == 0 {
			m["feedback_stats"] = nil
		} else {
			m["feedback_stats"] = fs
		}
	}
	if v.fields["attachments"] {
		atts := map[string]any{}
		for name, a := range r.Attachments {
			atts[name] = map[string]any{"content_type": a.ContentType, "size": a.Size,
				"path": "/runs/" + r.ID + "/attachments/" + url.PathEscape(name)}
		}
		m["attachments"] = atts
	}
	set("app_path", "/o/"+v.org+"/projects/p/"+r.SessionID+"/r/"+r.ID+"?trace_id="+r.TraceID+"&start_time="+url.QueryEscape(r.StartTime.UTC().Format("2006-01-02T15:04:05.000000")))
	if err := blob("inputs", r.Inputs, map[string]any{}); err != nil {
		return nil, err
	}
	if err := blob("outputs", r.Outputs, nil); err != nil {
		return nil, err
	}
	if err := blob("events", r.Events, []any{}); err != nil {
		return nil, err
	}
	if err := blob("serialized", r.Serialized, nil); err != nil {
		return nil, err
	}
	return m, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// parentRunIDs lists the run's ancestors, root first (from its dotted
// order).
func parentRunIDs(r *runRecord) []string {
	out := []string{}
	if r.DottedOrder != "" {
		if ids, ok := dottedIDs(r.DottedOrder); ok && len(ids) > 1 {
			return ids[:len(ids)-1]
		}
	}
	if r.ParentRunID != "" {
		out = append(out, r.ParentRunID)
	}
	return out
}

func feedbackStatsOfRun(r *runRecord) map[string]FeedbackStats {
	out := map[string]FeedbackStats{}
	for k, v := range feedbackCounts(r.Feedback) {
		f := FeedbackStats{N: v[0]}
		if v[1] > 0 {
			avg := float64(v[2]) / scoreScale / float64(v[1])
			f.Avg = &avg
		}
		out[k] = f
	}
	return out
}

// projectView is the API shape of a project (a TracerSession). Statistics
// are null unless asked for.
func projectView(p *projectRecord, st *ProjectStats) map[string]any {
	extra := map[string]json.RawMessage{}
	for k, v := range p.Extra {
		extra[k] = v
	}
	tier := TierLong
	if p.RetentionDays < MaxRetentionDays {
		tier = TierShort
	}
	m := map[string]any{
		"id": p.ID, "tenant_id": p.WorkspaceID, "name": p.Name, "description": p.Description,
		"start_time": apiTime(p.StartTime), "end_time": nil, "extra": extra,
		"reference_dataset_id": p.ReferenceDatasetID, "default_dataset_id": p.DefaultDatasetID,
		"trace_tier": tier, "retention_days": p.RetentionDays,
		"run_count": nil, "trace_count": nil, "latency_p50": nil, "latency_p99": nil, "first_token_p50": nil, "first_token_p99": nil,
		"total_tokens": nil, "prompt_tokens": nil, "completion_tokens": nil,
		"total_cost": nil, "prompt_cost": nil, "completion_cost": nil,
		"feedback_stats": nil, "session_feedback_stats": nil, "run_facets": nil, "error_rate": nil, "last_run_start_time": nil,
	}
	if p.EndTime != nil {
		m["end_time"] = apiTime(*p.EndTime)
	}
	if st != nil {
		m["run_count"], m["trace_count"] = st.RunCount, st.TraceCount
		m["latency_p50"], m["latency_p99"] = st.LatencyP50, st.LatencyP99
		m["first_token_p50"], m["first_token_p99"] = st.FirstTokenP50, st.FirstTokenP99
		m["total_tokens"], m["prompt_tokens"], m["completion_tokens"] = st.TotalTokens, st.PromptTokens, st.CompletionTokens
		m["total_cost"], m["prompt_cost"], m["completion_cost"] = st.TotalCost, st.PromptCost, st.CompletionCost
		m["feedback_stats"], m["session_feedback_stats"] = st.FeedbackStats, st.SessionFeedbackStats
		m["error_rate"] = st.ErrorRate
		if st.LastRunStartTime != nil {
			m["last_run_start_time"] = apiTime(*st.LastRunStartTime)
		}
		m["run_facets"] = []any{}
	}
	return m
}
