package threads

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// State values are JSON objects. One key has a reducer, the rest are
// last-value channels, like a LangGraph StateGraph built on MessagesState:
//
//   - "messages" follows add_messages: the update (a message or a list) is
//     appended; a message whose id is already present replaces it in place;
//     a message without an id gets a fresh one; {"type": "remove", "id": X}
//     deletes message X and {"type": "remove", "id": "__remove_all__"}
//     drops every message before it. Messages are normalized the way
//     LangChain serializes them (type, content, id, name,
//     additional_kwargs, response_metadata; ai: tool_calls,
//     invalid_tool_calls, usage_metadata; tool: tool_call_id, status,
//     artifact); roles (user, assistant, developer) map to types.
//   - every other key is overwritten; two writes of one such key in the
//     same superstep are an error, as in LangGraph.

// MessagesKey is the state key with the add_messages reducer.
const MessagesKey = "messages"

// removeAll is LangGraph's REMOVE_ALL_MESSAGES id.
const removeAll = "__remove_all__"

// updateError is a bad value inside an update; Path locates it below the
// update's values.
type updateError struct {
	Path []any
	Msg  string
	// Status400 marks LangGraph's InvalidUpdateError cases (a sound value
	// the state cannot take) as opposed to a malformed value.
	Status400 bool
}

func (e *updateError) Error() string { return e.Msg }

func badUpdate(msg string, path ...any) *updateError {
	return &updateError{Path: path, Msg: msg}
}

// write is one node's update of the state: an object of channel values,
// and where it came from in the request (for error locations).
type write struct {
	Values map[string]any
	Loc    []any
}

// applyStep applies the writes of one superstep to values and returns the
// new values (values is not modified). newID names messages without ids.
func applyStep(values map[string]any, writes []write, newID func() string) (map[string]any, error) {
	out := make(map[string]any, len(values)+4)
	for k, v := range values {
		out[k] = v
	}
	seen := map[string]bool{}
	for _, w := range writes {
		keys := make([]string, 0, len(w.Values))
		for k := range w.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := w.Values[k]
			if k == MessagesKey {
				left, _ := out[k].([]any)
				merged, err := addMessages(left, v, newID)
				if err != nil {
					var ue *updateError
					if asUpdateError(err, &ue) {
						ue.Path = append(append(append([]any{}, w.Loc...), k), ue.Path...)
					}
					return nil, err
				}
				out[k] = merged
				continue
			}
			if seen[k] {
				e := badUpdate(fmt.Sprintf("At key '%s': Can receive only one value per step. Use an Annotated key to handle multiple values.", k))
				e.Status400 = true
				return nil, e
			}
			seen[k] = true
			out[k] = v
		}
	}
	return out, nil
}

func asUpdateError(err error, target **updateError) bool {
	ue, ok := err.(*updateError)
	if ok {
		*target = ue
	}
	return ok
}

// addMessages merges right into left per LangGraph's add_messages.
func addMessages(left []any, right any, newID func() string) ([]any, error) {
	var in []any
	switch r := right.(type) {
	case nil:
		return left, nil
	case []any:
		in = r
	default:
		in = []any{r}
	}
	norm := make([]map[string]any, 0, len(in))
	removeAllAt := -1
	for i, raw := range in {
		m, err := normalizeMessage(raw)
		if err != nil {
			return nil, badUpdate(err.Error(), i)
		}
		if id, _ := m["id"].(string); id == "" {
			m["id"] = newID()
		}
		if m["type"] == "remove" && m["id"] == removeAll {
			removeAllAt = i
		}
		norm = append(norm, m)
	}
	if removeAllAt >= 0 {
		out := make([]any, 0, len(norm)-removeAllAt-1)
		for _, m := range norm[removeAllAt+1:] {
			out = append(out, m)
		}
		return out, nil
	}
	merged := make([]any, len(left), len(left)+len(norm))
	copy(merged, left)
	index := make(map[string]int, len(merged))
	for i, m := range merged {
		if mm, ok := m.(map[string]any); ok {
			if id, ok := mm["id"].(string); ok {
				index[id] = i
			}
		}
	}
	removed := map[string]bool{}
	for i, m := range norm {
		id := m["id"].(string)
		at, exists := index[id]
		switch {
		case exists && m["type"] == "remove":
			removed[id] = true
		case exists:
			delete(removed, id)
			merged[at] = m
		case m["type"] == "remove":
			e := badUpdate(fmt.Sprintf("Attempting to delete a message with an ID that doesn't exist ('%s')", id), i)
			e.Status400 = true
			return nil, e
		default:
			index[id] = len(merged)
			merged = append(merged, m)
		}
	}
	if len(removed) == 0 {
		return merged, nil
	}
	out := merged[:0]
	for _, m := range merged {
		if mm, ok := m.(map[string]any); ok && removed[fmt.Sprint(mm["id"])] {
			continue
		}
		out = append(out, m)
	}
	return out, nil
}

