package toolserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The tools keep the original server's parameter conventions, on which
// clients and prompts depend: booleans are the strings "true" and "false",
// lists are a JSON array string or one bare value, objects are a JSON
// object string.

// isTrue is the original's `value.lower() == "true"`.
func isTrue(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "true") }

// optBool maps "true"/"false" (any case) to a filter and anything else,
// null included, to no filter.
func optBool(s *string) *bool {
	if s == nil {
		return nil
	}
	switch strings.ToLower(strings.TrimSpace(*s)) {
	case "true":
		v := true
		return &v
	case "false":
		v := false
		return &v
	}
	return nil
}

// str is the value of an optional string, "" for null. The string "null"
// counts as null too: clients that stringify every argument send it.
func str(s *string) string {
	if s == nil {
		return ""
	}
	v := strings.TrimSpace(*s)
	if v == "null" {
		return ""
	}
	return v
}

// list parses a list parameter: a JSON array of strings (recognised by a
// leading "["), or one bare value; "" is no list.
func list(name string, s *string) ([]string, error) {
	v := str(s)
	if v == "" {
		return nil, nil
	}
	if !strings.HasPrefix(v, "[") {
		return []string{v}, nil
	}
	var raw []any
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("%s must be a JSON array string such as '[\"a\",\"b\"]' or a single value: %v", name, err)
	}
	out := make([]string, 0, len(raw))
	for _, e := range raw {
		switch t := e.(type) {
		case string:
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		case float64:
			out = append(out, strconv.FormatFloat(t, 'f', -1, 64))
		default:
			return nil, fmt.Errorf("%s must be a JSON array of strings", name)
		}
	}
	return out, nil
}

// jsonObject checks an object parameter (a JSON object string) and returns
// its compact JSON, "" for none.
func jsonObject(name string, s *string) (string, error) {
	v := str(s)
	if v == "" {
		return "", nil
	}
	var m map[string]any
	if !strings.HasPrefix(v, "{") || json.Unmarshal([]byte(v), &m) != nil {
		return "", fmt.Errorf("%s must be a JSON object string such as '{\"key\": \"value\"}'", name)
	}
	b, _ := json.Marshal(m)
	return string(b), nil
}

// clampLimit bounds a list limit to 1..max.
func clampLimit(n, max int) int {
	if n < 1 {
		return 1
	}
	if n > max {
		return max
	}
	return n
}
