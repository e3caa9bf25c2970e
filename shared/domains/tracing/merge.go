package tracing

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing/fql"
)

// fieldRefs are the blob references of one operation's large fields.
type fieldRefs struct {
	Inputs, Outputs, Events, Serialized *blobRef
	Attachments                         map[string]attachment
}

// mergeRun applies one operation to a run (old is nil for a new run) and
// returns the new state. The rules, whatever order operations arrive in:
//
//   - an update ("patch") sets every field it carries;
//   - a create ("post") only fills fields still unset, so a create replayed
//     or arriving after its update changes nothing the update set;
//   - extra and extra.metadata merge key by key with the same precedence;
//     tags are a union;
//   - the project is set once (by the first operation that names one) and
//     never changes; the retention starts at the first time the run is seen.
func mergeRun(old *runRecord, op *runOp, project string, refs fieldRefs, now time.Time) *runRecord {
	var r runRecord
	if old != nil {
		r = *old
		r.Tags = append([]string(nil), old.Tags...)
		r.Extra = copyRaw(old.Extra)
		r.Metadata = copyRaw(old.Metadata)
		r.Attachments = copyAttachments(old.Attachments)
		r.Feedback = append([]runFeedback(nil), old.Feedback...)
	} else {
		r = runRecord{ID: op.ID, FirstSeen: now}
	}
	over := op.Patch
	str := func(dst *string, v *string) {
		if v != nil && (over || *dst == "") {
			*dst = *v
		}
	}
	tm := func(dst *time.Time, v *time.Time) {
		if v != nil && (over || dst.IsZero()) {
			*dst = *v
		}
	}
	num := func(dst *int64, v *int64) {
		if v != nil && (over || *dst == 0) {
			*dst = *v
		}
	}
	ref := func(dst **blobRef, v *blobRef) {
		if v != nil && (over || *dst == nil) {
			*dst = v
		}
	}
	str(&r.Name, op.Name)
	str(&r.RunType, op.RunType)
	// Lineage fields are set once: a later operation cannot move a run to
	// another trace or parent.
	if r.TraceID == "" && op.TraceID != nil {
		r.TraceID = *op.TraceID
	}
	if r.ParentRunID == "" && op.ParentRunID != nil {
		r.ParentRunID = *op.ParentRunID
	}
	str(&r.DottedOrder, op.DottedOrder)
	str(&r.ReferenceExampleID, op.ReferenceExampleID)
	tm(&r.StartTime, op.StartTime)
	tm(&r.EndTime, op.EndTime)
	tm(&r.FirstTokenTime, op.FirstTokenTime)
	if op.Error != nil && (over || !r.HasError) {
		r.Error, r.HasError = *op.Error, *op.Error != ""
	}
	ref(&r.Inputs, refs.Inputs)
	ref(&r.Outputs, refs.Outputs)
	ref(&r.Events, refs.Events)
	ref(&r.Serialized, refs.Serialized)
	for name, a := range refs.Attachments {
		if r.Attachments == nil {
			r.Attachments = map[string]attachment{}
		}
		if _, ok := r.Attachments[name]; over || !ok {
			r.Attachments[name] = a
		}
	}
	if op.HasTags {
		r.Tags = unionTags(r.Tags, op.Tags)
	}
	r.Extra = mergeKeys(r.Extra, op.Extra, over)
	r.Metadata = mergeKeys(r.Metadata, op.Metadata, over)
	if r.SessionID == "" {
		if project != "" {
			r.SessionID, r.SessionName = project, ""
		} else if op.SessionName != nil {
			r.SessionName = *op.SessionName
		}
	}
	// Usage: explicit fields win, else what the outputs or metadata report.
	usage := usageOf(op)
	num(&r.PromptTokens, firstNonNil(op.PromptTokens, usage.prompt))
	num(&r.CompletionTokens, firstNonNil(op.CompletionTokens, usage.completion))
	num(&r.TotalTokens, firstNonNil(op.TotalTokens, usage.total))
	if r.TotalTokens == 0 && r.PromptTokens+r.CompletionTokens > 0 {
		r.TotalTokens = r.PromptTokens + r.CompletionTokens
	}
	pc, cc, tc := firstNonNil(op.PromptCost, usage.promptCost), firstNonNil(op.CompletionCost, usage.completionCost), firstNonNil(op.TotalCost, usage.totalCost)
	if pc != nil || cc != nil || tc != nil {
		num(&r.PromptCost, pc)
		num(&r.CompletionCost, cc)
		num(&r.TotalCost, tc)
		if tc == nil && r.TotalCost == 0 {
			r.TotalCost = r.PromptCost + r.CompletionCost
		}
		r.HasCost = true
	}
	if r.FirstTokenTime.IsZero() {
		r.FirstTokenTime = firstTokenTime(op.Events)
	}
	if op.Status != nil && (over || r.Status == "") {
		r.Status = *op.Status
	}
	switch {
	case r.HasError:
		r.Status = "error"
	case !r.EndTime.IsZero() && (r.Status == "" || r.Status == "pending"):
		r.Status = "success"
	case r.Status == "":
		r.Status = "pending"
	}
	r.ThreadID = threadIDOf(r.Metadata)
	return &r
}

