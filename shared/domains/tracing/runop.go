package tracing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing/fql"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// runOp is one create ("post") or update ("patch") of a run, validated.
// Nil pointers and nil raw fields are absent: an update changes only what
// it carries.
type runOp struct {
	Patch              bool
	ID                 string
	Name               *string
	RunType            *string
	TraceID            *string
	ParentRunID        *string
	DottedOrder        *string
	SessionName        *string
	SessionID          *string
	ReferenceExampleID *string
	Status             *string
	StartTime          *time.Time
	EndTime            *time.Time
	FirstTokenTime     *time.Time
	Error              *string
	Tags               []string
	HasTags            bool
	Inputs             json.RawMessage
	Outputs            json.RawMessage
	Events             json.RawMessage
	Serialized         json.RawMessage
	// Extra holds extra's keys except metadata; Metadata its metadata.
	Extra            map[string]json.RawMessage
	Metadata         map[string]json.RawMessage
	PromptTokens     *int64
	CompletionTokens *int64
	TotalTokens      *int64
	PromptCost       *int64
	CompletionCost   *int64
	TotalCost        *int64
	Attachments      map[string]attachmentData
}

type attachmentData struct {
	ContentType string
	Data        []byte
}

// wireRun is the JSON of a run create or update. Unknown keys are
// ignored: the SDKs send more than the API reads (child_runs, address,
// execution_order, ...).
type wireRun struct {
	ID                 json.RawMessage `json:"id"`
	Name               json.RawMessage `json:"name"`
	RunType            json.RawMessage `json:"run_type"`
	StartTime          json.RawMessage `json:"start_time"`
	EndTime            json.RawMessage `json:"end_time"`
	Inputs             json.RawMessage `json:"inputs"`
	Outputs            json.RawMessage `json:"outputs"`
	Events             json.RawMessage `json:"events"`
	Serialized         json.RawMessage `json:"serialized"`
	Extra              json.RawMessage `json:"extra"`
	Error              json.RawMessage `json:"error"`
	Tags               json.RawMessage `json:"tags"`
	ParentRunID        json.RawMessage `json:"parent_run_id"`
	TraceID            json.RawMessage `json:"trace_id"`
	DottedOrder        json.RawMessage `json:"dotted_order"`
	SessionName        json.RawMessage `json:"session_name"`
	SessionID          json.RawMessage `json:"session_id"`
	ReferenceExampleID json.RawMessage `json:"reference_example_id"`
	Status             json.RawMessage `json:"status"`
	FirstTokenTime     json.RawMessage `json:"first_token_time"`
	PromptTokens       json.RawMessage `json:"prompt_tokens"`
	CompletionTokens   json.RawMessage `json:"completion_tokens"`
	TotalTokens        json.RawMessage `json:"total_tokens"`
	PromptCost         json.RawMessage `json:"prompt_cost"`
	CompletionCost     json.RawMessage `json:"completion_cost"`
	TotalCost          json.RawMessage `json:"total_cost"`
}

// Field limits.
const (
	maxNameLen      = 1024
	maxTagLen       = 1024
	maxTags         = 100
	maxMetadataJSON = 100 << 10
	// maxMetadataKeys bounds the metadata pairs of a run: each is indexed.
	maxMetadataKeys = 256
	maxExtraJSON    = 100 << 10
	maxErrorLen     = 64 << 10
)

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// fieldParser decodes the fields of one run, recording problems at loc.
type fieldParser struct {
	p   *web.Problems
	loc []any
}

func (f *fieldParser) at(name string) []any { return append(append([]any(nil), f.loc...), name) }

func (f *fieldParser) str(raw json.RawMessage, name string, max int) *string {
	if isNull(raw) {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.p.Add(f.at(name), "Input should be a valid string", "string_type")
		return nil
	}
	if len(s) > max {
		f.p.Add(f.at(name), fmt.Sprintf("String should have at most %d characters", max), "string_too_long")
		return nil
	}
	return &s
}

func (f *fieldParser) uuid(raw json.RawMessage, name string) *string {
	s := f.str(raw, name, 64)
	if s == nil {
		return nil
	}
	id, err := web.ParseUUID(*s)
	if err != nil {
		f.p.Add(f.at(name), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		return nil
	}
	return &id
}

func (f *fieldParser) time(raw json.RawMessage, name string) *time.Time {
	if isNull(raw) {
		return nil
	}
	t, ok := parseWireTime(raw)
	if !ok {
		f.p.Add(f.at(name), "Input should be a valid datetime (an ISO 8601 string or epoch milliseconds)", "datetime_parsing")
		return nil
	}
	return &t
}

// parseWireTime reads an ISO 8601 string (a zone-less one is UTC) or a
// number of epoch milliseconds (what the JS SDK's Date.now() sends).
func parseWireTime(raw json.RawMessage) (time.Time, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return time.Time{}, false
		}
		t, ok := fql.ParseTime(s)
		if !ok || t.Year() < 1970 || t.Year() > 9999 {
			return time.Time{}, false
		}
		return t.Truncate(time.Microsecond), true
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsNaN(n) || n < 0 || n > 253402300799999 {
		return time.Time{}, false
	}
	return time.UnixMicro(int64(n * 1000)).UTC(), true
}

