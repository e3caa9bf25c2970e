package threads

import (
	"bytes"
	"encoding/json"
)

// A metadata-filtered index walk rejects most of the rows it reads. For
// filter values that are strings, booleans or null, a row is rejected on
// the stored bytes alone: the stored thread was written by json.Marshal,
// whose encoding of a string is canonical, so the stored value equals the
// filter's exactly when its bytes equal json.Marshal of the filter value.
// Rows this check keeps are decoded and matched the general way.

// rawRejects reports whether the stored thread data certainly fails the
// metadata filter md. It never rejects a row the general match keeps;
// when it cannot tell (numbers, objects, unexpected input) it keeps it.
func rawRejects(data []byte, md map[string]any) bool {
	meta, st := member(data, `"metadata"`)
	if st != found || len(meta) == 0 || meta[0] != '{' {
		return false
	}
	for k, v := range md {
		switch v.(type) {
		case string, bool, nil:
		default:
			continue
		}
		key, err := json.Marshal(k)
		if err != nil {
			return false
		}
		want, err := json.Marshal(v)
		if err != nil {
			return false
		}
		got, st := member(meta, string(key))
		switch {
		case st == absent:
			return true
		case st == found && !bytes.Equal(got, want):
			return true
		}
	}
	return false
}

// What member found.
const (
	unknown = iota // the input is not what the scanner expects
	found
	absent // the whole object was read and has no such key
)

// member returns the raw value of the member whose encoded key is key in
// the compact JSON object obj.
func member(obj []byte, key string) ([]byte, int) {
	if len(obj) < 2 || obj[0] != '{' {
		return nil, unknown
	}
	if string(obj) == "{}" {
		return nil, absent
	}
	for i := 1; i < len(obj); {
		if obj[i] != '"' {
			return nil, unknown
		}
		kend, ok := skipString(obj, i)
		if !ok || kend >= len(obj) || obj[kend] != ':' {
			return nil, unknown
		}
		vend, ok := skipValue(obj, kend+1)
		if !ok || vend >= len(obj) {
			return nil, unknown
		}
		if string(obj[i:kend]) == key {
			return obj[kend+1 : vend], found
		}
		switch {
		case obj[vend] == ',':
			i = vend + 1
		case obj[vend] == '}' && vend == len(obj)-1:
			return nil, absent
		default:
			return nil, unknown
		}
	}
	return nil, unknown
}

// skipString returns the index after the string starting at data[i] ('"').
func skipString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the compact JSON value at data[i].
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := skipString(data, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
			j++
		}
		return j, j > i
	}
}
