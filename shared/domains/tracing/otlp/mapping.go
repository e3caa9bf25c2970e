package otlp

import (
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	coltracev1 "go.opentelemetry.io/proto/slim/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/slim/otlp/trace/v1"
)

// LangSmith's own span attributes (what its SDKs' OpenTelemetry exporters
// set, and what its OTLP ingest documents).
const (
	attrRunID         = "langsmith.span.id"
	attrTraceID       = "langsmith.trace.id"
	attrParentID      = "langsmith.span.parent_id"
	attrDottedOrder   = "langsmith.span.dotted_order"
	attrRunType       = "langsmith.span.kind"
	attrName          = "langsmith.trace.name"
	attrSessionName   = "langsmith.trace.session_name"
	attrSessionID     = "langsmith.trace.session_id"
	attrTags          = "langsmith.span.tags"
	attrMetadata      = "langsmith.metadata."
	attrUsageMetadata = "langsmith.usage_metadata"
	attrRuntime       = "langsmith.span.runtime"
	attrReference     = "langsmith.reference_example_id"
)

// ioAttrs carry a span's inputs or outputs: they go to inputs/outputs, not
// to the metadata.
var ioAttrs = map[string]bool{
	"gen_ai.prompt": true, "gen_ai.completion": true,
	"gen_ai.input.messages": true, "gen_ai.output.messages": true,
	"input.value": true, "output.value": true,
	"traceloop.entity.input": true, "traceloop.entity.output": true,
}

// ioPrefixes are the flattened list attributes that carry inputs or outputs.
var ioPrefixes = []string{
	"gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.", "retrieval.documents.",
}

