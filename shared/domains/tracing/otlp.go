package tracing

import (
	"mime"
	"net/http"
	"strings"

	otlpmap "github.com/agentplane/agentplane/shared/domains/tracing/otlp"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// decodeOTLP maps one OTLP/HTTP trace export to run creates (objects of
// the POST /runs shape): shared/domains/tracing/otlp, over the official
// OTLP protos. A variable so tests can stand in a decoder.
var decodeOTLP = otlpmap.Decode

// OTLP content types.
const (
	otlpProtobuf = "application/x-protobuf"
	otlpJSON     = "application/json"
)

// ProjectHeader names the project of OTLP runs that name none.
const ProjectHeader = "Langsmith-Project"

// otlp serves POST /otel/v1/traces: the export is decoded to run creates,
// which then take exactly the path of POST /runs/batch.
func (h *Handler) otlp(w http.ResponseWriter, r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	mt = strings.ToLower(mt)
	if err != nil || (mt != otlpProtobuf && mt != otlpJSON) {
		return web.Errorf(http.StatusUnsupportedMediaType, "Unsupported Content-Type %q: send %s or %s", ct, otlpProtobuf, otlpJSON)
	}
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	runs, err := decodeOTLP(mt, body)
	if err != nil {
		// Decoding is a pure function of the request: every error is the
		// client's (OTLP/HTTP: 400, not retried).
		return web.BadRequest("Invalid OTLP export: %s", err.Error())
	}
	if project := strings.TrimSpace(r.Header.Get(ProjectHeader)); project != "" {
		for _, run := range runs {
			if run["session_name"] == nil && run["session_id"] == nil {
				run["session_name"] = project
			}
		}
	}
	if len(runs) > 0 {
		if _, err := h.s.IngestRuns(r.Context(), caller(r), runs); err != nil {
			return mapErr(err)
		}
	}
	if mt == otlpProtobuf {
		// An empty ExportTraceServiceResponse.
		w.Header().Set("Content-Type", otlpProtobuf)
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}
