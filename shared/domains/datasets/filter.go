package datasets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The examples `filter` parameter speaks the subset of LangSmith's filter
// language that applies to examples (the SDKs' documented uses are
// `exists(metadata, "k")`, `has(metadata, '{"k": "v"}')` and their
// combinations with and/or/not). Grammar:
//
//	expr    = name "(" [ arg { "," arg } ] ")"
//	arg     = expr | literal | attr
//	attr    = ident { "." ident }          e.g. metadata, metadata.topic
//	literal = string | number | true | false | null | "[" [ literal { "," literal } ] "]"
//	string  = "..." (JSON escapes) | '...' (\' and \\ escapes)
//
// Functions: and(e, …), or(e, …), not(e); exists(attr[, "key"]);
// has(attr, value): an object attribute contains every key of a JSON
// object value (given as a literal or a string holding JSON), an array
// attribute contains value; eq, neq, gt, gte, lt, lte (attr, literal);
// in(attr, [literal, …]); search(attr, "text") (case-insensitive
// substring of a string value). An attribute is one of the example's
// fields (id, dataset_id, created_at, modified_at, source_run_id) or a
// path into metadata, inputs or outputs; an attribute may be quoted
// ("metadata"), as the Python SDK's tests write it.

// Filter limits keep parsing and evaluation cheap for any input.
const (
	maxFilterLen   = 8192
	maxFilterDepth = 32
)

// FilterError is a syntax or semantic error at a byte offset of the filter.
type FilterError struct {
	Pos int
	Msg string
}

func (e *FilterError) Error() string { return fmt.Sprintf("position %d: %s", e.Pos, e.Msg) }

// Filter is a parsed examples filter.
type Filter struct{ root node }

type node interface {
	eval(doc map[string]any) bool
}

type attrRef struct {
	root string
	path []string
}

type literal struct{ v any }

var filterRoots = map[string]bool{
	"id": true, "dataset_id": true, "created_at": true, "modified_at": true,
	"source_run_id": true, "metadata": true, "inputs": true, "outputs": true,
}

// ParseFilter parses s; an empty (or blank) s is no filter (nil).
func ParseFilter(s string) (*Filter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if len(s) > maxFilterLen {
		return nil, &FilterError{Pos: maxFilterLen, Msg: fmt.Sprintf("filter longer than %d bytes", maxFilterLen)}
	}
	if !utf8.ValidString(s) {
		return nil, &FilterError{Pos: 0, Msg: "filter is not valid UTF-8"}
	}
	p := &parser{src: s}
	p.skip()
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos < len(p.src) {
		return nil, p.errf("unexpected %q after the expression", p.rest())
	}
	return &Filter{root: n}, nil
}

// Match reports whether an example (as its JSON document) passes.
func (f *Filter) Match(doc map[string]any) bool {
	if f == nil {
		return true
	}
	return f.root.eval(doc)
}

type parser struct {
	src string
	pos int
}