func isIOAttr(k string) bool {
	if ioAttrs[k] {
		return true
	}
	for _, p := range ioPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

var runTypes = map[string]bool{
	"llm": true, "chain": true, "tool": true, "retriever": true, "embedding": true, "prompt": true, "parser": true,
}

// ref is a span's identity within an export.
type ref struct {
	trace [16]byte
	span  [8]byte
}

// node is one span while the export is mapped.
type node struct {
	run       map[string]any
	self      ref
	parent    ref
	hasParent bool
	start     time.Time
	// Overrides from langsmith.* attributes ("" when absent).
	idOverride, traceOverride, parentOverride, dottedOverride string

	id, traceID, parentRunID, dotted string
	state                            uint8 // 0 new, 1 on the current walk, 2 resolved
}

func mapRequest(req *coltracev1.ExportTraceServiceRequest) ([]map[string]any, error) {
	var nodes []*node
	for ri, rs := range req.GetResourceSpans() {
		res := indexAttrs(rs.GetResource().GetAttributes())
		for si, ss := range rs.GetScopeSpans() {
			scope := ss.GetScope()
			for pi, sp := range ss.GetSpans() {
				n, err := mapSpan(res, scope.GetName(), scope.GetVersion(), sp)
				if err != nil {
					return nil, &DecodeError{Kind: KindSpan, Msg: fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]: %s", ri, si, pi, err)}
				}
				nodes = append(nodes, n)
			}
		}
	}
	index := make(map[ref]*node, len(nodes))
	for _, n := range nodes {
		index[n.self] = n
	}
	for _, n := range nodes {
		if err := resolve(n, index); err != nil {
			return nil, err
		}
	}
	out := make([]map[string]any, len(nodes))
	for i, n := range nodes {
		n.run["id"] = n.id
		n.run["trace_id"] = n.traceID
		if n.parentRunID != "" {
			n.run["parent_run_id"] = n.parentRunID
		}
		n.run["dotted_order"] = n.dotted
		out[i] = n.run
	}
	return out, nil
}

// resolve computes the ids and dotted order of n and of its ancestors in
// the export, top down and without recursion (chains may be long). Spans
// whose parents form a cycle are a malformed export.
func resolve(n *node, index map[ref]*node) error {
	var chain []*node
	for cur := n; cur != nil && cur.state == 0; {
		cur.state = 1
		chain = append(chain, cur)
		if !cur.hasParent {
			break
		}
		cur = index[ref{trace: cur.self.trace, span: cur.parent.span}]
		if cur != nil && cur.state == 1 {
			return &DecodeError{Kind: KindSpan, Msg: fmt.Sprintf("span %x of trace %x is its own ancestor (the parentSpanIds form a cycle)",
				cur.self.span, cur.self.trace)}
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		var p *node
		if c.hasParent {
			if q := index[ref{trace: c.self.trace, span: c.parent.span}]; q != nil && q.state == 2 {
				p = q
			}
		}
		c.id = c.idOverride
		if c.id == "" {
			c.id = RunID(c.self.trace, c.self.span).String()
		}
		switch {
		case c.traceOverride != "":
			c.traceID = c.traceOverride
		case p != nil:
			c.traceID = p.traceID
		default:
			c.traceID = TraceUUID(c.self.trace).String()
		}
		switch {
		case c.parentOverride != "":
			c.parentRunID = c.parentOverride
		case p != nil:
			c.parentRunID = p.id
		case c.hasParent:
			c.parentRunID = RunID(c.self.trace, c.parent.span).String()
		}
		seg := dottedSegment(c.start, c.id)
		switch {
		case c.dottedOverride != "" && strings.HasSuffix(c.dottedOverride, c.id):
			c.dotted = c.dottedOverride
		case p != nil && p.id == c.parentRunID:
			c.dotted = p.dotted + "." + seg
		default:
			c.dotted = seg
		}
		if p != nil {
			inherit(c.run, p.run)
		}
		c.state = 2
	}
	return nil
}

// inherit gives a run what its parent in the export has and it lacks: the
// project (a trace belongs to one project, and instrumentations often name
// it on the root span only) and the thread id (as LangSmith SDKs pass
// metadata down to child runs).
func inherit(run, parent map[string]any) {
	for _, k := range []string{"session_name", "session_id"} {
		if _, ok := run[k]; !ok {
			if v, ok := parent[k]; ok {
				run[k] = v
			}
		}
	}
	md := run["extra"].(map[string]any)["metadata"].(map[string]any)
	if _, ok := md["thread_id"]; !ok {
		if v, ok := parent["extra"].(map[string]any)["metadata"].(map[string]any)["thread_id"]; ok {
			md["thread_id"] = v
		}
	}
}

func uuidAttr(a attrs, key string) string {
	s, ok := a.str(key)
	if !ok {
		return ""
	}
	u, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return u.String()
}

// mapSpan builds the run of one span, all but its ids and dotted order.
func mapSpan(res attrs, scopeName, scopeVersion string, sp *tracev1.Span) (*node, error) {
	n := &node{}
	if len(sp.GetTraceId()) != 16 {
		return nil, fmt.Errorf("traceId must be 16 bytes, got %d", len(sp.GetTraceId()))
	}
	if len(sp.GetSpanId()) != 8 {
		return nil, fmt.Errorf("spanId must be 8 bytes, got %d", len(sp.GetSpanId()))
	}
	copy(n.self.trace[:], sp.GetTraceId())
	copy(n.self.span[:], sp.GetSpanId())
	if n.self.trace == ([16]byte{}) || n.self.span == ([8]byte{}) {
		return nil, fmt.Errorf("traceId and spanId must not be all zero")
	}
	switch len(sp.GetParentSpanId()) {
	case 0:
	case 8:
		copy(n.parent.span[:], sp.GetParentSpanId())
		n.hasParent = n.parent.span != [8]byte{}
	default:
		return nil, fmt.Errorf("parentSpanId must be empty or 8 bytes, got %d", len(sp.GetParentSpanId()))
	}
	start, err := unixNano(sp.GetStartTimeUnixNano())
	if err != nil || sp.GetStartTimeUnixNano() == 0 {
		return nil, fmt.Errorf("startTimeUnixNano is required")
	}
	n.start = start

	a := indexAttrs(sp.GetAttributes())
	n.idOverride = uuidAttr(a, attrRunID)
	n.traceOverride = uuidAttr(a, attrTraceID)
	n.parentOverride = uuidAttr(a, attrParentID)
	n.dottedOverride, _ = a.str(attrDottedOrder)

	run := map[string]any{
		"name":       runName(a, sp.GetName()),
		"run_type":   runType(a),
		"start_time": formatTime(start),
	}
	if end := sp.GetEndTimeUnixNano(); end != 0 {
		t, err := unixNano(end)
		if err != nil {
			return nil, fmt.Errorf("endTimeUnixNano: %v", err)
		}
		run["end_time"] = formatTime(t)
	}

	ev := splitEvents(sp.GetEvents())
	inputs := spanInputs(a, ev)
	if inputs == nil {
		inputs = map[string]any{}
	}
	run["inputs"] = inputs
	if outputs := spanOutputs(a, ev); outputs != nil {
		run["outputs"] = outputs
	}
	if e := spanError(sp.GetStatus(), ev.exception); e != "" {
		run["error"] = e
	}
	if len(ev.other) > 0 {
		run["events"] = ev.other
	}

	md := metadata(res, a)
	if scopeName != "" {
		md["otel.scope.name"] = scopeName
	}
	if scopeVersion != "" {
		md["otel.scope.version"] = scopeVersion
	}
	md["OTEL_TRACE_ID"] = hex.EncodeToString(n.self.trace[:])
	md["OTEL_SPAN_ID"] = hex.EncodeToString(n.self.span[:])
	if n.hasParent {
		md["OTEL_PARENT_SPAN_ID"] = hex.EncodeToString(n.parent.span[:])
	}
	if u, ok := usage(a); ok {
		if _, set := md["usage_metadata"]; !set {
			md["usage_metadata"] = u.metadata
		}
		run["prompt_tokens"] = u.input
		run["completion_tokens"] = u.output
		run["total_tokens"] = u.total
	}
	extra := map[string]any{"metadata": md}
	if ip := invocationParams(a); len(ip) > 0 {
		extra["invocation_params"] = ip
	}
	if v, ok := a[attrRuntime]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			extra["runtime"] = m
		}
	}
	run["extra"] = extra

	if tags := spanTags(a); len(tags) > 0 {
		run["tags"] = tags
	}
	if s, ok := a.str(attrSessionName); ok {
		run["session_name"] = s
	} else if s, ok := res.str(attrSessionName); ok {
		run["session_name"] = s
	}
	if s := uuidAttr(a, attrSessionID); s != "" {
		run["session_id"] = s
	} else if s := uuidAttr(res, attrSessionID); s != "" {
		run["session_id"] = s
	}
	if s := uuidAttr(a, attrReference); s != "" {
		run["reference_example_id"] = s
	}
	n.run = run
	return n, nil
}