// messageTypes maps accepted roles and types to LangChain message types.
var messageTypes = map[string]string{
	"human": "human", "user": "human",
	"ai": "ai", "assistant": "ai",
	"system": "system", "developer": "system",
	"tool":     "tool",
	"function": "function",
	"remove":   "remove",
}

// knownMessageFields are kept at the top level; any other field of a
// message object goes into additional_kwargs, as LangChain does.
var knownMessageFields = map[string]bool{
	"type": true, "role": true, "content": true, "id": true, "name": true,
	"additional_kwargs": true, "response_metadata": true, "tool_calls": true,
	"invalid_tool_calls": true, "usage_metadata": true, "tool_call_id": true,
	"artifact": true, "status": true, "example": true,
}

// normalizeMessage coerces one message (a string, a [role, content] pair,
// or an object with type or role) to its serialized LangChain form.
func normalizeMessage(raw any) (map[string]any, error) {
	var src map[string]any
	switch v := raw.(type) {
	case string:
		src = map[string]any{"type": "human", "content": v}
	case []any:
		if len(v) != 2 {
			return nil, fmt.Errorf("a message given as a list must be a [role, content] pair")
		}
		role, ok := v[0].(string)
		if !ok {
			return nil, fmt.Errorf("a message given as a list must be a [role, content] pair")
		}
		src = map[string]any{"role": role, "content": v[1]}
	case map[string]any:
		src = v
	default:
		return nil, fmt.Errorf("a message must be an object, a string or a [role, content] pair")
	}
	kind, _ := src["role"].(string)
	if kind == "" {
		kind, _ = src["type"].(string)
	}
	if kind == "" {
		return nil, fmt.Errorf("a message object must have a 'type' (or 'role') and a 'content'")
	}
	typ, ok := messageTypes[strings.ToLower(kind)]
	if !ok {
		return nil, fmt.Errorf("unexpected message type: '%s'. Use one of 'human', 'user', 'ai', 'assistant', 'function', 'tool', 'system', 'developer' or 'remove'", kind)
	}
	content, hasContent := src["content"]
	if !hasContent && typ != "remove" {
		return nil, fmt.Errorf("a message object must have a 'type' (or 'role') and a 'content'")
	}
	switch content.(type) {
	case nil:
		content = ""
	case string, []any:
	default:
		return nil, fmt.Errorf("message content must be a string or a list of content blocks")
	}
	if id, present := src["id"]; present && id != nil {
		if _, ok := id.(string); !ok {
			return nil, fmt.Errorf("message id must be a string")
		}
	}
	m := map[string]any{
		"type":              typ,
		"content":           content,
		"additional_kwargs": map[string]any{},
		"response_metadata": map[string]any{},
		"name":              nil,
		"id":                nil,
	}
	extra := map[string]any{}
	for k, v := range src {
		switch {
		case k == "role" || k == "type" || k == "content":
		case knownMessageFields[k]:
			m[k] = v
		default:
			extra[k] = v
		}
	}
	if ak, ok := m["additional_kwargs"].(map[string]any); ok && len(extra) > 0 {
		merged := make(map[string]any, len(ak)+len(extra))
		for k, v := range ak {
			merged[k] = v
		}
		for k, v := range extra {
			merged[k] = v
		}
		m["additional_kwargs"] = merged
	}
	if strings.EqualFold(kind, "developer") {
		ak, _ := m["additional_kwargs"].(map[string]any)
		merged := map[string]any{"__openai_role__": "developer"}
		for k, v := range ak {
			merged[k] = v
		}
		m["additional_kwargs"] = merged
	}
	switch typ {
	case "ai":
		setDefault(m, "tool_calls", []any{})
		setDefault(m, "invalid_tool_calls", []any{})
		setDefault(m, "usage_metadata", nil)
	case "tool":
		if s, _ := m["tool_call_id"].(string); s == "" {
			return nil, fmt.Errorf("a tool message needs a 'tool_call_id'")
		}
		setDefault(m, "status", "success")
		setDefault(m, "artifact", nil)
	case "function":
		if s, _ := m["name"].(string); s == "" {
			return nil, fmt.Errorf("a function message needs a 'name'")
		}
	case "remove":
		if s, _ := m["id"].(string); s == "" {
			return nil, fmt.Errorf("a remove message needs the 'id' of the message to remove")
		}
	}
	return m, nil
}

func setDefault(m map[string]any, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

// cloneJSON deep-copies a JSON value (maps, slices, scalars).
func cloneJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = cloneJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = cloneJSON(x)
		}
		return out
	default:
		return v
	}
}

// jsonEqual compares two decoded JSON values (numbers as json.Number or
// float64) for exact equality.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number, float64, int, int64:
		fa, oka := toFloat(a)
		fb, okb := toFloat(b)
		return oka && okb && fa == fb
	default:
		return a == b
	}
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
