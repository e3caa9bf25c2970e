package otlp

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	commonv1 "go.opentelemetry.io/proto/slim/otlp/common/v1"
)

// value converts an OTLP AnyValue to a JSON-encodable Go value: string,
// bool, int64, float64, []any, map[string]any or nil. Bytes become base64
// (as OTLP/JSON writes them); NaN and infinities, which JSON cannot hold,
// become their string form.
func value(v *commonv1.AnyValue) any {
	if v == nil {
		return nil
	}
	switch x := v.GetValue().(type) {
	case *commonv1.AnyValue_StringValue:
		return x.StringValue
	case *commonv1.AnyValue_BoolValue:
		return x.BoolValue
	case *commonv1.AnyValue_IntValue:
		return x.IntValue
	case *commonv1.AnyValue_DoubleValue:
		f := x.DoubleValue
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return f
	case *commonv1.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	case *commonv1.AnyValue_ArrayValue:
		vals := x.ArrayValue.GetValues()
		out := make([]any, len(vals))
		for i, e := range vals {
			out[i] = value(e)
		}
		return out
	case *commonv1.AnyValue_KvlistValue:
		kvs := x.KvlistValue.GetValues()
		out := make(map[string]any, len(kvs))
		for _, kv := range kvs {
			out[kv.GetKey()] = value(kv.GetValue())
		}
		return out
	}
	// Empty, or a string-table index (profiles only): no value.
	return nil
}

// attrs indexes a span's (or resource's, or event's) attributes by key; the
// last of duplicated keys wins.
type attrs map[string]*commonv1.AnyValue

func indexAttrs(kvs []*commonv1.KeyValue) attrs {
	m := make(attrs, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// str returns the attribute as a string when it is one (or a scalar, in its
// text form), and whether it is present and non-empty.
func (a attrs) str(key string) (string, bool) {
	v, ok := a[key]
	if !ok || v == nil {
		return "", false
	}
	s, ok := scalarString(value(v))
	return s, ok && s != ""
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	}
	return "", false
}

// int returns the attribute as a whole number: an int, an integral double,
// or a string holding one.
func (a attrs) int(key string) (int64, bool) {
	v, ok := a[key]
	if !ok {
		return 0, false
	}
	return asInt(value(v))
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
			return n, true
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
	}
	return 0, false
}

// structured returns v decoded when it is a string holding a JSON object or
// array (instrumentations serialize structured values that way, attributes
// being scalars), else v unchanged.
func structured(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	t := strings.TrimSpace(s)
	if len(t) < 2 || (t[0] != '{' && t[0] != '[') {
		return v
	}
	var out any
	if err := json.Unmarshal([]byte(t), &out); err != nil {
		return v
	}
	return out
}

// asObject returns v as the object a run's inputs or outputs hold: a JSON
// object (or one encoded in a string) as it is, anything else wrapped as
// {key: v}, the way LangSmith SDKs wrap non-dict values.
func asObject(v any, key string) map[string]any {
	v = structured(v)
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{key: v}
}

// indexed collects flattened list attributes such as gen_ai.prompt.0.role,
// gen_ai.prompt.0.content, gen_ai.prompt.1.message.content: for prefix
// "gen_ai.prompt." it returns the entries as objects ordered by index, with a
// leading "message." stripped and dotted remainders nested ("tool_calls.0.id"
// becomes {"tool_calls": [{"id": ...}]}). keys lists the attribute keys it
// used, so callers can leave them out of the metadata.
func indexed(a attrs, prefix string) (items []any, keys []string) {
	byIndex := map[int]map[string]any{}
	for k, v := range a {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		num, field, ok := strings.Cut(rest, ".")
		n, err := strconv.Atoi(num)
		if !ok || err != nil || n < 0 || field == "" {
			continue
		}
		field = strings.TrimPrefix(field, "message.")
		if field == "" {
			continue
		}
		m := byIndex[n]
		if m == nil {
			m = map[string]any{}
			byIndex[n] = m
		}
		setPath(m, strings.Split(field, "."), value(v))
		keys = append(keys, k)
	}
	if len(byIndex) == 0 {
		return nil, nil
	}
	order := make([]int, 0, len(byIndex))
	for n := range byIndex {
		order = append(order, n)
	}
	sort.Ints(order)
	items = make([]any, len(order))
	for i, n := range order {
		items[i] = listify(byIndex[n])
	}
	return items, keys
}

// setPath sets m[p0][p1]...[pn] = v, creating objects on the way; a path
// that runs into a non-object value stops there.
func setPath(m map[string]any, path []string, v any) {
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			if _, taken := m[p]; taken {
				return
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// listify turns, recursively, objects whose keys are exactly 0..n-1 into
// lists (flattened arrays such as tool_calls.0.id, tool_calls.1.id).
func listify(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, e := range m {
		m[k] = listify(e)
	}
	if len(m) == 0 {
		return m
	}
	list := make([]any, len(m))
	for k, e := range m {
		n, err := strconv.Atoi(k)
		if err != nil || n < 0 || n >= len(m) || strconv.Itoa(n) != k {
			return m
		}
		list[n] = e
	}
	return list
}
