package otlp_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	tracev1 "go.opentelemetry.io/proto/slim/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentplane/agentplane/shared/domains/tracing/otlp"
)

// export100 is a 100-span export shaped like an agent's: one root, then
// LLM calls with GenAI attributes and a ~1 KB prompt, each with a tool
// call below it.
func export100() []*tracev1.Span {
	id := func(i int) string {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(i)+1)
		return hex.EncodeToString(b[:])
	}
	prompt := `{"messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", 85) + `"}]}`
	spans := []*tracev1.Span{span(id(0), "", "agent", t0, "langsmith.trace.session_name", "bench", "session.id", "s-1")}
	for i := 1; i < 100; i += 2 {
		start := t0.Add(time.Duration(i) * time.Millisecond)
		spans = append(spans,
			span(id(i), id(0), "chat", start,
				"gen_ai.operation.name", "chat", "gen_ai.system", "openai", "gen_ai.request.model", "gpt-4o",
				"gen_ai.request.temperature", 0.1, "gen_ai.prompt", prompt, "gen_ai.completion", "a short answer",
				"gen_ai.usage.input_tokens", 250, "gen_ai.usage.output_tokens", 12),
			span(id(i+1), id(i), "tool", start.Add(time.Millisecond),
				"gen_ai.operation.name", "execute_tool", "gen_ai.tool.name", "search", "input.value", `{"q":"x"}`, "output.value", "result"),
		)
	}
	return spans[:100]
}

func BenchmarkDecode100Spans(b *testing.B) {
	req := request(nil, export100()...)
	pb, err := protoMarshal(req)
	if err != nil {
		b.Fatal(err)
	}
	js, err := protojson.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	// OTLP/JSON writes ids in hex, as exporters send them.
	jsHex := hexIDs(string(js), req)
	for _, c := range []struct {
		name, ct string
		body     []byte
	}{{"protobuf", otlp.ContentTypeProtobuf, pb}, {"json", otlp.ContentTypeJSON, []byte(jsHex)}} {
		b.Run(c.name, func(b *testing.B) {
			runs, err := otlp.Decode(c.ct, c.body)
			if err != nil || len(runs) != 100 {
				b.Fatalf("%d runs, %v", len(runs), err)
			}
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := otlp.Decode(c.ct, c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// hexIDs replaces protojson's base64 ids with OTLP/JSON's hex ones.
func hexIDs(js string, req interface {
	GetResourceSpans() []*tracev1.ResourceSpans
}) string {
	var pairs []string
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				for _, id := range [][]byte{s.GetTraceId(), s.GetSpanId(), s.GetParentSpanId()} {
					if len(id) > 0 {
						pairs = append(pairs, fmt.Sprintf("%q", b64(id)), fmt.Sprintf("%q", hex.EncodeToString(id)))
					}
				}
			}
		}
	}
	return strings.NewReplacer(pairs...).Replace(js)
}