func (p *parser) errf(format string, args ...any) error {
	return &FilterError{Pos: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) rest() string {
	r := p.src[p.pos:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentPart(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' || c == '-' }

func (p *parser) ident() string {
	start := p.pos
	if p.pos < len(p.src) && isIdentStart(p.src[p.pos]) {
		p.pos++
		for p.pos < len(p.src) && isIdentPart(p.src[p.pos]) {
			p.pos++
		}
	}
	return p.src[start:p.pos]
}

func (p *parser) expect(c byte) error {
	p.skip()
	if p.peek() != c {
		if p.pos >= len(p.src) {
			return p.errf("expected %q, found the end of the filter", c)
		}
		return p.errf("expected %q, found %q", c, p.rest())
	}
	p.pos++
	return nil
}

// expr parses a function call.
func (p *parser) expr(depth int) (node, error) {
	if depth > maxFilterDepth {
		return nil, p.errf("filter nested deeper than %d", maxFilterDepth)
	}
	p.skip()
	start := p.pos
	name := p.ident()
	if name == "" {
		if p.pos >= len(p.src) {
			return nil, p.errf("expected a function such as eq(…), found the end of the filter")
		}
		return nil, p.errf("expected a function such as eq(…), found %q", p.rest())
	}
	if err := p.expect('('); err != nil {
		return nil, err
	}
	lname := strings.ToLower(name)
	switch lname {
	case "and", "or":
		var kids []node
		for {
			k, err := p.expr(depth + 1)
			if err != nil {
				return nil, err
			}
			kids = append(kids, k)
			p.skip()
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if err := p.expect(')'); err != nil {
				return nil, err
			}
			if lname == "and" {
				return andNode(kids), nil
			}
			return orNode(kids), nil
		}
	case "not":
		k, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return notNode{k}, nil
	case "exists":
		a, err := p.attr()
		if err != nil {
			return nil, err
		}
		p.skip()
		if p.peek() == ',' {
			p.pos++
			p.skip()
			at := p.pos
			lit, err := p.literal(depth + 1)
			if err != nil {
				return nil, err
			}
			key, ok := lit.v.(string)
			if !ok {
				return nil, &FilterError{Pos: at, Msg: "exists(attribute, key) needs a string key"}
			}
			a.path = append(a.path, key)
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		if len(a.path) == 0 {
			return nil, &FilterError{Pos: start, Msg: "exists needs a key: exists(metadata, \"key\") or exists(metadata.key)"}
		}
		return existsNode{a}, nil
	case "has", "eq", "neq", "gt", "gte", "lt", "lte", "in", "search":
		a, err := p.attr()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		p.skip()
		at := p.pos
		lit, err := p.literal(depth + 1)
		if err != nil {
			return nil, err
		}
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		switch lname {
		case "has":
			// A string that holds a JSON object is the object (the SDKs
			// send has(metadata, '{"k": "v"}')).
			if s, ok := lit.v.(string); ok && a.isObjectRoot() && len(a.path) == 0 {
				var v any
				if err := decodeJSON([]byte(s), &v); err != nil {
					return nil, &FilterError{Pos: at, Msg: "has(" + a.root + ", …) needs a JSON object: " + err.Error()}
				}
				lit.v = v
			}
			if _, ok := lit.v.(map[string]any); !ok && a.isObjectRoot() && len(a.path) == 0 {
				return nil, &FilterError{Pos: at, Msg: "has(" + a.root + ", …) needs a JSON object"}
			}
			return hasNode{a, lit.v}, nil
		case "in":
			list, ok := lit.v.([]any)
			if !ok {
				return nil, &FilterError{Pos: at, Msg: "in(attribute, […]) needs a list"}
			}
			return inNode{a, list}, nil
		case "search":
			s, ok := lit.v.(string)
			if !ok {
				return nil, &FilterError{Pos: at, Msg: "search(attribute, text) needs a string"}
			}
			return searchNode{a, strings.ToLower(s)}, nil
		case "eq", "neq":
			return cmpNode{op: lname, a: a, v: lit.v}, nil
		default:
			switch lit.v.(type) {
			case float64, string:
			default:
				return nil, &FilterError{Pos: at, Msg: lname + " compares with a number or a string"}
			}
			return cmpNode{op: lname, a: a, v: lit.v}, nil
		}
	}
	return nil, &FilterError{Pos: start, Msg: fmt.Sprintf("unknown function %q (and, or, not, exists, has, eq, neq, gt, gte, lt, lte, in, search)", name)}
}

func (a attrRef) isObjectRoot() bool {
	return a.root == "metadata" || a.root == "inputs" || a.root == "outputs"
}

// attr parses an attribute: a dotted identifier or a quoted one.
func (p *parser) attr() (attrRef, error) {
	p.skip()
	start := p.pos
	var raw string
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		s, err := p.str()
		if err != nil {
			return attrRef{}, err
		}
		raw = s
	case isIdentStart(c):
		for {
			part := p.ident()
			if part == "" {
				return attrRef{}, p.errf("expected a name after '.'")
			}
			raw += part
			if p.peek() != '.' {
				break
			}
			p.pos++
			raw += "."
		}
	default:
		if p.pos >= len(p.src) {
			return attrRef{}, p.errf("expected an attribute, found the end of the filter")
		}
		return attrRef{}, p.errf("expected an attribute such as metadata, found %q", p.rest())
	}
	parts := strings.Split(raw, ".")
	root := strings.ToLower(parts[0])
	if !filterRoots[root] {
		return attrRef{}, &FilterError{Pos: start, Msg: fmt.Sprintf("unknown attribute %q (id, dataset_id, created_at, modified_at, source_run_id, metadata, inputs, outputs)", parts[0])}
	}
	a := attrRef{root: root, path: parts[1:]}
	for _, s := range a.path {
		if s == "" {
			return attrRef{}, &FilterError{Pos: start, Msg: fmt.Sprintf("empty path segment in %q", raw)}
		}
	}
	if len(a.path) > 0 && !a.isObjectRoot() {
		return attrRef{}, &FilterError{Pos: start, Msg: fmt.Sprintf("%s has no fields", root)}
	}
	return a, nil
}

func (p *parser) literal(depth int) (literal, error) {
	if depth > maxFilterDepth {
		return literal{}, p.errf("filter nested deeper than %d", maxFilterDepth)
	}
	p.skip()
	c := p.peek()
	switch {
	case c == '"' || c == '\'':
		s, err := p.str()
		return literal{s}, err
	case c == '[':
		p.pos++
		list := []any{}
		p.skip()
		if p.peek() == ']' {
			p.pos++
			return literal{list}, nil
		}
		for {
			l, err := p.literal(depth + 1)
			if err != nil {
				return literal{}, err
			}
			list = append(list, l.v)
			p.skip()
			if p.peek() == ',' {
				p.pos++
				continue
			}
			if err := p.expect(']'); err != nil {
				return literal{}, err
			}
			return literal{list}, nil
		}
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		p.pos++
		for p.pos < len(p.src) && strings.IndexByte("0123456789.eE+-", p.src[p.pos]) >= 0 {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return literal{}, &FilterError{Pos: start, Msg: fmt.Sprintf("invalid number %q", p.src[start:p.pos])}
		}
		return literal{f}, nil
	case isIdentStart(c):
		start := p.pos
		switch w := p.ident(); strings.ToLower(w) {
		case "true":
			return literal{true}, nil
		case "false":
			return literal{false}, nil
		case "null", "none":
			return literal{nil}, nil
		default:
			return literal{}, &FilterError{Pos: start, Msg: fmt.Sprintf("expected a value, found %q (quote strings)", w)}
		}
	}
	if p.pos >= len(p.src) {
		return literal{}, p.errf("expected a value, found the end of the filter")
	}
	return literal{}, p.errf("expected a value, found %q", p.rest())
}

// str parses a double-quoted (JSON escapes) or single-quoted string.
func (p *parser) str() (string, error) {
	start := p.pos
	q := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == q:
			p.pos++
			if q == '"' {
				var s string
				if err := json.Unmarshal([]byte(p.src[start:p.pos]), &s); err != nil {
					return "", &FilterError{Pos: start, Msg: "invalid string: " + err.Error()}
				}
				return s, nil
			}
			return b.String(), nil
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				p.pos++
				return "", p.errf("unterminated escape")
			}
			if q == '\'' {
				n := p.src[p.pos+1]
				if n != '\'' && n != '\\' {
					b.WriteByte('\\')
				}
				b.WriteByte(n)
			}
			p.pos += 2
		case c < 0x20 && q == '"':
			return "", p.errf("control character in string")
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
	return "", &FilterError{Pos: start, Msg: "unterminated string"}
}

type andNode []node
type orNode []node
type notNode struct{ n node }
type existsNode struct{ a attrRef }
type hasNode struct {
	a attrRef
	v any
}
type inNode struct {
	a    attrRef
	list []any
}
type searchNode struct {
	a attrRef
	s string
}
type cmpNode struct {
	op string
	a  attrRef
	v  any
}

func (n andNode) eval(d map[string]any) bool {
	for _, k := range n {
		if !k.eval(d) {
			return false
		}
	}
	return true
}

func (n orNode) eval(d map[string]any) bool {
	for _, k := range n {
		if k.eval(d) {
			return true
		}
	}
	return false
}

func (n notNode) eval(d map[string]any) bool { return !n.n.eval(d) }

func resolve(d map[string]any, a attrRef) (any, bool) {
	v, ok := d[a.root]
	if !ok {
		return nil, false
	}
	for _, k := range a.path {
		m, isMap := v.(map[string]any)
		if !isMap {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func (n existsNode) eval(d map[string]any) bool { _, ok := resolve(d, n.a); return ok }

func (n hasNode) eval(d map[string]any) bool {
	v, ok := resolve(d, n.a)
	if !ok {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		want, ok := n.v.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range want {
			if gv, ok := x[k]; !ok || !jsonEqual(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		for _, el := range x {
			if jsonEqual(el, n.v) {
				return true
			}
		}
	case string:
		if s, ok := n.v.(string); ok {
			return strings.Contains(x, s)
		}
	}
	return false
}

func (n inNode) eval(d map[string]any) bool {
	v, ok := resolve(d, n.a)
	if !ok {
		return false
	}
	for _, el := range n.list {
		if jsonEqual(v, el) {
			return true
		}
	}
	return false
}

func (n searchNode) eval(d map[string]any) bool {
	v, ok := resolve(d, n.a)
	s, isStr := v.(string)
	return ok && isStr && strings.Contains(strings.ToLower(s), n.s)
}

func (n cmpNode) eval(d map[string]any) bool {
	v, ok := resolve(d, n.a)
	switch n.op {
	case "eq":
		return ok && jsonEqual(v, n.v)
	case "neq":
		return !ok || !jsonEqual(v, n.v)
	}
	if !ok {
		return false
	}
	c, comparable := compare(v, n.v)
	if !comparable {
		return false
	}
	switch n.op {
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	}
	return c <= 0
}

// compare orders numbers numerically, timestamps by time and other
// strings bytewise; values of different kinds do not compare.
func compare(a, b any) (int, bool) {
	af, aNum := number(a)
	bf, bNum := number(b)
	if aNum && bNum {
		switch {
		case af < bf:
			return -1, true
		case af > bf:
			return 1, true
		}
		return 0, true
	}
	as, aStr := a.(string)
	bs, bStr := b.(string)
	if !aStr || !bStr {
		return 0, false
	}
	if at, err := parseTime(as); err == nil {
		if bt, err := parseTime(bs); err == nil {
			return at.Compare(bt), true
		}
	}
	return strings.Compare(as, bs), true
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func jsonEqual(a, b any) bool {
	if af, ok := number(a); ok {
		bf, ok := number(b)
		return ok && af == bf
	}
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
	}
	return a == b
}

// decodeJSON decodes with numbers kept exact (json.Number).
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// timeLayouts are the as_of and filter timestamp forms accepted: RFC 3339
// with or without a zone (no zone is UTC), and a bare date.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a timestamp: %q", s)
}