func (f *fieldParser) integer(raw json.RawMessage, name string) *int64 {
	if isNull(raw) {
		return nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n > 1e15 || math.IsNaN(n) {
		f.p.Add(f.at(name), "Input should be a non-negative integer", "int_type")
		return nil
	}
	v := int64(n)
	return &v
}

// cost reads a cost in dollars (a number or a decimal string) as nano-dollars.
func (f *fieldParser) cost(raw json.RawMessage, name string) *int64 {
	if isNull(raw) {
		return nil
	}
	n, ok := costOf(raw)
	if !ok {
		f.p.Add(f.at(name), "Input should be a non-negative decimal number", "decimal_type")
		return nil
	}
	return &n
}

func costOf(raw json.RawMessage) (int64, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0, false
	}
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case string:
		var err error
		if n, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if math.IsNaN(n) || n < 0 || n > 1e9 {
		return 0, false
	}
	return int64(math.Round(n * costScale)), true
}

// rawJSON accepts any JSON value; null is absent.
func (f *fieldParser) rawJSON(raw json.RawMessage) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	return append(json.RawMessage(nil), bytes.TrimSpace(raw)...)
}

func (f *fieldParser) object(raw json.RawMessage, name string) json.RawMessage {
	if isNull(raw) {
		return nil
	}
	t := bytes.TrimSpace(raw)
	if t[0] != '{' {
		f.p.Add(f.at(name), "Input should be a valid dictionary", "dict_type")
		return nil
	}
	return append(json.RawMessage(nil), t...)
}

// extra splits extra into its metadata and the rest.
func (f *fieldParser) extra(raw json.RawMessage, op *runOp) {
	if isNull(raw) {
		return
	}
	if len(raw) > maxExtraJSON+maxMetadataJSON {
		f.p.Add(f.at("extra"), fmt.Sprintf("extra is larger than %d bytes", maxExtraJSON+maxMetadataJSON), "too_long")
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		f.p.Add(f.at("extra"), "Input should be a valid dictionary", "dict_type")
		return
	}
	if md, ok := m["metadata"]; ok {
		delete(m, "metadata")
		if !isNull(md) {
			if len(md) > maxMetadataJSON {
				f.p.Add(f.at("extra"), fmt.Sprintf("extra.metadata is larger than %d bytes", maxMetadataJSON), "too_long")
				return
			}
			var mm map[string]json.RawMessage
			if err := json.Unmarshal(md, &mm); err != nil {
				f.p.Add(append(f.at("extra"), "metadata"), "Input should be a valid dictionary", "dict_type")
				return
			}
			if len(mm) > maxMetadataKeys {
				f.p.Add(append(f.at("extra"), "metadata"), fmt.Sprintf("extra.metadata has more than %d keys", maxMetadataKeys), "too_long")
				return
			}
			op.Metadata = mm
		}
	}
	if len(m) > 0 {
		op.Extra = m
	}
}

func (f *fieldParser) errorText(raw json.RawMessage) *string {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		// A structured error is kept as its JSON text.
		s = string(bytes.TrimSpace(raw))
	}
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen]
	}
	return &s
}

func (f *fieldParser) tags(raw json.RawMessage, op *runOp) {
	if isNull(raw) {
		return
	}
	var tags []string
	if err := json.Unmarshal(raw, &tags); err != nil {
		f.p.Add(f.at("tags"), "Input should be a valid list of strings", "list_type")
		return
	}
	if len(tags) > maxTags {
		f.p.Add(f.at("tags"), fmt.Sprintf("At most %d tags", maxTags), "too_long")
		return
	}
	for i, t := range tags {
		if len(t) > maxTagLen {
			f.p.Add(append(f.at("tags"), i), fmt.Sprintf("String should have at most %d characters", maxTagLen), "string_too_long")
			return
		}
	}
	op.Tags, op.HasTags = tags, true
}

