package otlp_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	tracev1 "go.opentelemetry.io/proto/slim/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentplane/agentplane/shared/domains/tracing/otlp"
)

func TestTreeIDsAndDottedOrder(t *testing.T) {
	root := span(rootHex, "", "agent", t0)
	child := span(childHex, rootHex, "llm-call", t0.Add(time.Millisecond))
	grand := span(grandHex, childHex, "tool-call", t0.Add(2*time.Millisecond))
	// Children first, as a BatchSpanProcessor exports them (they end first).
	runs := byName(decodePB(t, request(nil, grand, child, root)))

	rootID, childID, grandID := runID(traceHex, rootHex), runID(traceHex, childHex), runID(traceHex, grandHex)
	trace := traceUUID(traceHex)
	if got := runs["agent"]["id"]; got != rootID {
		t.Fatalf("root id %v, want %v", got, rootID)
	}
	if !strings.HasPrefix(rootID, rootHex[:8]+"-"+rootHex[8:12]+"-"+rootHex[12:16]) {
		t.Fatalf("run id %s does not start with the span id %s", rootID, rootHex)
	}
	for name, want := range map[string]string{"agent": "", "llm-call": rootID, "tool-call": childID} {
		got, _ := runs[name]["parent_run_id"].(string)
		if got != want {
			t.Errorf("%s: parent_run_id %q, want %q", name, got, want)
		}
		if runs[name]["trace_id"] != trace {
			t.Errorf("%s: trace_id %v, want %v", name, runs[name]["trace_id"], trace)
		}
	}
	if _, ok := runs["agent"]["parent_run_id"]; ok {
		t.Error("the root has a parent_run_id key")
	}
	wantDotted := "20250304T050607123456Z" + rootID + "." +
		"20250304T050607124456Z" + childID + "." +
		"20250304T050607125456Z" + grandID
	if got := runs["tool-call"]["dotted_order"]; got != wantDotted {
		t.Errorf("dotted_order\n got %v\nwant %v", got, wantDotted)
	}
	if got := runs["agent"]["start_time"]; got != "2025-03-04T05:06:07.123456Z" {
		t.Errorf("start_time %v", got)
	}
	if got := runs["agent"]["end_time"]; got != "2025-03-04T05:06:08.123456Z" {
		t.Errorf("end_time %v", got)
	}

	// The same spans in separate exports: ids and parents are the same;
	// dotted orders start at the first span whose parent is elsewhere.
	alone := decodePB(t, request(nil, grand))[0]
	if alone["id"] != grandID || alone["parent_run_id"] != childID || alone["trace_id"] != trace {
		t.Errorf("alone: %v", alone)
	}
	if got := alone["dotted_order"]; got != "20250304T050607125456Z"+grandID {
		t.Errorf("alone dotted_order %v", got)
	}
	md := metadataOf(alone)
	if md["OTEL_TRACE_ID"] != traceHex || md["OTEL_SPAN_ID"] != grandHex || md["OTEL_PARENT_SPAN_ID"] != childHex {
		t.Errorf("otel ids in metadata: %v", md)
	}
	// A replay maps to the same runs.
	again := decodePB(t, request(nil, grand, child, root))
	if !reflect.DeepEqual(jsonOf(t, again), jsonOf(t, decodePB(t, request(nil, grand, child, root)))) {
		t.Error("a replayed export maps differently")
	}
}