func unixNano(ns uint64) (time.Time, error) {
	if ns > math.MaxInt64 {
		return time.Time{}, fmt.Errorf("%d is out of range", ns)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

func runName(a attrs, spanName string) string {
	if s, ok := a.str(attrName); ok {
		return s
	}
	if s, ok := a.str("traceloop.entity.name"); ok {
		return s
	}
	if k, _ := a.str("openinference.span.kind"); strings.EqualFold(k, "TOOL") {
		if s, ok := a.str("tool.name"); ok {
			return s
		}
	}
	if spanName != "" {
		return spanName
	}
	return "Unnamed"
}

func runType(a attrs) string {
	if k, ok := a.str(attrRunType); ok && runTypes[strings.ToLower(k)] {
		return strings.ToLower(k)
	}
	if k, ok := a.str("openinference.span.kind"); ok {
		switch strings.ToUpper(k) {
		case "LLM":
			return "llm"
		case "TOOL":
			return "tool"
		case "RETRIEVER", "RERANKER":
			return "retriever"
		case "EMBEDDING":
			return "embedding"
		case "PROMPT":
			return "prompt"
		case "CHAIN", "AGENT", "GUARDRAIL", "EVALUATOR":
			return "chain"
		}
	}
	if k, ok := a.str("traceloop.span.kind"); ok {
		switch strings.ToLower(k) {
		case "tool":
			return "tool"
		case "workflow", "task", "agent":
			return "chain"
		}
	}
	if k, ok := a.str("traceloop.llm.request.type"); ok {
		if strings.EqualFold(k, "embedding") {
			return "embedding"
		}
		return "llm"
	}
	if op, ok := a.str("gen_ai.operation.name"); ok {
		switch strings.ToLower(op) {
		case "chat", "text_completion", "completion", "generate_content":
			return "llm"
		case "embeddings", "embedding":
			return "embedding"
		case "execute_tool":
			return "tool"
		case "retrieval":
			return "retriever"
		case "create_agent", "invoke_agent", "invoke_workflow":
			return "chain"
		}
	}
	if _, ok := a.str("gen_ai.tool.name"); ok {
		return "tool"
	}
	if _, ok := a["llm.prompt_template.variables"]; ok {
		return "prompt"
	}
	for _, k := range []string{
		"gen_ai.system", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
		"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.prompt", "gen_ai.completion",
		"gen_ai.input.messages", "gen_ai.output.messages", "llm.model_name",
	} {
		if _, ok := a[k]; ok {
			return "llm"
		}
	}
	return "chain"
}

// spanEvents are a span's events, sorted by what they carry.
type spanEvents struct {
	messages  []any          // gen_ai.{system,user,assistant,tool}.message: input messages
	choices   []any          // gen_ai.choice
	prompt    any            // gen_ai.content.prompt's gen_ai.prompt
	promptSet bool           //
	output    any            // gen_ai.content.completion's gen_ai.completion
	outputSet bool           //
	exception map[string]any // the last exception event's attributes
	other     []any          // the rest, as run events
}

var messageEvents = map[string]string{
	"gen_ai.system.message":    "system",
	"gen_ai.user.message":      "user",
	"gen_ai.assistant.message": "assistant",
	"gen_ai.tool.message":      "tool",
}

func splitEvents(events []*tracev1.Span_Event) spanEvents {
	var out spanEvents
	for _, e := range events {
		a := indexAttrs(e.GetAttributes())
		name := e.GetName()
		if role, ok := messageEvents[name]; ok {
			out.messages = append(out.messages, eventMessage(a, role))
			continue
		}
		switch name {
		case "gen_ai.choice":
			out.choices = append(out.choices, eventChoice(a, len(out.choices)))
			continue
		case "gen_ai.content.prompt":
			if v, ok := a["gen_ai.prompt"]; ok {
				out.prompt, out.promptSet = value(v), true
				continue
			}
		case "gen_ai.content.completion":
			if v, ok := a["gen_ai.completion"]; ok {
				out.output, out.outputSet = value(v), true
				continue
			}
		case "exception":
			out.exception = attrMap(a)
			continue
		}
		ev := map[string]any{"name": name}
		if t, err := unixNano(e.GetTimeUnixNano()); err == nil && e.GetTimeUnixNano() != 0 {
			ev["time"] = formatTime(t)
		}
		if len(a) > 0 {
			ev["kwargs"] = attrMap(a)
		}
		out.other = append(out.other, ev)
	}
	sort.SliceStable(out.choices, func(i, j int) bool {
		x, _ := asInt(out.choices[i].(map[string]any)["index"])
		y, _ := asInt(out.choices[j].(map[string]any)["index"])
		return x < y
	})
	return out
}

func attrMap(a attrs) map[string]any {
	m := make(map[string]any, len(a))
	for k, v := range a {
		m[k] = value(v)
	}
	return m
}

// eventMessage is a chat message from a GenAI message event: its content,
// role (the event's, unless the role attribute says otherwise), tool calls
// and tool call id; gen_ai.event.content, when present, is the whole message.
func eventMessage(a attrs, role string) map[string]any {
	msg := map[string]any{}
	if v, ok := a["gen_ai.event.content"]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			msg = m
		}
	}
	if r, ok := a.str("role"); ok {
		msg["role"] = r
	} else if _, ok := msg["role"]; !ok {
		msg["role"] = role
	}
	if v, ok := a["content"]; ok {
		msg["content"] = value(v)
	}
	if v, ok := a["tool_calls"]; ok {
		msg["tool_calls"] = structured(value(v))
	}
	if id, ok := a.str("id"); ok {
		msg["tool_call_id"] = id
	}
	return msg
}

