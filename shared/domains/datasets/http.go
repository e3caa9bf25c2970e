package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the datasets API.
type Handler struct{ svc *Service }

// NewHandler returns the HTTP handler of svc.
func NewHandler(svc *Service) *Handler { return &Handler{svc: svc} }

// Multipart example routes: the JS SDK posts to {apiUrl}/v1/platform/…,
// or to {apiUrl}/platform/… when apiUrl ends in /v1 (a self-hosted
// {host}/api/v1): both are declared, since the group's /api/v1 mount would
// only give /api/v1/v1/platform/….
const (
	platformExamples      = "/v1/platform/datasets/{dataset_id}/examples"
	platformExamplesAPIV1 = "/api/v1/platform/datasets/{dataset_id}/examples"
)

var (
	listQuery = []api.Param{
		{Name: "limit", Type: "integer", Description: "1 to 100 (default 100)"},
		{Name: "offset", Type: "integer", Description: "0 or more (default 0)"},
	}
	asOfParam = api.Param{Name: "as_of", Type: "string", Description: "a version: an ISO timestamp, a tag, or latest"}
)

// Routes is the datasets route group, served at / and under /api/v1.
var Routes = api.Group[*Handler]{
	Name:        "datasets",
	Description: "Datasets and their versioned examples (LangSmith datasets API)",
	Mounts:      []string{"/api/v1"},
	Routes: []api.Route[*Handler]{
		{Method: "GET", Path: "/datasets", Summary: "List datasets", Auth: api.Workspace, Role: auth.RoleViewer,
			Result: []Dataset{}, Handle: (*Handler).listDatasets, Query: append([]api.Param{
				{Name: "id", Type: "array", Description: "dataset ids (repeated)"},
				{Name: "data_type", Type: "string", Description: "kv, llm or chat"},
				{Name: "name", Type: "string", Description: "exact name"},
				{Name: "name_contains", Type: "string", Description: "case-insensitive substring of the name"},
				{Name: "metadata", Type: "string", Description: "JSON object every key of which the metadata holds"},
			}, listQuery...)},
		{Method: "POST", Path: "/datasets", Summary: "Create a dataset", Auth: api.Workspace, Role: auth.RoleUser,
			Body: createDatasetBody{}, Result: Dataset{}, Handle: (*Handler).createDataset},
		{Method: "GET", Path: "/datasets/{dataset_id}", Summary: "Read a dataset", Auth: api.Workspace, Role: auth.RoleViewer,
			Result: Dataset{}, Handle: (*Handler).getDataset},
		{Method: "PATCH", Path: "/datasets/{dataset_id}", Summary: "Update a dataset", Auth: api.Workspace, Role: auth.RoleUser,
			Body: patchDatasetBody{}, Result: Dataset{}, Handle: (*Handler).patchDataset},
		{Method: "DELETE", Path: "/datasets/{dataset_id}", Summary: "Delete a dataset", Auth: api.Workspace, Role: auth.RoleUser,
			Handle: (*Handler).deleteDataset},
		{Method: "GET", Path: "/datasets/{dataset_id}/versions", Summary: "List a dataset's versions, newest first", Auth: api.Workspace,
			Role: auth.RoleViewer, Result: []Version{}, Query: listQuery, Handle: (*Handler).listVersions},
		{Method: "GET", Path: "/datasets/{dataset_id}/version", Summary: "Resolve a version by as_of or tag", Auth: api.Workspace,
			Role: auth.RoleViewer, Result: Version{}, Handle: (*Handler).getVersion,
			Query: []api.Param{asOfParam, {Name: "tag", Type: "string", Description: "a version tag"}}},
		{Method: "PUT", Path: "/datasets/{dataset_id}/tags", Summary: "Tag the version at exactly as_of", Auth: api.Workspace,
			Role: auth.RoleUser, Body: tagBody{}, Result: Version{}, Handle: (*Handler).putTag},
		{Method: "GET", Path: "/datasets/{dataset_id}/splits", Summary: "List the split names of a version", Auth: api.Workspace,
			Role: auth.RoleViewer, Result: []string{}, Query: []api.Param{asOfParam}, Handle: (*Handler).getSplits},
		{Method: "PUT", Path: "/datasets/{dataset_id}/splits", Summary: "Add examples to a split or remove them", Auth: api.Workspace,
			Role: auth.RoleUser, Body: splitsBody{}, Result: []string{}, Handle: (*Handler).putSplits},
		{Method: "GET", Path: "/examples", Summary: "List examples (at a version)", Auth: api.Workspace, Role: auth.RoleViewer,
			Limit: "Examples", Result: []Example{}, Handle: (*Handler).listExamples, Query: append([]api.Param{
				{Name: "dataset", Type: "string", Description: "dataset id (this or id is required)"},
				{Name: "id", Type: "array", Description: "example ids (repeated)"},
				asOfParam,
				{Name: "splits", Type: "array", Description: "split names (repeated): examples in any of them"},
				{Name: "metadata", Type: "string", Description: "JSON object every key of which the metadata holds"},
				{Name: "filter", Type: "string", Description: `filter expression, e.g. and(exists(metadata, "k"), has(metadata, '{"a": 1}'))`},
			}, listQuery...)},
		{Method: "POST", Path: "/examples", Summary: "Create an example", Auth: api.Workspace, Role: auth.RoleUser,
			Body: exampleBody{}, Result: Example{}, Handle: (*Handler).createExample},
		{Method: "POST", Path: "/examples/bulk", Summary: "Create examples (one version)", Auth: api.Workspace, Role: auth.RoleUser,
			Body: []exampleBody{}, Result: []Example{}, Handle: (*Handler).createExamplesBulk},
		{Method: "DELETE", Path: "/examples", Summary: "Delete examples by id", Auth: api.Workspace, Role: auth.RoleUser,
			Query:  []api.Param{{Name: "example_ids", Type: "array", Description: "example ids (repeated)", Required: true}},
			Handle: (*Handler).deleteExamples},
		{Method: "GET", Path: "/examples/{example_id}", Summary: "Read an example (at a version)", Auth: api.Workspace,
			Role: auth.RoleViewer, Limit: "Examples", Result: Example{}, Query: []api.Param{asOfParam}, Handle: (*Handler).getExample},
		{Method: "PATCH", Path: "/examples/{example_id}", Summary: "Update an example", Auth: api.Workspace, Role: auth.RoleUser,
			Body: examplePatchBody{}, Result: Example{}, Handle: (*Handler).patchExample},
		{Method: "DELETE", Path: "/examples/{example_id}", Summary: "Delete an example", Auth: api.Workspace, Role: auth.RoleUser,
			Handle: (*Handler).deleteExample},
		{Method: "POST", Path: platformExamples, Unmounted: true, Summary: "Create examples from a multipart form (JS SDK)", Auth: api.Workspace,
			Role: auth.RoleUser, Result: upsertResult{}, Handle: (*Handler).multipartCreate},
		{Method: "PATCH", Path: platformExamples, Unmounted: true, Summary: "Update examples from a multipart form (JS SDK)", Auth: api.Workspace,
			Role: auth.RoleUser, Result: upsertResult{}, Handle: (*Handler).multipartUpdate},
		{Method: "POST", Path: platformExamplesAPIV1, Unmounted: true, Summary: "Create examples from a multipart form (JS SDK, apiUrl …/api/v1)", Auth: api.Workspace,
			Role: auth.RoleUser, Result: upsertResult{}, Handle: (*Handler).multipartCreate},
		{Method: "PATCH", Path: platformExamplesAPIV1, Unmounted: true, Summary: "Update examples from a multipart form (JS SDK, apiUrl …/api/v1)", Auth: api.Workspace,
			Role: auth.RoleUser, Result: upsertResult{}, Handle: (*Handler).multipartUpdate},
	},
}