func TestGenAISpan(t *testing.T) {
	sp := span(childHex, rootHex, "chat gpt-4o", t0,
		"gen_ai.system", "OpenAI",
		"gen_ai.operation.name", "chat",
		"gen_ai.request.model", "gpt-4o",
		"gen_ai.response.model", "gpt-4o-2024-08-06",
		"gen_ai.request.temperature", 0.2,
		"gen_ai.request.max_tokens", 256,
		"gen_ai.prompt", `{"messages":[{"role":"user","content":"hi"}]}`,
		"gen_ai.completion", "hello there",
		"gen_ai.usage.input_tokens", 11,
		"gen_ai.usage.output_tokens", 7,
		"langsmith.metadata.thread_id", "thread-42",
		"langsmith.metadata.tenant", `{"plan":"pro"}`,
		"custom.flag", true,
	)
	res := kv("service.name", "checkout", "deployment.environment", "prod")
	r := decodePB(t, request(res, sp))[0]
	if r["run_type"] != "llm" {
		t.Errorf("run_type %v", r["run_type"])
	}
	want := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if !reflect.DeepEqual(jsonOf(t, r["inputs"]), want) {
		t.Errorf("inputs %v", r["inputs"])
	}
	if !reflect.DeepEqual(jsonOf(t, r["outputs"]), map[string]any{"output": "hello there"}) {
		t.Errorf("outputs %v", r["outputs"])
	}
	if r["prompt_tokens"] != int64(11) || r["completion_tokens"] != int64(7) || r["total_tokens"] != int64(18) {
		t.Errorf("usage %v %v %v", r["prompt_tokens"], r["completion_tokens"], r["total_tokens"])
	}
	md := metadataOf(r)
	checks := map[string]any{
		"ls_provider": "openai", "ls_model_name": "gpt-4o", "gen_ai.system": "OpenAI",
		"gen_ai.request.model": "gpt-4o", "thread_id": "thread-42", "service.name": "checkout",
		"deployment.environment": "prod", "custom.flag": true,
		"otel.scope.name": "test-scope", "otel.scope.version": "1.2.3",
	}
	for k, v := range checks {
		if md[k] != v {
			t.Errorf("metadata[%s] = %v, want %v", k, md[k], v)
		}
	}
	if !reflect.DeepEqual(jsonOf(t, md["tenant"]), map[string]any{"plan": "pro"}) {
		t.Errorf("langsmith.metadata JSON value: %v", md["tenant"])
	}
	if !reflect.DeepEqual(jsonOf(t, md["usage_metadata"]), map[string]any{"input_tokens": 11.0, "output_tokens": 7.0, "total_tokens": 18.0}) {
		t.Errorf("usage_metadata %v", md["usage_metadata"])
	}
	for _, k := range []string{"gen_ai.prompt", "gen_ai.completion", "langsmith.metadata.thread_id"} {
		if _, ok := md[k]; ok {
			t.Errorf("metadata holds %s", k)
		}
	}
	ip := r["extra"].(map[string]any)["invocation_params"].(map[string]any)
	if ip["model"] != "gpt-4o" || ip["temperature"] != 0.2 || ip["max_tokens"] != int64(256) {
		t.Errorf("invocation_params %v", ip)
	}
	if _, ok := r["session_name"]; ok {
		t.Error("service.name must not become the project (LangSmith uses the Langsmith-Project header)")
	}
}

