package otlp_test

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentplane/agentplane/shared/domains/tracing/otlp"
)

// collector is an OTLP/HTTP endpoint whose handler does what the tracing
// API's does before ingest: undo Content-Encoding, then Decode.
type collector struct {
	mu      sync.Mutex
	exports [][]map[string]any
	errs    []error
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	runs, err := otlp.Decode(r.Header.Get("Content-Type"), data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.exports = append(c.exports, runs)
	// An empty ExportTraceServiceResponse.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// TestOpenTelemetrySDK sends spans made by the OpenTelemetry Go SDK through
// its OTLP/HTTP exporter (protobuf, gzip) and checks the runs they map to:
// a nested agent trace with a GenAI call and a failing tool, exported in two
// batches the way a batch processor splits a long trace.
func TestOpenTelemetrySDK(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col) // listens on 127.0.0.1
	defer srv.Close()

	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(srv.URL+"/otel/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		otlptracehttp.WithHeaders(map[string]string{"x-api-key": "test"}),
	)
	if err != nil {
		t.Fatal(err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "weather-agent")))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour), sdktrace.WithMaxExportBatchSize(512)),
	)
	defer func() { _ = tp.Shutdown(ctx) }()
	tracer := tp.Tracer("weather", trace.WithInstrumentationVersion("0.1.0"))

	ctx1, root := tracer.Start(ctx, "agent", trace.WithAttributes(
		attribute.String("langsmith.trace.session_name", "weather-project"),
		attribute.String("session.id", "conv-7"),
		attribute.String("langsmith.span.tags", "prod,agent"),
	))
	ctx2, llm := tracer.Start(ctx1, "chat gpt-4o", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", "openai"),
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Float64("gen_ai.request.temperature", 0.5),
		attribute.Int("gen_ai.usage.input_tokens", 120),
		attribute.Int("gen_ai.usage.output_tokens", 30),
		attribute.String("langsmith.metadata.thread_id", "thread-1"),
	))
	llm.AddEvent("gen_ai.system.message", trace.WithAttributes(attribute.String("content", "You answer weather questions.")))
	llm.AddEvent("gen_ai.user.message", trace.WithAttributes(attribute.String("content", "Weather in Paris?")))
	llm.AddEvent("gen_ai.choice", trace.WithAttributes(
		attribute.Int("index", 0), attribute.String("finish_reason", "tool_calls"),
		attribute.String("message", `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`),
	))
	_, tool := tracer.Start(ctx2, "get_weather", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "get_weather"),
		attribute.String("input.value", `{"city":"Paris"}`),
	))
	tool.RecordError(errors.New("weather service unavailable"))
	tool.SetStatus(codes.Error, "weather service unavailable")
	tool.End()
	// The tool span is exported before its parents end.
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	llm.End()
	root.End()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.errs) > 0 {
		t.Fatalf("Decode failed on the SDK's export: %v", col.errs)
	}
	if len(col.exports) != 2 || len(col.exports[0]) != 1 || len(col.exports[1]) != 2 {
		t.Fatalf("exports: %d (%v)", len(col.exports), col.exports)
	}
	runs := byName(append(append([]map[string]any{}, col.exports[0]...), col.exports[1]...))

	sc := func(s trace.Span) ([16]byte, [8]byte) {
		c := s.SpanContext()
		return c.TraceID(), c.SpanID()
	}
	tr, rootSpan := sc(root)
	_, llmSpan := sc(llm)
	_, toolSpan := sc(tool)
	rootID, llmID, toolID := otlp.RunID(tr, rootSpan).String(), otlp.RunID(tr, llmSpan).String(), otlp.RunID(tr, toolSpan).String()
	traceID := otlp.TraceUUID(tr).String()

	a, l, w := runs["agent"], runs["chat gpt-4o"], runs["get_weather"]
	if a == nil || l == nil || w == nil {
		t.Fatalf("runs: %v", runs)
	}
	for _, c := range []struct {
		run            map[string]any
		id, parent, rt string
	}{{a, rootID, "", "chain"}, {l, llmID, rootID, "llm"}, {w, toolID, llmID, "tool"}} {
		if c.run["id"] != c.id || c.run["trace_id"] != traceID || c.run["run_type"] != c.rt {
			t.Errorf("%v: id %v trace %v type %v", c.run["name"], c.run["id"], c.run["trace_id"], c.run["run_type"])
		}
		if got, _ := c.run["parent_run_id"].(string); got != c.parent {
			t.Errorf("%v: parent_run_id %q, want %q", c.run["name"], got, c.parent)
		}
		if _, ok := c.run["end_time"]; !ok {
			t.Errorf("%v: no end_time", c.run["name"])
		}
	}
	// The agent and its LLM call came together: the LLM's order is complete.
	if d := l["dotted_order"].(string); !strings.HasPrefix(d, a["dotted_order"].(string)+".") || !strings.HasSuffix(d, llmID) {
		t.Errorf("llm dotted_order %s (agent %s)", d, a["dotted_order"])
	}
	// The tool came alone: its order starts at itself, its parent is known.
	if d := w["dotted_order"].(string); strings.Contains(d, ".") || !strings.HasSuffix(d, toolID) {
		t.Errorf("tool dotted_order %s", d)
	}
	if w["error"] != "weather service unavailable" {
		t.Errorf("tool error %v", w["error"])
	}
	if _, ok := a["error"]; ok {
		t.Errorf("agent error %v", a["error"])
	}
	if a["session_name"] != "weather-project" || metadataOf(a)["thread_id"] != "conv-7" || metadataOf(a)["service.name"] != "weather-agent" {
		t.Errorf("agent session %v metadata %v", a["session_name"], metadataOf(a))
	}
	if tags, _ := a["tags"].([]string); len(tags) != 2 || tags[0] != "prod" || tags[1] != "agent" {
		t.Errorf("agent tags %v", a["tags"])
	}
	// The LLM call inherits the project named on its parent in the same
	// export; the tool, exported alone, is left to the ingest.
	if l["session_name"] != "weather-project" {
		t.Errorf("llm session_name %v", l["session_name"])
	}
	if _, ok := w["session_name"]; ok {
		t.Errorf("tool session_name %v", w["session_name"])
	}
	md := metadataOf(l)
	if md["ls_provider"] != "openai" || md["ls_model_name"] != "gpt-4o" || md["thread_id"] != "thread-1" || md["otel.scope.name"] != "weather" {
		t.Errorf("llm metadata %v", md)
	}
	if l["prompt_tokens"] != int64(120) || l["completion_tokens"] != int64(30) || l["total_tokens"] != int64(150) {
		t.Errorf("llm usage %v %v %v", l["prompt_tokens"], l["completion_tokens"], l["total_tokens"])
	}
	msgs, _ := l["inputs"].(map[string]any)["messages"].([]any)
	if len(msgs) != 2 || msgs[1].(map[string]any)["content"] != "Weather in Paris?" {
		t.Errorf("llm inputs %v", l["inputs"])
	}
	choices, _ := l["outputs"].(map[string]any)["choices"].([]any)
	if len(choices) != 1 || choices[0].(map[string]any)["finish_reason"] != "tool_calls" {
		t.Errorf("llm outputs %v", l["outputs"])
	}
	if w["inputs"].(map[string]any)["city"] != "Paris" {
		t.Errorf("tool inputs %v", w["inputs"])
	}
}
