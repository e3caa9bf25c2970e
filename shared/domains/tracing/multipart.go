package tracing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

// batch is the content of one ingest request, validated.
type batch struct {
	Runs     []*runOp
	Feedback []*feedbackCreate
}

// Ingest kinds: what shape the raw body has.
const (
	kindRun       = "run"       // POST /runs: one run create
	kindPatch     = "patch"     // PATCH /runs/{id}: one run update
	kindBatch     = "batch"     // POST /runs/batch: {"post": [...], "patch": [...]}
	kindMultipart = "multipart" // POST /runs/multipart
)

// parseBody validates a raw ingest body of a kind. Every error is a
// *web.ValidationError (422) or a *web.Error. seed names the stored batch:
// a create without an id gets one derived from it, the same each time the
// batch is read.
func parseBody(kind, contentType string, body []byte, pathID, seed string) (*batch, error) {
	switch kind {
	case kindRun, kindPatch:
		var p web.Problems
		if err := jsonObject(body); err != nil {
			return nil, err
		}
		def := ""
		if kind == kindRun {
			def = derivedID(seed, "run")
		}
		op := parseRun(body, kind == kindPatch, pathID, def, web.Loc("body"), &p)
		if err := p.Err(); err != nil {
			return nil, err
		}
		return &batch{Runs: []*runOp{op}}, nil
	case kindBatch:
		return parseBatchJSON(body, seed)
	case kindMultipart:
		return parseMultipart(contentType, body)
	}
	return nil, fmt.Errorf("tracing: unknown ingest kind %q", kind)
}

// jsonObject reports a body that is not one JSON object in the FastAPI
// shape.
func jsonObject(body []byte) error {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return web.Invalid(web.Loc("body"), "Field required", "missing")
	}
	if !json.Valid(t) {
		var v any
		err := json.Unmarshal(t, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return web.Invalid(web.Loc("body", int(se.Offset)), "JSON decode error: "+se.Error(), "json_invalid")
		}
		return web.Invalid(web.Loc("body"), "JSON decode error", "json_invalid")
	}
	if t[0] != '{' {
		return web.Invalid(web.Loc("body"), "Input should be a valid dictionary", "model_attributes_type")
	}
	return nil
}

// derivedID is the id of a create sent without one.
func derivedID(seed, what string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("agentplane:tracing:"+seed+":"+what)).String()
}