func TestInputsAndOutputs(t *testing.T) {
	cases := []struct {
		name    string
		attrs   []any
		events  []*tracev1.Span_Event
		inputs  any
		outputs any
	}{
		{
			name: "indexed prompt and completion",
			attrs: []any{
				"gen_ai.prompt.0.role", "system", "gen_ai.prompt.0.content", "be brief",
				"gen_ai.prompt.1.message.role", "user", "gen_ai.prompt.1.message.content", "hi",
				"gen_ai.completion.0.role", "assistant", "gen_ai.completion.0.content", "hello",
				"gen_ai.completion.0.tool_calls.0.id", "call_1", "gen_ai.completion.0.tool_calls.0.function.name", "search",
			},
			inputs: map[string]any{"messages": []any{
				map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "user", "content": "hi"},
			}},
			outputs: map[string]any{"messages": []any{map[string]any{
				"role": "assistant", "content": "hello",
				"tool_calls": []any{map[string]any{"id": "call_1", "function": map[string]any{"name": "search"}}},
			}}},
		},
		{
			name: "semconv input and output messages",
			attrs: []any{
				"gen_ai.input.messages", `[{"role":"user","parts":[{"type":"text","content":"hi"}]}]`,
				"gen_ai.output.messages", `[{"role":"assistant","parts":[{"type":"text","content":"yo"}],"finish_reason":"stop"}]`,
			},
			inputs:  map[string]any{"messages": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "content": "hi"}}}}},
			outputs: map[string]any{"messages": []any{map[string]any{"role": "assistant", "parts": []any{map[string]any{"type": "text", "content": "yo"}}, "finish_reason": "stop"}}},
		},
		{
			name:  "message and choice events",
			attrs: []any{"gen_ai.system", "openai"},
			events: []*tracev1.Span_Event{
				{Name: "gen_ai.system.message", TimeUnixNano: ns(t0), Attributes: kv("content", "be brief")},
				{Name: "gen_ai.user.message", TimeUnixNano: ns(t0), Attributes: kv("content", "weather?")},
				{Name: "gen_ai.tool.message", TimeUnixNano: ns(t0), Attributes: kv("content", "sunny", "id", "call_9")},
				{Name: "gen_ai.choice", TimeUnixNano: ns(t0), Attributes: kv("index", 1, "finish_reason", "length", "message.content", "second")},
				{Name: "gen_ai.choice", TimeUnixNano: ns(t0), Attributes: kv("index", 0, "finish_reason", "stop", "message", `{"role":"assistant","content":"It is sunny."}`)},
				{Name: "custom.checkpoint", TimeUnixNano: ns(t0), Attributes: kv("step", 3)},
			},
			inputs: map[string]any{"messages": []any{
				map[string]any{"role": "system", "content": "be brief"},
				map[string]any{"role": "user", "content": "weather?"},
				map[string]any{"role": "tool", "content": "sunny", "tool_call_id": "call_9"},
			}},
			outputs: map[string]any{"choices": []any{
				map[string]any{"index": 0.0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "It is sunny."}},
				map[string]any{"index": 1.0, "finish_reason": "length", "message": map[string]any{"role": "assistant", "content": "second"}},
			}},
		},
		{
			name: "content events",
			events: []*tracev1.Span_Event{
				{Name: "gen_ai.content.prompt", Attributes: kv("gen_ai.prompt", `{"q":"x"}`)},
				{Name: "gen_ai.content.completion", Attributes: kv("gen_ai.completion", "y")},
			},
			inputs:  map[string]any{"q": "x"},
			outputs: map[string]any{"output": "y"},
		},
		{
			name:    "openinference values",
			attrs:   []any{"openinference.span.kind", "CHAIN", "input.value", `{"question":"why"}`, "output.value", "because"},
			inputs:  map[string]any{"question": "why"},
			outputs: map[string]any{"output": "because"},
		},
		{
			name:    "traceloop entities",
			attrs:   []any{"traceloop.entity.input", `{"args":[1]}`, "traceloop.entity.output", `[1,2]`},
			inputs:  map[string]any{"args": []any{1.0}},
			outputs: map[string]any{"output": []any{1.0, 2.0}},
		},
		{
			name: "retrieved documents",
			attrs: []any{
				"openinference.span.kind", "RETRIEVER", "input.value", "q",
				"retrieval.documents.0.document.content", "doc A", "retrieval.documents.0.document.metadata", `{"src":"a"}`,
				"retrieval.documents.1.document.content", "doc B",
			},
			inputs: map[string]any{"input": "q"},
			outputs: map[string]any{"documents": []any{
				map[string]any{"page_content": "doc A", "metadata": map[string]any{"src": "a"}},
				map[string]any{"page_content": "doc B"},
			}},
		},
		{
			name:   "nothing",
			attrs:  []any{"http.method", "GET"},
			inputs: map[string]any{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := span(rootHex, "", c.name, t0, c.attrs...)
			sp.Events = c.events
			r := decodePB(t, request(nil, sp))[0]
			if got := jsonOf(t, r["inputs"]); !reflect.DeepEqual(got, jsonOf(t, c.inputs)) {
				t.Errorf("inputs\n got %v\nwant %v", got, c.inputs)
			}
			if c.outputs == nil {
				if _, ok := r["outputs"]; ok {
					t.Errorf("outputs %v, want none", r["outputs"])
				}
			} else if got := jsonOf(t, r["outputs"]); !reflect.DeepEqual(got, jsonOf(t, c.outputs)) {
				t.Errorf("outputs\n got %v\nwant %v", got, c.outputs)
			}
			md := metadataOf(r)
			for k := range md {
				if strings.HasPrefix(k, "gen_ai.prompt") || strings.HasPrefix(k, "gen_ai.completion") || k == "input.value" ||
					k == "output.value" || strings.HasPrefix(k, "retrieval.documents") || strings.HasPrefix(k, "traceloop.entity.") {
					t.Errorf("metadata holds the i/o attribute %s", k)
				}
			}
		})
	}
	// Events that carry no GenAI content stay as run events.
	sp := span(rootHex, "", "ev", t0)
	sp.Events = []*tracev1.Span_Event{{Name: "cache.miss", TimeUnixNano: ns(t0), Attributes: kv("key", "k1")}}
	r := decodePB(t, request(nil, sp))[0]
	want := []any{map[string]any{"name": "cache.miss", "time": "2025-03-04T05:06:07.123456Z", "kwargs": map[string]any{"key": "k1"}}}
	if !reflect.DeepEqual(jsonOf(t, r["events"]), want) {
		t.Errorf("events %v", r["events"])
	}
}