// httpError maps the service's errors to the interface's shapes.
func httpError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case ErrNotFound:
		return web.NotFound("%s", e.Msg)
	case ErrConflict:
		return web.Conflict("%s", e.Msg)
	}
	loc := e.Loc
	if loc == nil {
		loc = web.Loc("body")
	}
	return web.Invalid(loc, e.Msg, "value_error")
}

func ws(r *http.Request) string { return api.Caller(r).WorkspaceID }

// ---- query helpers ----

func queryUUIDs(r *http.Request, name string) ([]string, error) {
	raw := r.URL.Query()[name]
	if len(raw) > 100 {
		return nil, web.Invalid(web.Loc("query", name), "At most 100 values", "too_long")
	}
	out := make([]string, 0, len(raw))
	for i, v := range raw {
		id, err := web.ParseUUID(v)
		if err != nil {
			return nil, web.Invalid(web.Loc("query", name, i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		out = append(out, id)
	}
	return out, nil
}

func queryObject(r *http.Request, name string) (map[string]any, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return nil, nil
	}
	var m map[string]any
	if err := decodeJSON([]byte(raw), &m); err != nil || m == nil {
		return nil, web.Invalid(web.Loc("query", name), "Input should be a JSON object", "json_invalid")
	}
	return m, nil
}

func queryAsOf(r *http.Request) (string, error) {
	v := strings.TrimSpace(r.URL.Query().Get("as_of"))
	if len(v) > 256 {
		return "", web.Invalid(web.Loc("query", "as_of"), "as_of is at most 256 characters", "string_too_long")
	}
	return v, nil
}

func pageParams(r *http.Request) (int, int, error) {
	limit, err := web.QueryInt(r, "limit", 100, 1, 100)
	if err != nil {
		return 0, 0, err
	}
	offset, err := web.QueryInt(r, "offset", 0, 0, 1_000_000)
	return limit, offset, err
}

// ---- datasets ----

type createDatasetBody struct {
	Name              string          `json:"name"`
	Description       *string         `json:"description"`
	DataType          *string         `json:"data_type"`
	InputsSchema      json.RawMessage `json:"inputs_schema_definition"`
	OutputsSchema     json.RawMessage `json:"outputs_schema_definition"`
	Extra             map[string]any  `json:"extra"`
	Metadata          map[string]any  `json:"metadata"`
	ID                *string         `json:"id"`
	CreatedAt         *time.Time      `json:"created_at"`
	Transformations   json.RawMessage `json:"transformations"`
	ExternallyManaged *bool           `json:"externally_managed"`
	TagValueIDs       []string        `json:"tag_value_ids"`
}

func schemaOrNull(raw json.RawMessage, field string) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil, web.Invalid(web.Loc("body", field), "Input should be a valid dictionary", "dict_type")
	}
	return raw, nil
}

