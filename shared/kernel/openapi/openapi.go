// Package openapi writes an OpenAPI 3.1 document from route declarations
// (api.Spec) and the Go types of their bodies and results, so the document
// cannot drift from the handlers. Schemas come from the types by
// reflection, following encoding/json's rules (field names from json tags,
// omitted fields, pointers as nullable values).
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
)

// Info is the document's info object.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// Tag names a group of operations.
type Tag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Build returns the document of specs.
func Build(info Info, tags []Tag, specs []api.Spec) ([]byte, error) {
	g := &gen{schemas: map[string]any{}, names: map[nameKey]string{}}
	paths := map[string]map[string]any{}
	for _, s := range specs {
		path := oaPath(s.Path)
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		op, err := g.operation(s)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", s.Pattern(), err)
		}
		m := strings.ToLower(s.Method)
		if _, dup := paths[path][m]; dup {
			return nil, fmt.Errorf("openapi: %s declared twice", s.Pattern())
		}
		paths[path][m] = op
	}
	g.schemas["ErrorDetail"] = map[string]any{
		"type": "object", "required": []string{"detail"},
		"properties": map[string]any{"detail": map[string]any{"type": "string"}},
	}
	g.schemas["ValidationError"] = map[string]any{
		"type": "object", "required": []string{"loc", "msg", "type"},
		"properties": map[string]any{
			"loc":  map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}},
			"msg":  map[string]any{"type": "string"},
			"type": map[string]any{"type": "string"},
		},
	}
	g.schemas["HTTPValidationError"] = map[string]any{
		"type":       "object",
		"properties": map[string]any{"detail": map[string]any{"type": "array", "items": ref("ValidationError")}},
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    info,
		"tags":    tags,
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.schemas,
			"securitySchemes": map[string]any{
				"ApiKey":   map[string]any{"type": "apiKey", "in": "header", "name": "X-Api-Key"},
				"Bearer":   map[string]any{"type": "http", "scheme": "bearer"},
				"TenantId": map[string]any{"type": "apiKey", "in": "header", "name": "X-Tenant-Id", "description": "The workspace; may be left out when the key reaches exactly one workspace."},
			},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// oaPath turns a ServeMux pattern into an OpenAPI path: "{$}" (an exact
// trailing slash) becomes "/", "{rest...}" becomes "{rest}".
func oaPath(p string) string {
	p = strings.TrimSuffix(p, "{$}")
	return strings.ReplaceAll(p, "...}", "}")
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

type gen struct {
	schemas map[string]any
	names   map[nameKey]string
	// input is set while writing a request body's schema: input
	// components are named apart and list no required fields (which input
	// fields are required is the handlers' validation, answered as 422).
	input bool
}

type nameKey struct {
	t     reflect.Type
	input bool
}

func (g *gen) operation(s api.Spec) (map[string]any, error) {
	op := map[string]any{
		"summary":     s.Summary,
		"operationId": operationID(s),
		"tags":        []string{s.Group},
	}
	var params []any
	for _, name := range api.PathParams(oaPath(s.Path)) {
		schema := map[string]any{"type": "string"}
		if strings.HasSuffix(name, "_id") {
			schema["format"] = "uuid"
		}
		params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": schema})
	}
	for _, q := range s.Query {
		schema := map[string]any{"type": q.Type}
		if q.Type == "" {
			schema["type"] = "string"
		}
		if q.Type == "array" {
			schema["items"] = map[string]any{"type": "string"}
		}
		p := map[string]any{"name": q.Name, "in": "query", "required": q.Required, "schema": schema}
		if q.Description != "" {
			p["description"] = q.Description
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if s.Body != nil {
		g.input = true
		schema, err := g.schema(reflect.TypeOf(s.Body))
		g.input = false
		if err != nil {
			return nil, err
		}
		op["requestBody"] = map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	}
	ok := map[string]any{"description": http.StatusText(s.SuccessStatus())}
	if s.Result != nil && s.SuccessStatus() != http.StatusNoContent {
		schema, err := g.schema(reflect.TypeOf(s.Result))
		if err != nil {
			return nil, err
		}
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	errJSON := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": ref("ErrorDetail")}}}
	}
	responses := map[string]any{
		fmt.Sprint(s.SuccessStatus()): ok,
		"422": map[string]any{"description": "Validation error",
			"content": map[string]any{"application/json": map[string]any{"schema": ref("HTTPValidationError")}}},
		"429": errJSON("Rate limit exceeded"),
	}
	switch s.Auth {
	case api.Key:
		op["security"] = []any{map[string]any{"ApiKey": []any{}}, map[string]any{"Bearer": []any{}}}
		responses["401"], responses["403"] = errJSON("Missing or invalid API key"), errJSON("The key's role is too weak")
	case api.Workspace:
		op["security"] = []any{map[string]any{"ApiKey": []any{}, "TenantId": []any{}}, map[string]any{"Bearer": []any{}, "TenantId": []any{}}}
		responses["401"], responses["403"] = errJSON("Missing or invalid API key"), errJSON("The key's role is too weak, or it cannot reach the workspace")
	case api.Own:
		responses["401"] = errJSON("Missing or invalid credential")
	default:
		op["security"] = []any{}
	}
	if len(api.PathParams(s.Path)) > 0 {
		responses["404"] = errJSON("Not found (objects of other tenants answer exactly like missing ones)")
	}
	if s.Role != "" {
		op["description"] = fmt.Sprintf("Needs the %s role.", s.Role)
	}
	op["responses"] = responses
	return op, nil
}

func operationID(s api.Spec) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(s.Method))
	for _, seg := range strings.Split(s.Path, "/") {
		seg = strings.Trim(seg, "{}$.")
		if seg == "" {
			continue
		}
		b.WriteString("_")
		for _, r := range seg {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				b.WriteRune(r)
			} else {
				b.WriteRune('_')
			}
		}
	}
	return b.String()
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
	numType  = reflect.TypeOf(json.Number(""))
)

// schema returns the JSON Schema of t; named struct types become
// components referenced by name.
func (g *gen) schema(t reflect.Type) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawType:
		return map[string]any{}, nil
	case t == numType:
		return map[string]any{"type": "number"}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		if r, ok := inner["$ref"]; ok {
			return map[string]any{"anyOf": []any{map[string]any{"$ref": r}, map[string]any{"type": "null"}}}, nil
		}
		if typ, ok := inner["type"].(string); ok {
			out := copyMap(inner)
			out["type"] = []any{typ, "null"}
			return out, nil
		}
		return inner, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		vals, err := g.schema(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		return g.structSchema(t)
	}
	return nil, fmt.Errorf("no schema for %s", t)
}