func TestRunType(t *testing.T) {
	cases := []struct {
		attrs []any
		want  string
	}{
		{nil, "chain"},
		{[]any{"http.method", "POST"}, "chain"},
		{[]any{"langsmith.span.kind", "LLM"}, "llm"},
		{[]any{"langsmith.span.kind", "retriever"}, "retriever"},
		{[]any{"langsmith.span.kind", "bogus", "gen_ai.operation.name", "embeddings"}, "embedding"},
		{[]any{"openinference.span.kind", "TOOL"}, "tool"},
		{[]any{"openinference.span.kind", "RERANKER"}, "retriever"},
		{[]any{"openinference.span.kind", "AGENT", "gen_ai.request.model", "m"}, "chain"},
		{[]any{"openinference.span.kind", "EMBEDDING"}, "embedding"},
		{[]any{"openinference.span.kind", "PROMPT"}, "prompt"},
		{[]any{"traceloop.span.kind", "workflow"}, "chain"},
		{[]any{"traceloop.span.kind", "tool"}, "tool"},
		{[]any{"traceloop.llm.request.type", "chat"}, "llm"},
		{[]any{"traceloop.llm.request.type", "embedding"}, "embedding"},
		{[]any{"gen_ai.operation.name", "chat"}, "llm"},
		{[]any{"gen_ai.operation.name", "text_completion"}, "llm"},
		{[]any{"gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "search"}, "tool"},
		{[]any{"gen_ai.operation.name", "invoke_agent", "gen_ai.request.model", "m"}, "chain"},
		{[]any{"gen_ai.tool.name", "search"}, "tool"},
		{[]any{"llm.prompt_template.variables", "{}"}, "prompt"},
		{[]any{"gen_ai.system", "anthropic"}, "llm"},
		{[]any{"gen_ai.usage.input_tokens", 3}, "llm"},
	}
	for _, c := range cases {
		r := decodePB(t, request(nil, span(rootHex, "", "s", t0, c.attrs...)))[0]
		if r["run_type"] != c.want {
			t.Errorf("%v: run_type %v, want %v", c.attrs, r["run_type"], c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	exc := &tracev1.Span_Event{Name: "exception", TimeUnixNano: ns(t0), Attributes: kv(
		"exception.type", "ValueError", "exception.message", "bad input", "exception.stacktrace", "Traceback...")}
	cases := []struct {
		name   string
		status *tracev1.Status
		events []*tracev1.Span_Event
		want   string
	}{
		{"error with message", &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR, Message: "boom"}, []*tracev1.Span_Event{exc}, "boom"},
		{"error from exception", &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR}, []*tracev1.Span_Event{exc}, "ValueError: bad input\n\nTraceback..."},
		{"error without detail", &tracev1.Status{Code: tracev1.Status_STATUS_CODE_ERROR}, nil, "ERROR"},
		{"unset with exception", nil, []*tracev1.Span_Event{exc}, "ValueError: bad input\n\nTraceback..."},
		{"handled exception", &tracev1.Status{Code: tracev1.Status_STATUS_CODE_OK}, []*tracev1.Span_Event{exc}, ""},
		{"ok", &tracev1.Status{Code: tracev1.Status_STATUS_CODE_OK, Message: "ignored"}, nil, ""},
	}
	for _, c := range cases {
		sp := span(rootHex, "", c.name, t0)
		sp.Status, sp.Events = c.status, c.events
		r := decodePB(t, request(nil, sp))[0]
		got, _ := r["error"].(string)
		if got != c.want {
			t.Errorf("%s: error %q, want %q", c.name, got, c.want)
		}
		if _, ok := r["events"]; ok {
			t.Errorf("%s: the exception event is also a run event", c.name)
		}
	}
}

func TestLangSmithAttributes(t *testing.T) {
	runUUID := "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	traceU := "0190a1b2-0000-7000-8000-000000000001"
	parentU := "0190a1b2-0000-7000-8000-000000000002"
	dotted := "20250101T000000000000Z" + traceU + "." + "20250101T000001000000Z" + parentU + "." + "20250101T000002000000Z" + runUUID
	sdk := span(rootHex, "", "otel-name", t0,
		"langsmith.span.id", runUUID, "langsmith.trace.id", traceU, "langsmith.span.parent_id", parentU,
		"langsmith.span.dotted_order", dotted, "langsmith.trace.name", "Renamed", "langsmith.span.kind", "tool",
		"langsmith.trace.session_name", "my-project", "langsmith.trace.session_id", "0190a1b2-0000-7000-8000-0000000000ff",
		"langsmith.span.tags", "a, b,,a", "langsmith.metadata.ls_model_name", "explicit", "gen_ai.request.model", "implicit",
		"langsmith.reference_example_id", "0190a1b2-0000-7000-8000-0000000000ee",
	)
	// A plain OpenTelemetry child of the SDK span, in the same export.
	child := span(childHex, rootHex, "otel-child", t0.Add(time.Second))
	runs := byName(decodePB(t, request(kv("langsmith.trace.session_name", "ignored-resource-project"), sdk, child)))
	r := runs["Renamed"]
	for k, want := range map[string]any{
		"id": runUUID, "trace_id": traceU, "parent_run_id": parentU, "dotted_order": dotted, "run_type": "tool",
		"session_name": "my-project", "session_id": "0190a1b2-0000-7000-8000-0000000000ff",
		"reference_example_id": "0190a1b2-0000-7000-8000-0000000000ee",
	} {
		if r[k] != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
	if !reflect.DeepEqual(r["tags"], []string{"a", "b"}) {
		t.Errorf("tags %v", r["tags"])
	}
	if md := metadataOf(r); md["ls_model_name"] != "explicit" {
		t.Errorf("ls_model_name %v: explicit langsmith.metadata must win", md["ls_model_name"])
	}
	c := runs["otel-child"]
	if c["parent_run_id"] != runUUID || c["trace_id"] != traceU {
		t.Errorf("child of an SDK span: parent %v trace %v", c["parent_run_id"], c["trace_id"])
	}
	if want := dotted + ".20250304T050608123456Z" + runID(traceHex, childHex); c["dotted_order"] != want {
		t.Errorf("child dotted_order\n got %v\nwant %v", c["dotted_order"], want)
	}
	if c["session_name"] != "ignored-resource-project" {
		t.Errorf("resource langsmith.trace.session_name: %v", c["session_name"])
	}
	// Tags as a string list.
	r2 := decodePB(t, request(nil, span(rootHex, "", "s", t0, "langsmith.span.tags", []any{"x", " y ", ""})))[0]
	if !reflect.DeepEqual(r2["tags"], []string{"x", "y"}) {
		t.Errorf("tags from a list: %v", r2["tags"])
	}
}

func TestInheritance(t *testing.T) {
	root := span(rootHex, "", "root", t0, "langsmith.trace.session_name", "proj", "session.id", "conv-1",
		"langsmith.trace.session_id", "0190a1b2-0000-7000-8000-0000000000ff")
	child := span(childHex, rootHex, "child", t0)
	own := span(grandHex, childHex, "own", t0, "langsmith.trace.session_name", "other", "langsmith.metadata.thread_id", "t-own")
	runs := byName(decodePB(t, request(nil, own, child, root)))
	if c := runs["child"]; c["session_name"] != "proj" || c["session_id"] != "0190a1b2-0000-7000-8000-0000000000ff" || metadataOf(c)["thread_id"] != "conv-1" {
		t.Errorf("child: %v %v %v", c["session_name"], c["session_id"], metadataOf(c)["thread_id"])
	}
	if o := runs["own"]; o["session_name"] != "other" || metadataOf(o)["thread_id"] != "t-own" {
		t.Errorf("own values must win: %v %v", o["session_name"], metadataOf(o)["thread_id"])
	}
	// A dotted_order override that does not end with the run's id is ignored.
	r := decodePB(t, request(nil, span(rootHex, "", "d", t0, "langsmith.span.dotted_order", "20250101T000000000000Zsomething-else")))[0]
	if want := "20250304T050607123456Z" + runID(traceHex, rootHex); r["dotted_order"] != want {
		t.Errorf("dotted_order %v, want %v", r["dotted_order"], want)
	}
}

func TestThreadID(t *testing.T) {
	cases := []struct {
		attrs []any
		res   []any
		want  any
	}{
		{[]any{"langsmith.metadata.thread_id", "t1", "session.id", "s1"}, nil, "t1"},
		{[]any{"session.id", "s1", "gen_ai.conversation.id", "c1"}, nil, "s1"},
		{[]any{"gen_ai.conversation.id", "c1"}, nil, "c1"},
		{nil, []any{"session.id", "rs"}, "rs"},
		{nil, nil, nil},
	}
	for _, c := range cases {
		r := decodePB(t, request(kv(c.res...), span(rootHex, "", "s", t0, c.attrs...)))[0]
		if got := metadataOf(r)["thread_id"]; got != c.want {
			t.Errorf("%v %v: thread_id %v, want %v", c.attrs, c.res, got, c.want)
		}
	}
}

func TestValues(t *testing.T) {
	r := decodePB(t, request(nil, span(rootHex, "", "v", t0,
		"nan", math.NaN(), "inf", math.Inf(1), "bytes", []byte{1, 2, 3},
		"list", []any{"a", 1, true}, "map", map[string]any{"k": "v"}, "empty", nil,
		"gen_ai.usage.input_tokens", "12", "gen_ai.usage.output_tokens", 3.0,
	)))[0]
	md := metadataOf(r)
	if md["nan"] != "NaN" || md["inf"] != "+Inf" || md["bytes"] != "AQID" || md["empty"] != nil {
		t.Errorf("scalars: %v %v %v %v", md["nan"], md["inf"], md["bytes"], md["empty"])
	}
	if !reflect.DeepEqual(md["list"], []any{"a", int64(1), true}) || !reflect.DeepEqual(md["map"], map[string]any{"k": "v"}) {
		t.Errorf("composites: %v %v", md["list"], md["map"])
	}
	if r["prompt_tokens"] != int64(12) || r["completion_tokens"] != int64(3) || r["total_tokens"] != int64(15) {
		t.Errorf("usage from a string and a double: %v %v %v", r["prompt_tokens"], r["completion_tokens"], r["total_tokens"])
	}
}

// otlpJSON is an OTLP/JSON export as the spec writes it: hex ids, enums as
// integers, 64-bit integers as strings, an unknown field.
const otlpJSON = `{
  "resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
    "scopeSpans": [{
      "scope": {"name": "manual"},
      "spans": [
        {"traceId": "0AF7651916CD43DD8448EB211C80319C", "spanId": "b7ad6b7169203331", "parentSpanId": "",
         "name": "root", "kind": 2, "startTimeUnixNano": "1741064767123456789", "endTimeUnixNano": "1741064768123456789",
         "status": {"code": 2, "message": "failed"}, "futureField": {"x": 1}},
        {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "00f067aa0ba902b7", "parentSpanId": "b7ad6b7169203331",
         "name": "child", "kind": "SPAN_KIND_CLIENT", "startTimeUnixNano": 1741064767223456789,
         "attributes": [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "5"}},
                        {"key": "traceId", "value": {"stringValue": "not-an-id-field"}}],
         "status": {"code": "STATUS_CODE_OK"}}
      ]
    }]
  }]
}`

func TestOTLPJSON(t *testing.T) {
	runs, err := otlp.Decode("application/json; charset=utf-8", []byte(otlpJSON))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(runs)
	root, child := m["root"], m["child"]
	if root["id"] != runID(traceHex, rootHex) || root["trace_id"] != traceUUID(traceHex) || root["error"] != "failed" {
		t.Errorf("root %v", root)
	}
	if child["parent_run_id"] != root["id"] || child["prompt_tokens"] != int64(5) || child["run_type"] != "llm" {
		t.Errorf("child %v", child)
	}
	if _, ok := child["end_time"]; ok {
		t.Error("a span without end time has an end_time")
	}
	if metadataOf(child)["traceId"] != "not-an-id-field" {
		t.Errorf("an attribute named traceId was rewritten: %v", metadataOf(child)["traceId"])
	}
	// protojson's own encoding (base64 ids) is accepted too.
	pb := request(nil, span(rootHex, "", "b64", t0))
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	runs, err = otlp.Decode("application/json", b)
	if err != nil || len(runs) != 1 || runs[0]["id"] != runID(traceHex, rootHex) {
		t.Fatalf("base64 ids: %v %v", runs, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	good, _ := protojson.Marshal(request(nil, span(rootHex, "", "s", t0)))
	cycleA := span(rootHex, childHex, "a", t0)
	cycleB := span(childHex, rootHex, "b", t0)
	self := span(rootHex, rootHex, "self", t0)
	noStart := span(rootHex, "", "s", t0)
	noStart.StartTimeUnixNano = 0
	shortTrace := span(rootHex, "", "s", t0)
	shortTrace.TraceId = []byte{1, 2, 3}
	zeroSpan := span(rootHex, "", "s", t0)
	zeroSpan.SpanId = make([]byte, 8)
	badParent := span(rootHex, "", "s", t0)
	badParent.ParentSpanId = []byte{1}
	pbOf := func(s *tracev1.Span) []byte {
		b, err := protoMarshal(request(nil, s))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cycle, _ := protoMarshal(request(nil, cycleA, cycleB))
	cases := []struct {
		name, ct string
		body     []byte
		kind     otlp.Kind
		msg      string
	}{
		{"empty protobuf", "application/x-protobuf", nil, otlp.KindEmpty, "empty body"},
		{"empty json", "application/json", []byte{}, otlp.KindEmpty, "empty body"},
		{"bad content type", "text/plain", good, otlp.KindContentType, "unsupported content type"},
		{"no content type", "", good, otlp.KindContentType, "unsupported content type"},
		{"bad protobuf", "application/x-protobuf", []byte{0xff, 0xff, 0xff}, otlp.KindProtobuf, "invalid OTLP protobuf body"},
		{"bad json", "application/json", []byte(`{"resourceSpans": [`), otlp.KindJSON, "invalid OTLP/JSON body"},
		{"json wrong type", "application/json", []byte(`{"resourceSpans": 3}`), otlp.KindJSON, "invalid OTLP/JSON body"},
		{"json short id", "application/json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abcd","spanId":"b7ad6b7169203331","startTimeUnixNano":"1"}]}]}]}`), otlp.KindSpan, "traceId must be 16 bytes, got 2"},
		{"json bad id", "application/json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"@@","spanId":"b7ad6b7169203331","startTimeUnixNano":"1"}]}]}]}`), otlp.KindJSON, "invalid OTLP/JSON body"},
		{"no start", "application/x-protobuf", pbOf(noStart), otlp.KindSpan, "startTimeUnixNano is required"},
		{"short trace id", "application/x-protobuf", pbOf(shortTrace), otlp.KindSpan, "traceId must be 16 bytes"},
		{"zero span id", "application/x-protobuf", pbOf(zeroSpan), otlp.KindSpan, "must not be all zero"},
		{"bad parent id", "application/x-protobuf", pbOf(badParent), otlp.KindSpan, "parentSpanId must be empty or 8 bytes"},
		{"self parent", "application/x-protobuf", pbOf(self), otlp.KindSpan, "cycle"},
		{"cycle", "application/x-protobuf", cycle, otlp.KindSpan, "cycle"},
	}
	for _, c := range cases {
		runs, err := otlp.Decode(c.ct, c.body)
		var de *otlp.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: err %v (runs %v), want a *DecodeError", c.name, err, runs)
			continue
		}
		if de.Kind != c.kind || !strings.Contains(de.Error(), c.msg) || runs != nil || !otlp.IsDecodeError(err) {
			t.Errorf("%s: kind %d msg %q, want kind %d containing %q", c.name, de.Kind, de.Error(), c.kind, c.msg)
		}
	}
	// A well-formed export without spans is no runs, not an error.
	runs, err := otlp.Decode("application/json", []byte(`{}`))
	if err != nil || len(runs) != 0 {
		t.Errorf("empty export: %v %v", runs, err)
	}
}