func (h *Handler) createDataset(w http.ResponseWriter, r *http.Request) error {
	var b createDatasetBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	c := CreateDataset{Name: b.Name, Description: b.Description, Metadata: b.Metadata}
	if b.DataType != nil {
		c.DataType = *b.DataType
	}
	if md, ok := b.Extra["metadata"]; ok && md != nil {
		m, ok := md.(map[string]any)
		if !ok {
			return web.Invalid(web.Loc("body", "extra", "metadata"), "Input should be a valid dictionary", "dict_type")
		}
		c.Metadata = m
	}
	if b.ID != nil {
		id, err := web.ParseUUID(*b.ID)
		if err != nil {
			return web.Invalid(web.Loc("body", "id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		c.ID = id
	}
	if b.CreatedAt != nil {
		c.CreatedAt = *b.CreatedAt
	}
	var err error
	if c.InputsSchema, err = schemaOrNull(b.InputsSchema, "inputs_schema_definition"); err != nil {
		return err
	}
	if c.OutputsSchema, err = schemaOrNull(b.OutputsSchema, "outputs_schema_definition"); err != nil {
		return err
	}
	d, err := h.svc.CreateDataset(r.Context(), ws(r), c)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) listDatasets(w http.ResponseWriter, r *http.Request) error {
	q := DatasetQuery{DataType: r.URL.Query().Get("data_type"), Name: r.URL.Query().Get("name"),
		NameContains: r.URL.Query().Get("name_contains")}
	if q.DataType != "" && !validDataType(q.DataType) {
		return web.Invalid(web.Loc("query", "data_type"), "Input should be 'kv', 'llm' or 'chat'", "enum")
	}
	var err error
	if q.IDs, err = queryUUIDs(r, "id"); err != nil {
		return err
	}
	if q.Metadata, err = queryObject(r, "metadata"); err != nil {
		return err
	}
	if q.Limit, q.Offset, err = pageParams(r); err != nil {
		return err
	}
	out, err := h.svc.ListDatasets(r.Context(), ws(r), q)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) getDataset(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	d, err := h.svc.GetDataset(r.Context(), ws(r), id)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

type patchDatasetBody struct {
	Name          *string         `json:"name"`
	Description   *string         `json:"description"`
	InputsSchema  json.RawMessage `json:"inputs_schema_definition"`
	OutputsSchema json.RawMessage `json:"outputs_schema_definition"`
	Metadata      json.RawMessage `json:"metadata"`
}

func (h *Handler) patchDataset(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	var b patchDatasetBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	p := PatchDataset{Name: b.Name, Description: b.Description}
	if p.InputsSchema, err = schemaOrNull(b.InputsSchema, "inputs_schema_definition"); err != nil {
		return err
	}
	if p.OutputsSchema, err = schemaOrNull(b.OutputsSchema, "outputs_schema_definition"); err != nil {
		return err
	}
	if len(b.Metadata) > 0 {
		p.SetMetadata = true
		if string(b.Metadata) != "null" {
			if err := decodeJSON(b.Metadata, &p.Metadata); err != nil || p.Metadata == nil {
				return web.Invalid(web.Loc("body", "metadata"), "Input should be a valid dictionary", "dict_type")
			}
		}
	}
	d, err := h.svc.UpdateDataset(r.Context(), ws(r), id, p)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) deleteDataset(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteDataset(r.Context(), ws(r), id); err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// ---- versions, tags, splits ----

func (h *Handler) listVersions(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	limit, offset, err := pageParams(r)
	if err != nil {
		return err
	}
	out, err := h.svc.ListVersions(r.Context(), ws(r), id, limit, offset)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) getVersion(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	asOf, err := queryAsOf(r)
	if err != nil {
		return err
	}
	tag := r.URL.Query().Get("tag")
	if (asOf == "") == (tag == "") {
		return web.Invalid(web.Loc("query"), "Exactly one of as_of and tag is required", "value_error")
	}
	v, err := h.svc.GetVersion(r.Context(), ws(r), id, asOf, tag)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, v)
	return nil
}

type tagBody struct {
	AsOf string `json:"as_of"`
	Tag  string `json:"tag"`
}

func (h *Handler) putTag(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	var b tagBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	at, err := parseTime(b.AsOf)
	if err != nil {
		return web.Invalid(web.Loc("body", "as_of"), "Input should be a valid datetime", "datetime_parsing")
	}
	v, err := h.svc.TagVersion(r.Context(), ws(r), id, at, b.Tag)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, v)
	return nil
}

func (h *Handler) getSplits(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	asOf, err := queryAsOf(r)
	if err != nil {
		return err
	}
	out, err := h.svc.ListSplits(r.Context(), ws(r), id, asOf)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

type splitsBody struct {
	SplitName string   `json:"split_name"`
	Examples  []string `json:"examples"`
	Remove    bool     `json:"remove"`
}

func (h *Handler) putSplits(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	var b splitsBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	if strings.TrimSpace(b.SplitName) == "" || len(b.SplitName) > 256 {
		return web.Invalid(web.Loc("body", "split_name"), "split_name must be 1 to 256 characters", "value_error")
	}
	if len(b.Examples) > 1000 {
		return web.Invalid(web.Loc("body", "examples"), "At most 1000 examples", "too_long")
	}
	ids := make([]string, len(b.Examples))
	for i, e := range b.Examples {
		if ids[i], err = web.ParseUUID(e); err != nil {
			return web.Invalid(web.Loc("body", "examples", i), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
	}
	out, err := h.svc.UpdateSplits(r.Context(), ws(r), id, b.SplitName, ids, b.Remove)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ---- examples ----

type exampleBody struct {
	DatasetID               string          `json:"dataset_id"`
	Inputs                  json.RawMessage `json:"inputs"`
	Outputs                 json.RawMessage `json:"outputs"`
	Metadata                json.RawMessage `json:"metadata"`
	ID                      *string         `json:"id"`
	CreatedAt               *string         `json:"created_at"`
	Split                   json.RawMessage `json:"split"`
	SourceRunID             *string         `json:"source_run_id"`
	UseSourceRunIO          *bool           `json:"use_source_run_io"`
	UseSourceRunAttachments json.RawMessage `json:"use_source_run_attachments"`
	Attachments             json.RawMessage `json:"attachments"`
	UseLegacyMessageFormat  *bool           `json:"use_legacy_message_format"`
}

// objectOrNull checks that raw is a JSON object (or null / absent when
// optional).
func objectOrNull(raw json.RawMessage, loc []any, required bool) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return nil, web.Invalid(loc, "Field required", "missing")
		}
		return nil, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, web.Invalid(loc, "Input should be a valid dictionary", "dict_type")
	}
	return raw, nil
}

func metadataOf(raw json.RawMessage, loc []any) (map[string]any, bool, error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if string(raw) == "null" {
		return nil, true, nil
	}
	var m map[string]any
	if err := decodeJSON(raw, &m); err != nil || m == nil {
		return nil, false, web.Invalid(loc, "Input should be a valid dictionary", "dict_type")
	}
	return m, true, nil
}

// splitOf reads split: a name, a list of names, or null.
func splitOf(raw json.RawMessage, loc []any) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" || len(one) > 256 {
			return nil, web.Invalid(loc, "A split name is 1 to 256 characters", "value_error")
		}
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, web.Invalid(loc, "Input should be a string or a list of strings", "type_error")
	}
	for i, s := range many {
		if s == "" || len(s) > 256 {
			return nil, web.Invalid(append(loc, i), "A split name is 1 to 256 characters", "value_error")
		}
	}
	if many == nil {
		many = []string{}
	}
	return many, nil
}

func noAttachments(raw json.RawMessage, loc []any) error {
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "{}" || string(raw) == "false" {
		return nil
	}
	return web.Invalid(loc, "Attachments are not supported by this server", "value_error")
}

func (b exampleBody) toNew(loc []any) (string, NewExample, error) {
	at := func(f string) []any { return append(append([]any(nil), loc...), f) }
	ds, err := web.ParseUUID(b.DatasetID)
	if err != nil {
		return "", NewExample{}, web.Invalid(at("dataset_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
	}
	var n NewExample
	if n.Inputs, err = objectOrNull(b.Inputs, at("inputs"), false); err != nil {
		return "", n, err
	}
	if n.Outputs, err = objectOrNull(b.Outputs, at("outputs"), false); err != nil {
		return "", n, err
	}
	if n.Metadata, _, err = metadataOf(b.Metadata, at("metadata")); err != nil {
		return "", n, err
	}
	if n.Split, err = splitOf(b.Split, at("split")); err != nil {
		return "", n, err
	}
	if b.ID != nil {
		if n.ID, err = web.ParseUUID(*b.ID); err != nil {
			return "", n, web.Invalid(at("id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
	}
	if b.CreatedAt != nil {
		if n.CreatedAt, err = parseTime(*b.CreatedAt); err != nil {
			return "", n, web.Invalid(at("created_at"), "Input should be a valid datetime", "datetime_parsing")
		}
	}
	if b.SourceRunID != nil {
		id, err := web.ParseUUID(*b.SourceRunID)
		if err != nil {
			return "", n, web.Invalid(at("source_run_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		n.SourceRunID = &id
	}
	if b.UseSourceRunIO != nil && *b.UseSourceRunIO {
		return "", n, web.Invalid(at("use_source_run_io"), "Copying a run's inputs and outputs is not supported by this server: send inputs and outputs", "value_error")
	}
	if err := noAttachments(b.Attachments, at("attachments")); err != nil {
		return "", n, err
	}
	return ds, n, nil
}

func (h *Handler) createExample(w http.ResponseWriter, r *http.Request) error {
	var b exampleBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	ds, n, err := b.toNew(web.Loc("body"))
	if err != nil {
		return err
	}
	out, err := h.svc.CreateExamples(r.Context(), ws(r), ds, []NewExample{n})
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out[0])
	return nil
}

func (h *Handler) createExamplesBulk(w http.ResponseWriter, r *http.Request) error {
	var bs []exampleBody
	if err := web.DecodeJSON(r, &bs, false); err != nil {
		return err
	}
	if len(bs) > 1000 {
		return web.Invalid(web.Loc("body"), "At most 1000 examples per request", "too_long")
	}
	if len(bs) == 0 {
		web.WriteJSON(w, http.StatusOK, []Example{})
		return nil
	}
	var ds string
	ns := make([]NewExample, len(bs))
	for i, b := range bs {
		d, n, err := b.toNew(web.Loc("body", i))
		if err != nil {
			return err
		}
		if ds != "" && d != ds {
			return web.Invalid(web.Loc("body", i, "dataset_id"), "All examples of a bulk request belong to one dataset", "value_error")
		}
		ds, ns[i] = d, n
	}
	out, err := h.svc.CreateExamples(r.Context(), ws(r), ds, ns)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) listExamples(w http.ResponseWriter, r *http.Request) error {
	var q ExampleQuery
	var err error
	if raw := r.URL.Query().Get("dataset"); raw != "" {
		if q.Dataset, err = web.ParseUUID(raw); err != nil {
			return web.Invalid(web.Loc("query", "dataset"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
	}
	if q.IDs, err = queryUUIDs(r, "id"); err != nil {
		return err
	}
	if q.Dataset == "" && len(q.IDs) == 0 {
		return web.Invalid(web.Loc("query", "dataset"), "dataset or id is required", "missing")
	}
	if q.AsOf, err = queryAsOf(r); err != nil {
		return err
	}
	q.Splits = r.URL.Query()["splits"]
	if len(q.Splits) > 100 {
		return web.Invalid(web.Loc("query", "splits"), "At most 100 values", "too_long")
	}
	if q.Metadata, err = queryObject(r, "metadata"); err != nil {
		return err
	}
	if q.Filter, err = ParseFilter(r.URL.Query().Get("filter")); err != nil {
		var fe *FilterError
		if errors.As(err, &fe) {
			return web.Invalid(web.Loc("query", "filter"), fmt.Sprintf("Invalid filter at position %d: %s", fe.Pos, fe.Msg), "value_error")
		}
		return err
	}
	if _, err := web.QueryBool(r, "inline_s3_urls", true); err != nil {
		return err
	}
	if q.Limit, q.Offset, err = pageParams(r); err != nil {
		return err
	}
	out, err := h.svc.ListExamples(r.Context(), ws(r), q)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) getExample(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "example_id")
	if err != nil {
		return err
	}
	asOf, err := queryAsOf(r)
	if err != nil {
		return err
	}
	e, err := h.svc.GetExample(r.Context(), ws(r), id, asOf)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

type examplePatchBody struct {
	DatasetID             *string         `json:"dataset_id"`
	Inputs                json.RawMessage `json:"inputs"`
	Outputs               json.RawMessage `json:"outputs"`
	Metadata              json.RawMessage `json:"metadata"`
	Split                 json.RawMessage `json:"split"`
	AttachmentsOperations json.RawMessage `json:"attachments_operations"`
	Overwrite             *bool           `json:"overwrite"`
}

func (b examplePatchBody) toPatch(id string, loc []any) (ExamplePatch, error) {
	at := func(f string) []any { return append(append([]any(nil), loc...), f) }
	p := ExamplePatch{ID: id}
	var err error
	if len(b.Inputs) > 0 {
		if p.Inputs, err = objectOrNull(b.Inputs, at("inputs"), true); err != nil {
			return p, err
		}
	}
	if len(b.Outputs) > 0 {
		if string(b.Outputs) == "null" {
			p.Outputs = json.RawMessage("null")
		} else if p.Outputs, err = objectOrNull(b.Outputs, at("outputs"), true); err != nil {
			return p, err
		}
	}
	if p.Metadata, p.SetMetadata, err = metadataOf(b.Metadata, at("metadata")); err != nil {
		return p, err
	}
	if p.Split, err = splitOf(b.Split, at("split")); err != nil {
		return p, err
	}
	return p, nil
}

func (h *Handler) patchExample(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "example_id")
	if err != nil {
		return err
	}
	var b examplePatchBody
	if err := web.DecodeJSON(r, &b, false); err != nil {
		return err
	}
	p, err := b.toPatch(id, web.Loc("body"))
	if err != nil {
		return err
	}
	if b.DatasetID != nil {
		ds, err := web.ParseUUID(*b.DatasetID)
		if err != nil {
			return web.Invalid(web.Loc("body", "dataset_id"), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		}
		hd, err := h.svc.head(r.Context(), ws(r), id)
		if err != nil {
			return httpError(err)
		}
		if hd.Dataset != ds {
			return web.Invalid(web.Loc("body", "dataset_id"), "An example cannot move to another dataset", "value_error")
		}
	}
	e, err := h.svc.PatchExample(r.Context(), ws(r), p)
	if err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, e)
	return nil
}

func (h *Handler) deleteExample(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "example_id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteExample(r.Context(), ws(r), id); err != nil {
		return httpError(err)
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

// deleteExamples deletes examples by id (the SDK's deleteExamples); each
// dataset touched gets one version.
func (h *Handler) deleteExamples(w http.ResponseWriter, r *http.Request) error {
	ids, err := queryUUIDs(r, "example_ids")
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return web.Invalid(web.Loc("query", "example_ids"), "Field required", "missing")
	}
	byDataset := map[string][]mutation{}
	var order []string
	for _, id := range ids {
		hd, err := h.svc.head(r.Context(), ws(r), id)
		if err != nil {
			return httpError(err)
		}
		if _, ok := byDataset[hd.Dataset]; !ok {
			order = append(order, hd.Dataset)
		}
		byDataset[hd.Dataset] = append(byDataset[hd.Dataset], mutation{id: id, del: true})
	}
	for _, ds := range order {
		if _, err := h.svc.apply(r.Context(), ws(r), ds, dedupe(byDataset[ds])); err != nil {
			return httpError(err)
		}
	}
	web.WriteJSON(w, http.StatusOK, map[string]any{})
	return nil
}

func dedupe(ms []mutation) []mutation {
	seen := map[string]bool{}
	out := ms[:0]
	for _, m := range ms {
		if !seen[m.id] {
			seen[m.id] = true
			out = append(out, m)
		}
	}
	return out
}

// ---- multipart (the JS SDK's createExamples / updateExamples) ----

type upsertResult struct {
	ExampleIDs []string `json:"example_ids"`
	Count      int      `json:"count"`
}

// multipartExample gathers the parts of one example: "{id}" (a JSON body),
// "{id}.inputs", "{id}.outputs", "{id}.attachment.{name}",
// "{id}.attachments_operations".
type multipartExample struct {
	id                string
	body              json.RawMessage
	inputs, outputs   json.RawMessage
	hasAttachment     bool
	attachmentsOpsRaw json.RawMessage
}

const maxMultipartExamples = 1000

func readMultipart(w http.ResponseWriter, r *http.Request) ([]*multipartExample, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, web.Invalid(web.Loc("body"), "Expected a multipart/form-data body", "value_error")
	}
	body := http.MaxBytesReader(w, r.Body, web.MaxBodyBytes)
	mr := multipart.NewReader(body, params["boundary"])
	byID := map[string]*multipartExample{}
	var order []*multipartExample
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", mbe.Limit)
			}
			// An empty or truncated stream (a proxy that dropped a chunked
			// body) is a 422: the SDK then retries with a buffered body.
			return nil, web.Invalid(web.Loc("body"), "Malformed multipart body: "+err.Error(), "value_error")
		}
		name := part.FormName()
		data, err := io.ReadAll(part)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, web.Errorf(http.StatusRequestEntityTooLarge, "Request body exceeds %d bytes", mbe.Limit)
			}
			return nil, web.Invalid(web.Loc("body", name), "Malformed multipart part: "+err.Error(), "value_error")
		}
		idPart, field, _ := strings.Cut(name, ".")
		id, err := web.ParseUUID(idPart)
		if err != nil {
			return nil, web.Invalid(web.Loc("body", name), "A part name starts with an example id (a UUID)", "value_error")
		}
		ex := byID[id]
		if ex == nil {
			if len(order) >= maxMultipartExamples {
				return nil, web.Invalid(web.Loc("body"), fmt.Sprintf("At most %d examples per request", maxMultipartExamples), "too_long")
			}
			ex = &multipartExample{id: id}
			byID[id] = ex
			order = append(order, ex)
		}
		switch {
		case field == "":
			ex.body = data
		case field == "inputs":
			ex.inputs = data
		case field == "outputs":
			ex.outputs = data
		case field == "attachments_operations":
			ex.attachmentsOpsRaw = data
		case strings.HasPrefix(field, "attachment."):
			ex.hasAttachment = true
		default:
			return nil, web.Invalid(web.Loc("body", name), "Unknown part: expected {id}, {id}.inputs, {id}.outputs or {id}.attachment.{name}", "value_error")
		}
	}
	if len(order) == 0 {
		return nil, web.Invalid(web.Loc("body"), "Empty multipart body: no example parts", "value_error")
	}
	for _, ex := range order {
		if ex.hasAttachment {
			return nil, web.Invalid(web.Loc("body", ex.id+".attachment"), "Attachments are not supported by this server", "value_error")
		}
	}
	return order, nil
}

type multipartCreateBody struct {
	CreatedAt               *string         `json:"created_at"`
	Metadata                json.RawMessage `json:"metadata"`
	Split                   json.RawMessage `json:"split"`
	SourceRunID             *string         `json:"source_run_id"`
	UseSourceRunIO          *bool           `json:"use_source_run_io"`
	UseSourceRunAttachments json.RawMessage `json:"use_source_run_attachments"`
	ID                      *string         `json:"id"`
	DatasetID               *string         `json:"dataset_id"`
}

func (h *Handler) multipartCreate(w http.ResponseWriter, r *http.Request) error {
	ds, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	parts, err := readMultipart(w, r)
	if err != nil {
		return err
	}
	ns := make([]NewExample, len(parts))
	for i, p := range parts {
		var b multipartCreateBody
		if len(p.body) > 0 {
			if err := web.DecodeBytes(p.body, &b, true); err != nil {
				return relocate(err, p.id)
			}
		}
		eb := exampleBody{DatasetID: ds, Inputs: p.inputs, Outputs: p.outputs, Metadata: b.Metadata, ID: &p.id,
			CreatedAt: b.CreatedAt, Split: b.Split, SourceRunID: b.SourceRunID, UseSourceRunIO: b.UseSourceRunIO}
		_, n, err := eb.toNew(web.Loc("body", p.id))
		if err != nil {
			return err
		}
		if err := checkJSONPart(p.inputs, p.id+".inputs"); err != nil {
			return err
		}
		ns[i] = n
	}
	out, err := h.svc.CreateExamples(r.Context(), ws(r), ds, ns)
	if err != nil {
		return httpError(err)
	}
	ids := make([]string, len(out))
	for i, e := range out {
		ids[i] = e.ID
	}
	web.WriteJSON(w, http.StatusOK, upsertResult{ExampleIDs: ids, Count: len(ids)})
	return nil
}

func checkJSONPart(raw json.RawMessage, name string) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return web.Invalid(web.Loc("body", name), "Invalid JSON", "json_invalid")
	}
	return nil
}

// relocate puts a part's decoding error under its part name.
func relocate(err error, part string) error {
	var ve *web.ValidationError
	if errors.As(err, &ve) {
		for i := range ve.Errors {
			if len(ve.Errors[i].Loc) > 0 && ve.Errors[i].Loc[0] == "body" {
				ve.Errors[i].Loc = append([]any{"body", part}, ve.Errors[i].Loc[1:]...)
			}
		}
	}
	return err
}

type multipartPatchBody struct {
	Metadata  json.RawMessage `json:"metadata"`
	Split     json.RawMessage `json:"split"`
	ID        *string         `json:"id"`
	DatasetID *string         `json:"dataset_id"`
}

func (h *Handler) multipartUpdate(w http.ResponseWriter, r *http.Request) error {
	ds, err := web.PathUUID(r, "dataset_id")
	if err != nil {
		return err
	}
	parts, err := readMultipart(w, r)
	if err != nil {
		return err
	}
	ps := make([]ExamplePatch, len(parts))
	for i, p := range parts {
		var b multipartPatchBody
		if len(p.body) > 0 {
			if err := web.DecodeBytes(p.body, &b, true); err != nil {
				return relocate(err, p.id)
			}
		}
		pb := examplePatchBody{Inputs: p.inputs, Outputs: p.outputs, Metadata: b.Metadata, Split: b.Split}
		if ps[i], err = pb.toPatch(p.id, web.Loc("body", p.id)); err != nil {
			return err
		}
	}
	out, err := h.svc.UpdateExamples(r.Context(), ws(r), ds, ps)
	if err != nil {
		return httpError(err)
	}
	ids := make([]string, len(out))
	for i, e := range out {
		ids[i] = e.ID
	}
	web.WriteJSON(w, http.StatusOK, upsertResult{ExampleIDs: ids, Count: len(ids)})
	return nil
}