func (g *gen) structSchema(t reflect.Type) (map[string]any, error) {
	name := ""
	if t.Name() != "" {
		key := nameKey{t, g.input}
		if n, ok := g.names[key]; ok {
			return ref(n), nil
		}
		name = componentName(t)
		for _, taken := range g.names {
			if taken == name {
				name = strings.ReplaceAll(t.PkgPath(), "/", "_") + "_" + t.Name()
				break
			}
		}
		if g.input {
			name += "Input"
		}
		g.names[key] = name
	}
	props := map[string]any{}
	var required []string
	if err := g.fields(t, props, &required); err != nil {
		return nil, err
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	if name == "" {
		return s, nil
	}
	g.schemas[name] = s
	return ref(name), nil
}

// componentName is "pkg.Type" without generic brackets.
func componentName(t reflect.Type) string {
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	n := t.Name()
	if i := strings.Index(n, "["); i >= 0 {
		inner := n[i+1 : len(n)-1]
		if j := strings.LastIndex(inner, "."); j >= 0 {
			inner = inner[j+1:]
		}
		n = n[:i] + "_" + inner
	}
	return pkg + "." + n
}

func (g *gen) fields(t reflect.Type, props map[string]any, required *[]string) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := g.fields(ft, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s, err := g.schema(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		props[name] = s
		if !g.input && !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, name)
		}
	}
	return nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
