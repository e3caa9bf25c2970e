package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OpenTelemetry Go SDK's OTLP/HTTP exporter sends spans to
// /otel/v1/traces; they come back as runs of one trace, with the GenAI
// attributes mapped (run type, model, tokens) and the error kept.
func TestOpenTelemetryExporterRoundTrip(t *testing.T) {
	e := newEnv(t, envOptions{})
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(e.srv.URL+"/otel/v1/traces"),
		otlptracehttp.WithHeaders(map[string]string{"X-Api-Key": e.key, "Langsmith-Project": "otel-sdk"}),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracer := tp.Tracer("agentplane-test")
	ctx, root := tracer.Start(context.Background(), "agent")
	root.SetAttributes(attribute.String("langsmith.metadata.thread_id", "thread-7"))
	_, llm := tracer.Start(ctx, "chat")
	llm.SetAttributes(
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.system", "openai"),
		attribute.String("gen_ai.request.model", "gpt-test"),
		attribute.Int("gen_ai.usage.input_tokens", 12),
		attribute.Int("gen_ai.usage.output_tokens", 30),
	)
	llm.End()
	_, tool := tracer.Start(ctx, "lookup")
	tool.SetStatus(codes.Error, "lookup failed")
	tool.End()
	root.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatalf("export: %v", err)
	}
	e.drain()

	p := e.project("otel-sdk")
	if p["run_count"] != float64(3) {
		t.Fatalf("project: %v", p)
	}
	runs, _ := e.query(map[string]any{"session": []string{p["id"].(string)}, "order": "asc"})
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	byName := map[string]map[string]any{}
	trace := runs[0]["trace_id"]
	for _, r := range runs {
		byName[r["name"].(string)] = r
		if r["trace_id"] != trace {
			t.Errorf("%s: trace %v, want %v", r["name"], r["trace_id"], trace)
		}
	}
	chat := byName["chat"]
	if chat["run_type"] != "llm" || chat["total_tokens"] != float64(42) || chat["parent_run_id"] != byName["agent"]["id"] {
		t.Errorf("chat run: %v", chat)
	}
	if byName["lookup"]["error"] == nil {
		t.Errorf("lookup run lost its error: %v", byName["lookup"])
	}
	threadRuns, _ := e.query(map[string]any{"session": []string{p["id"].(string)},
		"filter": `and(in(metadata_key, ["session_id","conversation_id","thread_id"]), eq(metadata_value, "thread-7"))`})
	if len(threadRuns) == 0 {
		t.Errorf("no run found by the thread filter")
	}
}