// eventChoice is one choice from a gen_ai.choice event, in the OpenAI shape
// LangSmith renders: {index, finish_reason, message: {role, content,
// tool_calls}}.
func eventChoice(a attrs, position int) map[string]any {
	msg := map[string]any{}
	if v, ok := a["message"]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			msg = m
		}
	} else if v, ok := a["gen_ai.event.content"]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			msg = m
		}
	}
	for k, v := range a {
		if field, ok := strings.CutPrefix(k, "message."); ok && field != "" {
			msg[field] = value(v)
		}
	}
	if v, ok := a["tool_calls"]; ok {
		msg["tool_calls"] = structured(value(v))
	} else if calls, _ := indexed(a, "tool_calls."); len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if _, ok := msg["role"]; !ok {
		msg["role"] = "assistant"
	}
	choice := map[string]any{"message": msg}
	if i, ok := a.int("index"); ok {
		choice["index"] = i
	} else {
		choice["index"] = int64(position)
	}
	if fr, ok := a.str("finish_reason"); ok {
		choice["finish_reason"] = fr
	}
	return choice
}

func spanInputs(a attrs, ev spanEvents) map[string]any {
	if v, ok := a["gen_ai.prompt"]; ok {
		return asObject(value(v), "input")
	}
	if v, ok := a["gen_ai.input.messages"]; ok {
		return map[string]any{"messages": structured(value(v))}
	}
	if msgs, _ := indexed(a, "gen_ai.prompt."); len(msgs) > 0 {
		return map[string]any{"messages": msgs}
	}
	if msgs, _ := indexed(a, "llm.input_messages."); len(msgs) > 0 {
		return map[string]any{"messages": msgs}
	}
	if v, ok := a["input.value"]; ok {
		return asObject(value(v), "input")
	}
	if v, ok := a["traceloop.entity.input"]; ok {
		return asObject(value(v), "input")
	}
	if ev.promptSet {
		return asObject(ev.prompt, "input")
	}
	if len(ev.messages) > 0 {
		return map[string]any{"messages": ev.messages}
	}
	return nil
}

