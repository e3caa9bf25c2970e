package otlp_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	coltracev1 "go.opentelemetry.io/proto/slim/otlp/collector/trace/v1"
	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
	resourcev1 "go.opentelemetry.io/proto/slim/otlp/resource/v1"
	tracev1 "go.opentelemetry.io/proto/slim/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentplane/agentplane/shared/domains/tracing/otlp"
)

// t0 is a start time with microseconds (and nanoseconds to be cut).
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

func ns(t time.Time) uint64 { return uint64(t.UnixNano()) }

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

const (
	traceHex = "0af7651916cd43dd8448eb211c80319c"
	rootHex  = "b7ad6b7169203331"
	childHex = "00f067aa0ba902b7"
	grandHex = "1122334455667788"
)

// kv builds attributes from alternating keys and Go values.
func kv(pairs ...any) []*commonv1.KeyValue {
	var out []*commonv1.KeyValue
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, &commonv1.KeyValue{Key: pairs[i].(string), Value: anyValue(pairs[i+1])})
	}
	return out
}

func anyValue(v any) *commonv1.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_StringValue{StringValue: x}}
	case bool:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_BoolValue{BoolValue: x}}
	case int:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_IntValue{IntValue: int64(x)}}
	case float64:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_DoubleValue{DoubleValue: x}}
	case []byte:
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_BytesValue{BytesValue: x}}
	case []any:
		arr := &commonv1.ArrayValue{}
		for _, e := range x {
			arr.Values = append(arr.Values, anyValue(e))
		}
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_ArrayValue{ArrayValue: arr}}
	case map[string]any:
		kvl := &commonv1.KeyValueList{}
		for k, e := range x {
			kvl.Values = append(kvl.Values, &commonv1.KeyValue{Key: k, Value: anyValue(e)})
		}
		return &commonv1.AnyValue{Value: &commonv1.AnyValue_KvlistValue{KvlistValue: kvl}}
	case nil:
		return &commonv1.AnyValue{}
	}
	panic(fmt.Sprintf("anyValue: %T", v))
}

// span builds a span of the test trace; parent "" is a root.
func span(id, parent, name string, start time.Time, attrs ...any) *tracev1.Span {
	s := &tracev1.Span{
		TraceId: mustHex(traceHex), SpanId: mustHex(id), Name: name,
		StartTimeUnixNano: ns(start), EndTimeUnixNano: ns(start.Add(time.Second)),
		Attributes: kv(attrs...),
	}
	if parent != "" {
		s.ParentSpanId = mustHex(parent)
	}
	return s
}

func request(resAttrs []*commonv1.KeyValue, spans ...*tracev1.Span) *coltracev1.ExportTraceServiceRequest {
	return &coltracev1.ExportTraceServiceRequest{ResourceSpans: []*tracev1.ResourceSpans{{
		Resource:   &resourcev1.Resource{Attributes: resAttrs},
		ScopeSpans: []*tracev1.ScopeSpans{{Scope: &commonv1.InstrumentationScope{Name: "test-scope", Version: "1.2.3"}, Spans: spans}},
	}}}
}

// decodePB marshals req and decodes it as OTLP protobuf.
func decodePB(t testing.TB, req *coltracev1.ExportTraceServiceRequest) []map[string]any {
	t.Helper()
	body, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := otlp.Decode("application/x-protobuf", body)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	// Every run must survive JSON (what the ingest does with it next).
	if _, err := json.Marshal(runs); err != nil {
		t.Fatalf("runs do not encode as JSON: %v", err)
	}
	return runs
}

// jsonOf re-reads v through JSON, so comparisons see what a client would.
func jsonOf(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func byName(runs []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, r := range runs {
		m[r["name"].(string)] = r
	}
	return m
}

func runID(traceH, spanH string) string {
	var tr [16]byte
	var sp [8]byte
	copy(tr[:], mustHex(traceH))
	copy(sp[:], mustHex(spanH))
	return otlp.RunID(tr, sp).String()
}

func traceUUID(traceH string) string {
	var tr [16]byte
	copy(tr[:], mustHex(traceH))
	return otlp.TraceUUID(tr).String()
}

func metadataOf(r map[string]any) map[string]any {
	return r["extra"].(map[string]any)["metadata"].(map[string]any)
}

func protoMarshal(req *coltracev1.ExportTraceServiceRequest) ([]byte, error) {
	return proto.Marshal(req)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
