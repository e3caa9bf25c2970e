// Package otlp maps OTLP/HTTP trace exports (POST /otel/v1/traces) to
// LangSmith run-create objects, following the attribute and event mapping
// LangSmith documents for OpenTelemetry ingest: the langsmith.* attributes,
// the GenAI semantic conventions (gen_ai.*), OpenInference and Traceloop.
//
// It decodes with the official OTLP protos (go.opentelemetry.io/proto/slim/otlp,
// which has no gRPC dependency) and protojson; it holds no state, so each
// export is mapped on its own (see Decode for what that means for parents
// that arrive in another export).
package otlp

import (
	"errors"
	"fmt"
	"mime"
	"strings"

	coltracev1 "go.opentelemetry.io/proto/slim/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The content types of OTLP/HTTP.
const (
	ContentTypeProtobuf = "application/x-protobuf"
	ContentTypeJSON     = "application/json"
)

// Kind classifies a DecodeError.
type Kind int

const (
	// KindContentType: the content type is neither OTLP protobuf nor JSON
	// (OTLP/HTTP answers 415 Unsupported Media Type).
	KindContentType Kind = iota + 1
	// KindEmpty: the body is empty.
	KindEmpty
	// KindProtobuf: the body is not a protobuf ExportTraceServiceRequest.
	KindProtobuf
	// KindJSON: the body is not an OTLP/JSON ExportTraceServiceRequest.
	KindJSON
	// KindSpan: the request parses but a span is unusable (bad trace or
	// span id, no start time).
	KindSpan
)

// DecodeError reports an export that cannot be mapped. Its message is meant
// for the client. OTLP/HTTP answers KindContentType with 415 and the other
// kinds with 400 (both non-retryable for exporters).
type DecodeError struct {
	Kind Kind
	Msg  string
	// Err is the parser's error, if any.
	Err error
}

func (e *DecodeError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *DecodeError) Unwrap() error { return e.Err }

// IsDecodeError reports whether err is (or wraps) a *DecodeError.
func IsDecodeError(err error) bool {
	var de *DecodeError
	return errors.As(err, &de)
}

// unmarshalJSON accepts what OTLP/JSON allows beyond canonical protojson:
// unknown fields are ignored (the spec requires receivers to), enums may be
// integers or names, 64-bit integers numbers or strings.
var unmarshalJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// Decode maps one OTLP/HTTP trace export to LangSmith run-create objects:
// maps with the JSON shape of a POST /runs body, one per span, in the order
// of the export.
//
// contentType is the request's Content-Type (parameters such as charset are
// ignored): application/x-protobuf or application/json (OTLP/JSON: hex trace
// and span ids, enums as integers or names, 64-bit integers as numbers or
// strings). body is the request body after Content-Encoding: decompressing
// gzip is the HTTP layer's job, not Decode's. An empty body, a body that does
// not parse, an unsupported content type or an unusable span (trace id not 16
// bytes, span id not 8 bytes, all-zero ids, no start time) is a
// *DecodeError; nothing is returned with it. A well-formed export without
// spans returns an empty slice.
//
// Each run has:
//   - id: the langsmith.span.id attribute when it is a UUID, else a UUID
//     derived from the span id and trace id (RunID), so a replayed export
//     yields the same ids;
//   - trace_id: langsmith.trace.id when a UUID, else the trace id of the
//     parent when the parent is in the export, else the OTLP trace id's 16
//     bytes as a UUID (TraceUUID). The root run of a native OTLP trace
//     therefore has id != trace_id: its id comes from its span id, which the
//     children of later exports can compute, while the trace id is shared;
//   - parent_run_id (absent for a root span): langsmith.span.parent_id when a
//     UUID, else the id of the parent when it is in the export, else
//     RunID(trace id, parent span id), which is the parent's id whenever the
//     parent itself carries no langsmith.span.id;
//   - dotted_order: langsmith.span.dotted_order when set (and ending with
//     the run's id); else segments
//     <YYYYMMDDTHHMMSSffffffZ><run id> from the topmost ancestor found in the
//     export down to the span. The order is complete when that topmost run
//     has no parent_run_id. Otherwise (its parent is in another export) it
//     starts at that run, and the ingest must prefix the parent's stored
//     dotted_order, or wait for the parent;
//   - name: langsmith.trace.name, traceloop.entity.name, tool.name (for an
//     OpenInference TOOL span), else the span name ("Unnamed" if empty);
//   - run_type: langsmith.span.kind, openinference.span.kind,
//     traceloop.span.kind / traceloop.llm.request.type, gen_ai.operation.name,
//     gen_ai.tool.name (tool), llm.prompt_template.variables (prompt), any
//     other GenAI model attribute (llm), else chain;
//   - start_time, end_time (end only once the span ended): RFC 3339 UTC with
//     microseconds;
//   - inputs (always, {} when none) and outputs (when any): from gen_ai.prompt
//     / gen_ai.completion, gen_ai.input.messages / gen_ai.output.messages,
//     gen_ai.prompt.{n}.* / gen_ai.completion.{n}.*, llm.input_messages /
//     llm.output_messages, input.value / output.value,
//     traceloop.entity.input / output, retrieval.documents, and the span
//     events of the GenAI conventions (gen_ai.{system,user,assistant,tool}.message
//     into inputs.messages, gen_ai.choice into outputs.choices,
//     gen_ai.content.prompt / completion);
//   - error: set when the status code is ERROR (the status message, else the
//     exception event's type, message and stack trace), or when the status is
//     unset and an exception event was recorded;
//   - extra.metadata: resource attributes, then span attributes (those that
//     carry inputs or outputs and the langsmith.* controls excepted), then
//     langsmith.metadata.{key} as {key}; ls_provider (gen_ai.system,
//     gen_ai.provider.name or llm.system, lower case) and ls_model_name
//     (gen_ai.request.model, gen_ai.response.model or llm.model_name);
//     thread_id from langsmith.metadata.thread_id, else session.id, else
//     gen_ai.conversation.id; usage_metadata; OTEL_TRACE_ID, OTEL_SPAN_ID,
//     OTEL_PARENT_SPAN_ID (hex) and otel.scope.name / otel.scope.version;
//   - extra.invocation_params from gen_ai.request.* (model, temperature, ...);
//   - prompt_tokens, completion_tokens, total_tokens (and
//     extra.metadata.usage_metadata) from gen_ai.usage.input_tokens /
//     output_tokens / total_tokens (or their deprecated prompt/completion
//     names, or llm.token_count.*), total = input + output when not given;
//   - tags from langsmith.span.tags (comma-separated or a string array);
//   - session_name from the langsmith.trace.session_name attribute (of the
//     span, else of the resource) and session_id from
//     langsmith.trace.session_id when a UUID. LangSmith documents no other
//     source inside the export (service.name is metadata, not the project):
//     without them the HTTP layer applies the Langsmith-Project header, else
//     the default project. A span without them takes those of its parent
//     when the parent is in the export (a trace belongs to one project), as
//     it takes its parent's thread_id; across exports the ingest decides;
//   - events: the span events not consumed above, as {name, time, kwargs}.
func Decode(contentType string, body []byte) ([]map[string]any, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, &DecodeError{Kind: KindContentType, Msg: fmt.Sprintf("unsupported content type %q: send %s or %s", contentType, ContentTypeProtobuf, ContentTypeJSON)}
	}
	mt = strings.ToLower(mt)
	if mt != ContentTypeProtobuf && mt != ContentTypeJSON {
		return nil, &DecodeError{Kind: KindContentType, Msg: fmt.Sprintf("unsupported content type %q: send %s or %s", mt, ContentTypeProtobuf, ContentTypeJSON)}
	}
	if len(body) == 0 {
		return nil, &DecodeError{Kind: KindEmpty, Msg: "empty body: expected an OTLP ExportTraceServiceRequest"}
	}
	var req coltracev1.ExportTraceServiceRequest
	if mt == ContentTypeProtobuf {
		if err := proto.Unmarshal(body, &req); err != nil {
			return nil, &DecodeError{Kind: KindProtobuf, Msg: "invalid OTLP protobuf body", Err: err}
		}
	} else {
		if err := unmarshalJSON.Unmarshal(hexIDsToBase64(body), &req); err != nil {
			return nil, &DecodeError{Kind: KindJSON, Msg: "invalid OTLP/JSON body", Err: err}
		}
	}
	return mapRequest(&req)
}