// dottedSegment is one segment of a dotted order: a compact timestamp and
// a run id.
var dottedSegment = regexp.MustCompile(`^[0-9]{8}T[0-9]{6,12}Z([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// dottedIDs returns the run ids of a dotted order, root first.
func dottedIDs(d string) ([]string, bool) {
	segs := strings.Split(d, ".")
	ids := make([]string, 0, len(segs))
	for _, s := range segs {
		m := dottedSegment.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		ids = append(ids, strings.ToLower(m[1]))
	}
	return ids, true
}

// parseRun decodes one run create or update. id, when not empty, is the
// id the request gave elsewhere (the path or a part name); a body id must
// agree with it. defaultID is the id of a run whose body has none.
func parseRun(raw []byte, patch bool, id, defaultID string, loc []any, p *web.Problems) *runOp {
	var w wireRun
	if len(bytes.TrimSpace(raw)) == 0 {
		p.Add(loc, "Field required", "missing")
		return nil
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		p.Add(loc, "Input should be a valid JSON object: "+err.Error(), "model_attributes_type")
		return nil
	}
	return parseWire(&w, patch, id, defaultID, loc, p)
}

// parseWire validates a decoded run create or update (see parseRun).
func parseWire(w *wireRun, patch bool, id, defaultID string, loc []any, p *web.Problems) *runOp {
	f := &fieldParser{p: p, loc: loc}
	before := p.Len()
	op := &runOp{Patch: patch}
	if bid := f.uuid(w.ID, "id"); bid != nil {
		if id != "" && *bid != id {
			p.Add(f.at("id"), "The id in the body differs from the id of the request", "value_error")
		}
		op.ID = *bid
	} else if id != "" {
		op.ID = id
	} else {
		op.ID = defaultID
	}
	op.Name = f.str(w.Name, "name", maxNameLen)
	if rt := f.str(w.RunType, "run_type", 32); rt != nil {
		if !validRunType(*rt) {
			p.Add(f.at("run_type"), "Input should be 'tool', 'chain', 'llm', 'retriever', 'embedding', 'prompt' or 'parser'", "enum")
		} else {
			op.RunType = rt
		}
	}
	op.StartTime = f.time(w.StartTime, "start_time")
	op.EndTime = f.time(w.EndTime, "end_time")
	op.FirstTokenTime = f.time(w.FirstTokenTime, "first_token_time")
	op.Inputs = f.object(w.Inputs, "inputs")
	op.Outputs = f.object(w.Outputs, "outputs")
	op.Events = f.rawJSON(w.Events)
	op.Serialized = f.rawJSON(w.Serialized)
	f.extra(w.Extra, op)
	op.Error = f.errorText(w.Error)
	f.tags(w.Tags, op)
	op.ParentRunID = f.uuid(w.ParentRunID, "parent_run_id")
	op.TraceID = f.uuid(w.TraceID, "trace_id")
	op.DottedOrder = f.str(w.DottedOrder, "dotted_order", 64<<10)
	op.SessionName = f.str(w.SessionName, "session_name", maxNameLen)
	op.SessionID = f.uuid(w.SessionID, "session_id")
	op.ReferenceExampleID = f.uuid(w.ReferenceExampleID, "reference_example_id")
	op.Status = f.str(w.Status, "status", 32)
	op.PromptTokens = f.integer(w.PromptTokens, "prompt_tokens")
	op.CompletionTokens = f.integer(w.CompletionTokens, "completion_tokens")
	op.TotalTokens = f.integer(w.TotalTokens, "total_tokens")
	op.PromptCost = f.cost(w.PromptCost, "prompt_cost")
	op.CompletionCost = f.cost(w.CompletionCost, "completion_cost")
	op.TotalCost = f.cost(w.TotalCost, "total_cost")
	if p.Len() > before {
		return nil
	}
	return finishOp(op, loc, p)
}

// finishOp checks what spans fields: a create's required fields, the
// dotted order against the ids, and derives the trace id.
func finishOp(op *runOp, loc []any, p *web.Problems) *runOp {
	at := func(name string) []any { return append(append([]any(nil), loc...), name) }
	if op.ID == "" {
		p.Add(at("id"), "Field required", "missing")
		return nil
	}
	if op.DottedOrder != nil {
		// A dotted order names the run last and its parent second to
		// last. It may start below the root: an OTLP export whose spans'
		// parent came in another export (the ingest completes it from the
		// parent's stored order).
		ids, ok := dottedIDs(*op.DottedOrder)
		switch {
		case !ok:
			p.Add(at("dotted_order"), "Invalid dotted_order: expected segments of <YYYYMMDDTHHMMSSffffffZ><run id> joined by '.'", "value_error")
		case ids[len(ids)-1] != op.ID:
			p.Add(at("dotted_order"), "The last segment of dotted_order must name the run itself", "value_error")
		case len(ids) > 1 && op.ParentRunID != nil && ids[len(ids)-2] != *op.ParentRunID:
			p.Add(at("dotted_order"), "The second to last segment of dotted_order must name the parent run", "value_error")
		default:
			if op.TraceID == nil && (len(ids) > 1 || op.ParentRunID == nil) {
				op.TraceID = &ids[0]
			}
			if op.ParentRunID == nil && len(ids) > 1 {
				op.ParentRunID = &ids[len(ids)-2]
			}
		}
		if p.Len() > 0 {
			return nil
		}
	}
	if op.ParentRunID != nil && *op.ParentRunID == op.ID {
		p.Add(at("parent_run_id"), "A run cannot be its own parent", "value_error")
		return nil
	}
	if op.Patch {
		return op
	}
	if op.Name == nil || *op.Name == "" {
		p.Add(at("name"), "Field required", "missing")
	}
	if op.RunType == nil {
		p.Add(at("run_type"), "Field required", "missing")
	}
	if op.TraceID == nil {
		if op.ParentRunID != nil {
			p.Add(at("trace_id"), "Field required for a run with a parent_run_id (or send dotted_order)", "missing")
		} else {
			id := op.ID
			op.TraceID = &id
		}
	}
	if p.Len() > 0 {
		return nil
	}
	return op
}

func unionTags(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, list := range [][]string{a, b} {
		for _, t := range list {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	if len(out) > maxTags {
		out = out[:maxTags]
	}
	return out
}