func spanOutputs(a attrs, ev spanEvents) map[string]any {
	if v, ok := a["gen_ai.completion"]; ok {
		return asObject(value(v), "output")
	}
	if v, ok := a["gen_ai.output.messages"]; ok {
		return map[string]any{"messages": structured(value(v))}
	}
	if msgs, _ := indexed(a, "gen_ai.completion."); len(msgs) > 0 {
		return map[string]any{"messages": msgs}
	}
	if msgs, _ := indexed(a, "llm.output_messages."); len(msgs) > 0 {
		return map[string]any{"messages": msgs}
	}
	if v, ok := a["output.value"]; ok {
		return asObject(value(v), "output")
	}
	if v, ok := a["traceloop.entity.output"]; ok {
		return asObject(value(v), "output")
	}
	if docs, _ := indexed(a, "retrieval.documents."); len(docs) > 0 {
		return map[string]any{"documents": retrievalDocuments(docs)}
	}
	if ev.outputSet {
		return asObject(ev.output, "output")
	}
	if len(ev.choices) > 0 {
		return map[string]any{"choices": ev.choices}
	}
	return nil
}

// retrievalDocuments maps OpenInference documents ({document: {content,
// metadata, id, score}}) to LangChain's {page_content, metadata, ...}.
func retrievalDocuments(items []any) []any {
	out := make([]any, 0, len(items))
	for _, it := range items {
		m, _ := it.(map[string]any)
		d, ok := m["document"].(map[string]any)
		if !ok {
			out = append(out, it)
			continue
		}
		doc := map[string]any{}
		for k, v := range d {
			switch k {
			case "content":
				doc["page_content"] = v
			case "metadata":
				doc["metadata"] = structured(v)
			default:
				doc[k] = v
			}
		}
		out = append(out, doc)
	}
	return out
}

