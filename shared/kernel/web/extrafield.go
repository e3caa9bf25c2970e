package web

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// extraFieldLoc locates the key an "unknown field" decode error is about:
// encoding/json names only the key, so the document is walked against v's
// type to find the object that does not expect it. It returns nil when err
// is not such an error or the key cannot be placed.
func extraFieldLoc(data []byte, v any, err error) []any {
	name, ok := strings.CutPrefix(err.Error(), "json: unknown field ")
	if !ok {
		return nil
	}
	name = strings.Trim(name, `"`)
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&doc) != nil {
		return nil
	}
	return walkExtra(doc, reflect.TypeOf(v), Loc("body"), name)
}

func walkExtra(doc any, t reflect.Type, loc []any, name string) []any {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	at := func(part any) []any { return append(append([]any(nil), loc...), part) }
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				for fname, ftype := range fields {
					if strings.EqualFold(fname, k) {
						ft, ok = ftype, true
						break
					}
				}
			}
			if !ok {
				if k == name {
					return at(k)
				}
				continue
			}
			if l := walkExtra(obj[k], ft, at(k), name); l != nil {
				return l
			}
		}
	case reflect.Slice, reflect.Array:
		arr, _ := doc.([]any)
		for i, el := range arr {
			if l := walkExtra(el, t.Elem(), at(i), name); l != nil {
				return l
			}
		}
	case reflect.Map:
		obj, _ := doc.(map[string]any)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if l := walkExtra(obj[k], t.Elem(), at(k), name); l != nil {
				return l
			}
		}
	}
	return nil
}

// jsonFields collects the JSON names of a struct's fields, including those
// promoted from embedded structs, as encoding/json sees them.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			jsonFields(ft, out)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}
