package otlp_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentplane/agentplane/shared/domains/tracing/otlp"
)

// FuzzDecode: no input panics; an input is either a *DecodeError or runs
// that encode as JSON and carry the fields every run must have.
func FuzzDecode(f *testing.F) {
	sample := request(kv("service.name", "svc"),
		span(rootHex, "", "root", t0, "langsmith.span.tags", "a,b"),
		span(childHex, rootHex, "llm", t0.Add(time.Millisecond), "gen_ai.system", "openai", "gen_ai.prompt", `{"a":1}`,
			"gen_ai.prompt.0.role", "user", "gen_ai.usage.input_tokens", 3),
	)
	pb, err := protoMarshal(sample)
	if err != nil {
		f.Fatal(err)
	}
	js, err := protojson.Marshal(sample)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(true, []byte(otlpJSON))
	f.Add(true, js)
	f.Add(false, pb)
	f.Add(false, []byte{})
	f.Add(true, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","parentSpanId":"b7ad6b7169203331","startTimeUnixNano":"1"}]}]}]}`))
	f.Add(true, []byte(`{"traceId":"\"","spanId":`))
	f.Fuzz(func(t *testing.T, isJSON bool, body []byte) {
		ct := otlp.ContentTypeProtobuf
		if isJSON {
			ct = otlp.ContentTypeJSON
		}
		runs, err := otlp.Decode(ct, body)
		if err != nil {
			var de *otlp.DecodeError
			if !errors.As(err, &de) || runs != nil {
				t.Fatalf("error %T %v with runs %v", err, err, runs)
			}
			return
		}
		if _, err := json.Marshal(runs); err != nil {
			t.Fatalf("runs do not encode: %v", err)
		}
		for _, r := range runs {
			for _, k := range []string{"id", "trace_id", "dotted_order", "name", "run_type", "start_time", "inputs", "extra"} {
				if _, ok := r[k]; !ok {
					t.Fatalf("run without %s: %v", k, r)
				}
			}
		}
	})
}