// spanError is the run's error: the status message of an ERROR span (or,
// without one, the exception event), or the exception event of a span whose
// status is unset (LangSmith's mapping of exception events). An OK status
// means the exception was handled.
func spanError(st *tracev1.Status, exc map[string]any) string {
	code := st.GetCode()
	if code == tracev1.Status_STATUS_CODE_ERROR && st.GetMessage() != "" {
		return st.GetMessage()
	}
	if exc != nil && code != tracev1.Status_STATUS_CODE_OK {
		typ, _ := scalarString(exc["exception.type"])
		msg, _ := scalarString(exc["exception.message"])
		stack, _ := scalarString(exc["exception.stacktrace"])
		text := msg
		if typ != "" {
			text = typ + ": " + msg
		}
		if stack != "" {
			text += "\n\n" + stack
		}
		if strings.TrimSpace(text) != "" {
			return text
		}
	}
	if code == tracev1.Status_STATUS_CODE_ERROR {
		return "ERROR"
	}
	return ""
}

// metadata is the run's extra.metadata.
func metadata(res, a attrs) map[string]any {
	md := make(map[string]any, len(res)+len(a)+4)
	for k, v := range res {
		if !strings.HasPrefix(k, "langsmith.") {
			md[k] = value(v)
		}
	}
	for k, v := range a {
		if !strings.HasPrefix(k, "langsmith.") && !isIOAttr(k) {
			md[k] = value(v)
		}
	}
	for _, src := range []attrs{res, a} {
		for k, v := range src {
			if key, ok := strings.CutPrefix(k, attrMetadata); ok && key != "" {
				md[key] = structured(value(v))
			}
		}
	}
	for k, v := range a {
		if key, ok := strings.CutPrefix(k, "traceloop.association.properties."); ok && key != "" {
			if _, set := md[key]; !set {
				md[key] = value(v)
			}
		}
	}
	if v, ok := a["metadata"]; ok { // OpenInference: a JSON object to merge
		if m, ok := structured(value(v)).(map[string]any); ok {
			delete(md, "metadata")
			for k, x := range m {
				if _, set := md[k]; !set {
					md[k] = x
				}
			}
		}
	}
	setFirst(md, "ls_provider", strings.ToLower, a, "gen_ai.system", "gen_ai.provider.name", "llm.system")
	setFirst(md, "ls_model_name", nil, a, "gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
	setFirst(md, "thread_id", nil, a, "session.id", "gen_ai.conversation.id")
	if _, set := md["thread_id"]; !set {
		setFirst(md, "thread_id", nil, res, "session.id")
	}
	return md
}

// setFirst sets md[key] from the first of the attributes present, unless
// md already has it.
func setFirst(md map[string]any, key string, conv func(string) string, a attrs, from ...string) {
	if _, set := md[key]; set {
		return
	}
	for _, f := range from {
		if s, ok := a.str(f); ok {
			if conv != nil {
				s = conv(s)
			}
			md[key] = s
			return
		}
	}
}

var invocationAttrs = []struct{ attr, param string }{
	{"gen_ai.request.temperature", "temperature"},
	{"gen_ai.request.top_p", "top_p"},
	{"gen_ai.request.top_k", "top_k"},
	{"gen_ai.request.max_tokens", "max_tokens"},
	{"gen_ai.request.frequency_penalty", "frequency_penalty"},
	{"gen_ai.request.presence_penalty", "presence_penalty"},
	{"gen_ai.request.seed", "seed"},
	{"gen_ai.request.stop_sequences", "stop"},
	{"gen_ai.request.encoding_formats", "encoding_formats"},
	{"gen_ai.tool.name", "tool_name"},
	{"llm.presence_penalty", "presence_penalty"},
	{"llm.frequency_penalty", "frequency_penalty"},
	{"llm.request.functions", "functions"},
}

// invocationParams is extra.invocation_params, as LangSmith maps the GenAI
// request attributes.
func invocationParams(a attrs) map[string]any {
	ip := map[string]any{}
	if v, ok := a["llm.invocation_parameters"]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			for k, x := range m {
				ip[k] = x
			}
		}
	}
	if s, ok := a.str("gen_ai.request.model"); ok {
		ip["model"] = s
	} else if s, ok := a.str("gen_ai.response.model"); ok {
		ip["model"] = s
	}
	for _, p := range invocationAttrs {
		if v, ok := a[p.attr]; ok {
			if _, set := ip[p.param]; !set || strings.HasPrefix(p.attr, "gen_ai.") {
				ip[p.param] = structured(value(v))
			}
		}
	}
	return ip
}