func firstNonNil(a, b *int64) *int64 {
	if a != nil {
		return a
	}
	return b
}

func copyRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func copyAttachments(m map[string]attachment) map[string]attachment {
	if m == nil {
		return nil
	}
	out := make(map[string]attachment, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// mergeKeys merges b into a: b's keys replace a's when over, else only
// fill a's missing keys.
func mergeKeys(a, b map[string]json.RawMessage, over bool) map[string]json.RawMessage {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = make(map[string]json.RawMessage, len(b))
	}
	for k, v := range b {
		if _, ok := a[k]; over || !ok {
			a[k] = v
		}
	}
	return a
}

// threadKeys are the metadata keys a run's thread id comes from, in order
// of preference.
var threadKeys = []string{"thread_id", "session_id", "conversation_id"}

const maxThreadIDLen = 256

func threadIDOf(md map[string]json.RawMessage) string {
	for _, k := range threadKeys {
		raw, ok := md[k]
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case float64:
			s, _ = fql.Canonical(x)
		}
		if s != "" && len(s) <= maxThreadIDLen {
			return s
		}
	}
	return ""
}

type usage struct {
	prompt, completion, total             *int64
	promptCost, completionCost, totalCost *int64
}

// usageOf reads token counts and costs an operation reports in its outputs
// (usage_metadata as LangChain and the SDK wrappers write it, or an OpenAI
// style llm_output.token_usage) or in metadata.usage_metadata.
func usageOf(op *runOp) usage {
	var u usage
	read := func(raw json.RawMessage) bool {
		var m map[string]json.RawMessage
		if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
			return false
		}
		found := false
		n := func(keys ...string) *int64 {
			for _, k := range keys {
				if v, ok := m[k]; ok {
					var f float64
					if json.Unmarshal(v, &f) == nil && f >= 0 && f < 1e15 {
						x := int64(f)
						found = true
						return &x
					}
				}
			}
			return nil
		}
		c := func(k string) *int64 {
			if v, ok := m[k]; ok {
				if x, ok := costOf(v); ok {
					found = true
					return &x
				}
			}
			return nil
		}
		u.prompt = n("input_tokens", "prompt_tokens")
		u.completion = n("output_tokens", "completion_tokens")
		u.total = n("total_tokens")
		u.promptCost, u.completionCost, u.totalCost = c("input_cost"), c("output_cost"), c("total_cost")
		return found
	}
	if len(op.Outputs) > 0 {
		var out map[string]json.RawMessage
		if json.Unmarshal(op.Outputs, &out) == nil {
			if read(out["usage_metadata"]) {
				return u
			}
			var llm map[string]json.RawMessage
			if json.Unmarshal(out["llm_output"], &llm) == nil && read(llm["token_usage"]) {
				return u
			}
		}
	}
	if raw, ok := op.Metadata["usage_metadata"]; ok && read(raw) {
		return u
	}
	return usage{}
}

// firstTokenTime is the time of the first "new_token" event.
func firstTokenTime(events json.RawMessage) time.Time {
	if len(events) == 0 {
		return time.Time{}
	}
	var evs []struct {
		Name string          `json:"name"`
		Time json.RawMessage `json:"time"`
	}
	if json.Unmarshal(events, &evs) != nil {
		return time.Time{}
	}
	for _, e := range evs {
		if e.Name == "new_token" {
			if t, ok := parseWireTime(e.Time); ok {
				return t
			}
		}
	}
	return time.Time{}
}