func parseBatchJSON(body []byte, seed string) (*batch, error) {
	if err := jsonObject(body); err != nil {
		return nil, err
	}
	var w struct {
		Post  []json.RawMessage `json:"post"`
		Patch []json.RawMessage `json:"patch"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, web.Invalid(web.Loc("body"), "post and patch should be lists of runs", "list_type")
	}
	var p web.Problems
	b := &batch{}
	for i, raw := range w.Post {
		if op := parseRun(raw, false, "", derivedID(seed, "post:"+strconv.Itoa(i)), web.Loc("body", "post", i), &p); op != nil {
			b.Runs = append(b.Runs, op)
		}
	}
	for i, raw := range w.Patch {
		if op := parseRun(raw, true, "", "", web.Loc("body", "patch", i), &p); op != nil {
			b.Runs = append(b.Runs, op)
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// multipartFields are the per-field parts a run may send beside its main
// part: post.{id}.inputs and so on.
var multipartFields = map[string]bool{"inputs": true, "outputs": true, "events": true, "extra": true, "error": true, "serialized": true}

const maxAttachmentName = 256

// parseMultipart reads a /runs/multipart body. An empty or unparseable
// body is a 422: the JS SDK then retries with a buffered body (a streamed
// one may have been lost by a proxy).
func parseMultipart(contentType string, body []byte) (*batch, error) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, web.Invalid(web.Loc("header", "Content-Type"), "Expected multipart/form-data with a boundary", "value_error")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, web.Invalid(web.Loc("body"), "The multipart body is empty", "missing")
	}
	type runParts struct {
		main   json.RawMessage
		fields map[string]json.RawMessage
	}
	// Operations in the order their parts first appear.
	var order []string
	runs := map[string]*runParts{}
	attachments := map[string]map[string]attachmentData{}
	var feedback []json.RawMessage
	var feedbackIDs []string
	var p web.Problems
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	parts := 0
	for {
		part, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, web.Invalid(web.Loc("body"), "Could not parse the multipart body: "+err.Error(), "value_error")
		}
		name := formName(part)
		data, err := io.ReadAll(part)
		if err != nil {
			return nil, web.Invalid(web.Loc("body", name), "Could not read the part: "+err.Error(), "value_error")
		}
		parts++
		loc := web.Loc("body", name)
		event, rest, _ := strings.Cut(name, ".")
		switch event {
		case "post", "patch":
			id, field, hasField := strings.Cut(rest, ".")
			uid, err := web.ParseUUID(id)
			if err != nil {
				p.Add(loc, "The part name must be "+event+".<run uuid>[.<field>]", "value_error")
				continue
			}
			opKey := event + "." + uid
			rp := runs[opKey]
			if rp == nil {
				rp = &runParts{fields: map[string]json.RawMessage{}}
				runs[opKey] = rp
				order = append(order, opKey)
			}
			if !hasField {
				if rp.main != nil {
					p.Add(loc, "Duplicate part", "value_error")
				}
				rp.main = data
				continue
			}
			if !multipartFields[field] {
				p.Add(loc, "Unknown field part: expected inputs, outputs, events, extra, error or serialized", "value_error")
				continue
			}
			if !json.Valid(data) {
				p.Add(loc, "The part is not valid JSON", "json_invalid")
				continue
			}
			rp.fields[field] = data
		case "feedback":
			id, err := web.ParseUUID(rest)
			if err != nil {
				p.Add(loc, "The part name must be feedback.<feedback uuid>", "value_error")
				continue
			}
			feedback = append(feedback, data)
			feedbackIDs = append(feedbackIDs, id)
		case "attachment":
			id, aname, ok := strings.Cut(rest, ".")
			uid, err := web.ParseUUID(id)
			if !ok || err != nil || aname == "" || strings.Contains(aname, ".") || len(aname) > maxAttachmentName {
				p.Add(loc, "The part name must be attachment.<run uuid>.<name>, the name without '.'", "value_error")
				continue
			}
			ct := part.Header.Get("Content-Type")
			if mt, _, err := mime.ParseMediaType(ct); err == nil {
				ct = mt
			} else {
				ct = "application/octet-stream"
			}
			if attachments[uid] == nil {
				attachments[uid] = map[string]attachmentData{}
			}
			attachments[uid][aname] = attachmentData{ContentType: ct, Data: data}
		default:
			p.Add(loc, "Unknown part: expected post.<id>, patch.<id>, feedback.<id> or attachment.<run id>.<name>", "value_error")
		}
	}
	if parts == 0 {
		return nil, web.Invalid(web.Loc("body"), "The multipart body has no parts", "missing")
	}
	b := &batch{}
	byID := map[string]*runOp{}
	for _, key := range order {
		rp := runs[key]
		event, id, _ := strings.Cut(key, ".")
		loc := web.Loc("body", key)
		// The field parts go into the run's fields as they are: no
		// re-encoding of the main part.
		var w wireRun
		if rp.main != nil {
			if err := json.Unmarshal(rp.main, &w); err != nil {
				p.Add(loc, "The part should be a JSON object: "+err.Error(), "model_attributes_type")
				continue
			}
		}
		for f, v := range rp.fields {
			switch f {
			case "inputs":
				w.Inputs = v
			case "outputs":
				w.Outputs = v
			case "events":
				w.Events = v
			case "extra":
				w.Extra = v
			case "error":
				w.Error = v
			case "serialized":
				w.Serialized = v
			}
		}
		op := parseWire(&w, event == "patch", id, "", loc, &p)
		if op == nil {
			continue
		}
		b.Runs = append(b.Runs, op)
		if byID[id] == nil {
			byID[id] = op
		}
	}
	for id, atts := range attachments {
		op := byID[id]
		if op == nil {
			op = &runOp{Patch: true, ID: id}
			b.Runs = append(b.Runs, op)
			byID[id] = op
		}
		op.Attachments = atts
	}
	for i, raw := range feedback {
		if fc := parseFeedbackCreate(raw, feedbackIDs[i], web.Loc("body", "feedback."+feedbackIDs[i]), &p); fc != nil {
			if fc.TraceID == nil {
				p.Add(web.Loc("body", "feedback."+feedbackIDs[i], "trace_id"), "Field required in a multipart feedback part", "missing")
				continue
			}
			if fc.RunID == nil {
				p.Add(web.Loc("body", "feedback."+feedbackIDs[i], "run_id"), "Field required in a multipart feedback part", "missing")
				continue
			}
			b.Feedback = append(b.Feedback, fc)
		}
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return b, nil
}

// formName is the part's form field name. The SDKs write a plain
// `form-data; name="..."`, read here without the general parser (the
// most expensive step of a large batch); anything else takes
// mime/multipart's.
func formName(p *multipart.Part) string {
	cd := p.Header.Get("Content-Disposition")
	if rest, ok := strings.CutPrefix(cd, `form-data; name="`); ok && strings.HasSuffix(rest, `"`) {
		name := rest[:len(rest)-1]
		if !strings.ContainsAny(name, "\\\";") {
			return name
		}
	}
	return p.FormName()
}