type tokenUsage struct {
	input, output, total int64
	metadata             map[string]any
}

// usage reads token counts: langsmith.usage_metadata first, then the GenAI
// usage attributes (and their deprecated and OpenInference names).
func usage(a attrs) (tokenUsage, bool) {
	var u tokenUsage
	var in, out, total bool
	first := func(dst *int64, keys ...string) bool {
		for _, k := range keys {
			if n, ok := a.int(k); ok && n >= 0 {
				*dst = n
				return true
			}
		}
		return false
	}
	if v, ok := a[attrUsageMetadata]; ok {
		if m, ok := structured(value(v)).(map[string]any); ok {
			u.metadata = m
			pick := func(dst *int64, k string) bool {
				n, ok := asInt(m[k])
				if ok && n >= 0 {
					*dst = n
				}
				return ok && n >= 0
			}
			in, out, total = pick(&u.input, "input_tokens"), pick(&u.output, "output_tokens"), pick(&u.total, "total_tokens")
		}
	}
	if !in {
		in = first(&u.input, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
	}
	if !out {
		out = first(&u.output, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion")
	}
	if !total {
		total = first(&u.total, "gen_ai.usage.total_tokens", "llm.token_count.total", "llm.usage.total_tokens")
	}
	if !in && !out && !total {
		return tokenUsage{}, false
	}
	if !total {
		u.total = u.input + u.output
	}
	if u.metadata == nil {
		u.metadata = map[string]any{}
	}
	u.metadata["input_tokens"] = u.input
	u.metadata["output_tokens"] = u.output
	u.metadata["total_tokens"] = u.total
	return u, true
}

// spanTags reads langsmith.span.tags: a comma-separated string (what the
// LangSmith SDKs send) or a list of strings; blanks and repeats are dropped.
func spanTags(a attrs) []string {
	v, ok := a[attrTags]
	if !ok {
		return nil
	}
	var raw []string
	switch x := value(v).(type) {
	case string:
		raw = strings.Split(x, ",")
	case []any:
		for _, e := range x {
			if s, ok := scalarString(e); ok {
				raw = append(raw, s)
			}
		}
	}
	var tags []string
	seen := map[string]bool{}
	for _, t := range raw {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			tags = append(tags, t)
		}
	}
	return tags
}