// Latency histogram: bucket i holds latencies in [2^(i/8), 2^((i+1)/8))
// milliseconds (bucket 0 also everything below 1 ms), so a percentile read
// from it is within 4.5% of the true value.
const (
	histBuckets = 256
	histPerOct  = 8
)

func histBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	if ms <= 1 {
		return 0
	}
	i := int(math.Floor(math.Log2(ms) * histPerOct))
	if i >= histBuckets {
		i = histBuckets - 1
	}
	return i
}

// histValue is the geometric middle of bucket i, in seconds.
func histValue(i int) float64 {
	return math.Pow(2, (float64(i)+0.5)/histPerOct) / 1000
}

// contribOf is the share of a run in its project's statistics.
func contribOf(r *runRecord) contrib {
	if !r.complete() {
		return contrib{}
	}
	c := contrib{Project: r.SessionID, Runs: 1,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens,
		PromptCost: r.PromptCost, CompletionCost: r.CompletionCost, TotalCost: r.TotalCost}
	if r.HasError {
		c.Errors = 1
	}
	if r.isRoot() {
		c.Roots = 1
		if r.HasError {
			c.RootErrors = 1
		}
		if !r.EndTime.IsZero() && !r.EndTime.Before(r.StartTime) {
			c.Latency = histBucket(r.EndTime.Sub(r.StartTime)) + 1
		}
		if !r.FirstTokenTime.IsZero() && !r.FirstTokenTime.Before(r.StartTime) {
			c.FirstToken = histBucket(r.FirstTokenTime.Sub(r.StartTime)) + 1
		}
	}
	c.Feedback = feedbackCounts(r.Feedback)
	return c
}

// feedbackCounts are, per key, the count of feedback, the count with a
// score and the sum of scores (in units of 1/scoreScale).
func feedbackCounts(list []runFeedback) map[string][3]int64 {
	if len(list) == 0 {
		return nil
	}
	out := map[string][3]int64{}
	for _, f := range list {
		v := out[f.Key]
		v[0]++
		if f.Score != nil {
			v[1]++
			v[2] += int64(math.Round(*f.Score * scoreScale))
		}
		out[f.Key] = v
	}
	return out
}

// addContrib adds sign × c to the counters d (stats attribute names).
func addContrib(d map[string]int64, c contrib, sign int64) {
	add := func(k string, v int64) {
		if v != 0 {
			d[k] += sign * v
		}
	}
	add("runs", c.Runs)
	add("roots", c.Roots)
	add("errors", c.Errors)
	add("root_errors", c.RootErrors)
	if c.Latency > 0 {
		add(latencyNum(c.Latency-1), 1)
	}
	if c.FirstToken > 0 {
		add(firstTokenNum(c.FirstToken-1), 1)
	}
	add("pt", c.PromptTokens)
	add("ct", c.CompletionTokens)
	add("tt", c.TotalTokens)
	add("pc", c.PromptCost)
	add("cc", c.CompletionCost)
	add("tc", c.TotalCost)
	for k, v := range c.Feedback {
		add("fb.n."+k, v[0])
		add("fb.c."+k, v[1])
		add("fb.s."+k, v[2])
	}
}

func latencyNum(i int) string    { return "lat." + itoa(i) }
func firstTokenNum(i int) string { return "ft." + itoa(i) }

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func threadContribOf(r *runRecord) threadContrib {
	if !r.complete() || r.ThreadID == "" {
		return threadContrib{}
	}
	t := threadContrib{Thread: r.ThreadID, Runs: 1, Tokens: r.TotalTokens}
	if r.isRoot() {
		t.Roots = 1
	}
	return t
}

// facetsOf lists the facet entries a complete run is filed under.
func facetsOf(r *runRecord) []string {
	if !r.complete() {
		return nil
	}
	fs := []string{facetRunType(r.RunType), facetName(r.Name)}
	if r.HasError {
		fs = append(fs, facetError)
	}
	for _, t := range r.Tags {
		fs = append(fs, facetTag(t))
	}
	for k, raw := range r.Metadata {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		if c, ok := fql.Canonical(v); ok {
			fs = append(fs, facetMeta(k, c))
		}
	}
	for _, f := range r.Feedback {
		fs = append(fs, facetFeedback(f.Key))
	}
	sort.Strings(fs)
	out := fs[:0]
	for i, f := range fs {
		if i == 0 || f != fs[i-1] {
			out = append(out, f)
		}
	}
	return out
}
