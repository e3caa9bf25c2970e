package otlp

import (
	"encoding/base64"
	"encoding/hex"
)

// idKeys are the OTLP/JSON fields that hold trace and span ids: OTLP/JSON
// writes them in hex where protojson expects base64. OTLP messages have no
// map fields (attributes are lists of {key, value}), so an object key with
// one of these names can only be a Span or Span.Link field.
var idKeys = map[string]bool{
	"traceId": true, "spanId": true, "parentSpanId": true,
	"trace_id": true, "span_id": true, "parent_span_id": true,
}

// hexIDsToBase64 returns body with every id field's hex string value
// re-encoded as base64, in one pass and without parsing the rest. Values
// that are not hex (or contain escapes) are left for protojson to judge.
// It returns body itself when nothing changes; malformed JSON is copied
// through untouched for protojson to report.
func hexIDsToBase64(body []byte) []byte {
	var out []byte
	last := 0 // body[last:] is not yet copied to out
	for i := 0; i < len(body); {
		if body[i] != '"' {
			i++
			continue
		}
		start, end, ok := scanString(body, i)
		if !ok {
			break
		}
		i = end
		// A string followed by ':' is an object key.
		j := skipSpace(body, i)
		if j >= len(body) || body[j] != ':' || !idKeys[string(body[start:end-1])] {
			continue
		}
		j = skipSpace(body, j+1)
		if j >= len(body) || body[j] != '"' {
			i = j
			continue
		}
		vs, ve, ok := scanString(body, j)
		if !ok {
			break
		}
		i = ve
		raw := body[vs : ve-1]
		if len(raw) == 0 || len(raw)%2 != 0 {
			continue
		}
		dec := make([]byte, len(raw)/2)
		if _, err := hex.Decode(dec, raw); err != nil {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(body))
		}
		out = append(out, body[last:vs]...)
		out = base64.StdEncoding.AppendEncode(out, dec)
		last = ve - 1 // keep the closing quote
	}
	if out == nil {
		return body
	}
	return append(out, body[last:]...)
}

// scanString reads the JSON string whose opening quote is at body[q]. It
// returns the index after the opening quote, the index after the closing
// quote, and false when the string does not end.
func scanString(body []byte, q int) (start, end int, ok bool) {
	for i := q + 1; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			return q + 1, i + 1, true
		}
	}
	return 0, 0, false
}

func skipSpace(body []byte, i int) int {
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}
