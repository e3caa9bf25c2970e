package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// MaxBodyBytes is the default request body limit (see MaxBody).
const MaxBodyBytes = 8 << 20

// DecodeJSON decodes the request body strictly into v: unknown fields, wrong
// types, malformed JSON and trailing data are 422 errors with a loc into the
// body; an oversized body is 413. An empty body decodes as {} when
// allowEmpty, else it is a 422 "missing".
func DecodeJSON(r *http.Request, v any, allowEmpty bool) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return BodyError(err)
	}
	return DecodeBytes(data, v, allowEmpty)
}

// DecodeBytes is DecodeJSON for a body already read.
func DecodeBytes(data []byte, v any, allowEmpty bool) error {
	if len(bytes.TrimSpace(data)) == 0 {
		if allowEmpty {
			data = []byte("{}")
		} else {
			return Invalid(Loc("body"), "Field required", "missing")
		}
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) && wantsObject(v) {
		// encoding/json leaves v alone for null: a request body that
		// must be an object would pass as {}.
		return Invalid(Loc("body"), "Input should be a valid dictionary or object to extract fields from", "model_attributes_type")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		if loc := extraFieldLoc(data, v, err); loc != nil {
			return Invalid(loc, "Extra inputs are not permitted", "extra_forbidden")
		}
		return decodeError(data, err)
	}
	if dec.More() {
		return Invalid(Loc("body"), "JSON decode error: trailing data after the JSON value", "json_invalid")
	}
	return nil
}

// wantsObject reports whether v points at a struct or a map.
func wantsObject(v any) bool {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t != nil && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)
}

func decodeError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return Invalid(Loc("body", int(se.Offset)), "JSON decode error: "+se.Error(), "json_invalid")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid(Loc("body", len(data)), "JSON decode error: unexpected end of input", "json_invalid")
	case errors.As(err, &te):
		loc := Loc("body")
		if te.Field != "" {
			for _, p := range strings.Split(te.Field, ".") {
				if n, err := strconv.Atoi(p); err == nil {
					loc = append(loc, n)
				} else {
					loc = append(loc, p)
				}
			}
		}
		return Invalid(loc, fmt.Sprintf("Input should be a valid %s", jsonKind(te.Type.Kind().String())), jsonType(te.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Invalid(Loc("body", name), "Extra inputs are not permitted", "extra_forbidden")
	default:
		var ve *ValidationError
		if errors.As(err, &ve) {
			return ve
		}
		var he *Error
		if errors.As(err, &he) {
			return he
		}
		return Invalid(Loc("body"), "JSON decode error: "+err.Error(), "json_invalid")
	}
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "list"
	case "map", "struct":
		return "dictionary"
	}
	return k
}

func jsonType(k string) string {
	switch jsonKind(k) {
	case "string":
		return "string_type"
	case "boolean":
		return "bool_type"
	case "integer":
		return "int_type"
	case "number":
		return "float_type"
	case "list":
		return "list_type"
	case "dictionary":
		return "dict_type"
	}
	return "type_error"
}

// PathUUID returns the path parameter name, which must be a UUID (422
// otherwise, loc ["path", name]). The canonical lower-case form is returned.
func PathUUID(r *http.Request, name string) (string, error) {
	raw := r.PathValue(name)
	id, err := ParseUUID(raw)
	if err != nil {
		return "", Invalid(Loc("path", name), "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
	}
	return id, nil
}

// ParseUUID parses the hyphenated 36-character form (what the interface's
// format: uuid accepts) and returns it in lower case.
func ParseUUID(s string) (string, error) {
	if len(s) != 36 {
		return "", fmt.Errorf("invalid length: expected 36 characters, found %d", len(s))
	}
	ok, lower := uuidForm(s)
	switch {
	case !ok:
		return "", errors.New("invalid character or group")
	case lower:
		return s, nil // already in the form returned: no copy
	}
	return strings.ToLower(s), nil
}

// IsUUID reports whether s is a UUID in the hyphenated 8-4-4-4-12 hex
// form, in any case.
func IsUUID(s string) bool {
	ok, _ := uuidForm(s)
	return ok
}

// uuidForm reports whether s is a hyphenated UUID, and whether its hex
// digits are all lower case.
func uuidForm(s string) (ok, lower bool) {
	if len(s) != 36 {
		return false, false
	}
	lower = true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false, false
			}
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			lower = false
		default:
			return false, false
		}
	}
	return true, lower
}

// QueryInt reads an optional integer query parameter within [min, max]
// (loc ["query", name] on error).
func QueryInt(r *http.Request, name string, def, min, max int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, Invalid(Loc("query", name), "Input should be a valid integer, unable to parse string as an integer", "int_parsing")
	}
	if n < min {
		return 0, Invalid(Loc("query", name), fmt.Sprintf("Input should be greater than or equal to %d", min), "greater_than_equal")
	}
	if n > max {
		return 0, Invalid(Loc("query", name), fmt.Sprintf("Input should be less than or equal to %d", max), "less_than_equal")
	}
	return n, nil
}

// QueryBool reads an optional boolean query parameter.
func QueryBool(r *http.Request, name string, def bool) (bool, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	switch strings.ToLower(raw) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, Invalid(Loc("query", name), "Input should be a valid boolean, unable to interpret input", "bool_parsing")
}
