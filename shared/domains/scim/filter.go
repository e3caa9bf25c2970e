package scim

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Filter expressions (RFC 7644 §3.4.2.2):
//
//	filter    = orExpr
//	orExpr    = andExpr *("or" andExpr)
//	andExpr   = unary *("and" unary)
//	unary     = "not" "(" filter ")" / "(" filter ")" / attrExp / valuePath
//	attrExp   = attrPath "pr" / attrPath compareOp compValue
//	valuePath = attrPath "[" valFilter "]"
//	compareOp = eq / ne / co / sw / ew / gt / lt / ge / le
//	compValue = false / null / true / number / string
//
// Operators and attribute names are case-insensitive; string comparisons
// follow each attribute's caseExact.

// MaxFilterLength bounds a filter (and a PATCH path) in bytes.
const MaxFilterLength = 4096

const maxFilterDepth = 32

// Expr is a parsed filter.
type Expr interface {
	// Match reports whether obj (a resource, or an element of a
	// multi-valued attribute inside a value filter) satisfies the filter.
	Match(obj map[string]any) bool
}

// attrRef names an attribute of the object a filter runs on, and
// optionally one of its sub-attributes.
type attrRef struct {
	attr *Attribute
	sub  *Attribute
}

// leaf is the attribute whose values are compared.
func (r attrRef) leaf() *Attribute {
	if r.sub != nil {
		return r.sub
	}
	return r.attr
}

func (r attrRef) String() string {
	if r.sub != nil {
		return r.attr.Name + "." + r.sub.Name
	}
	return r.attr.Name
}

// values collects the values at r in obj, flattening multi-valued ones.
func (r attrRef) values(obj map[string]any) []any {
	v, ok := obj[r.attr.Name]
	if !ok || v == nil {
		return nil
	}
	var out []any
	add := func(x any) {
		if r.sub == nil {
			if x != nil {
				out = append(out, x)
			}
			return
		}
		if m, ok := x.(map[string]any); ok {
			if s, ok := m[r.sub.Name]; ok && s != nil {
				out = append(out, s)
			}
		}
	}
	if list, ok := v.([]any); ok {
		for _, x := range list {
			add(x)
		}
	} else {
		add(v)
	}
	return out
}

type andExpr struct{ l, r Expr }
type orExpr struct{ l, r Expr }
type notExpr struct{ x Expr }
type presentExpr struct{ ref attrRef }
type cmpExpr struct {
	ref attrRef
	op  string
	val any // string, bool, float64 or nil
}
type valuePathExpr struct {
	attr   *Attribute
	filter Expr
}

func (e andExpr) Match(o map[string]any) bool { return e.l.Match(o) && e.r.Match(o) }
func (e orExpr) Match(o map[string]any) bool  { return e.l.Match(o) || e.r.Match(o) }
func (e notExpr) Match(o map[string]any) bool { return !e.x.Match(o) }

func (e presentExpr) Match(o map[string]any) bool {
	for _, v := range e.ref.values(o) {
		switch x := v.(type) {
		case string:
			if x != "" {
				return true
			}
		case []any:
			if len(x) > 0 {
				return true
			}
		case map[string]any:
			if len(x) > 0 {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func (e valuePathExpr) Match(o map[string]any) bool {
	v := o[e.attr.Name]
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	for _, x := range list {
		if m, ok := x.(map[string]any); ok && e.filter.Match(m) {
			return true
		}
	}
	return false
}

func (e cmpExpr) Match(o map[string]any) bool {
	vals := e.ref.values(o)
	if e.val == nil {
		// "eq null" matches an unassigned attribute, "ne null" an assigned one.
		return (len(vals) == 0) == (e.op == "eq")
	}
	if e.op == "ne" {
		return !cmpExpr{ref: e.ref, op: "eq", val: e.val}.Match(o)
	}
	for _, v := range vals {
		if compare(e.ref.leaf(), e.op, v, e.val) {
			return true
		}
	}
	return false
}

// compare applies op to one attribute value and the filter's value.
func compare(a *Attribute, op string, v, want any) bool {
	switch a.Type {
	case typeBoolean:
		b, ok := v.(bool)
		return ok && op == "eq" && b == want
	case typeDateTime:
		s, ok := v.(string)
		if !ok {
			return false
		}
		if op == "co" || op == "sw" || op == "ew" || op == "eq" {
			if t1, err1 := time.Parse(time.RFC3339Nano, s); err1 == nil && op == "eq" {
				if t2, err2 := time.Parse(time.RFC3339Nano, want.(string)); err2 == nil {
					return t1.Equal(t2)
				}
			}
			return compareStrings(op, s, want.(string), true)
		}
		t1, err1 := time.Parse(time.RFC3339Nano, s)
		t2, err2 := time.Parse(time.RFC3339Nano, want.(string))
		if err1 != nil || err2 != nil {
			return false
		}
		return ordered(op, t1.Compare(t2))
	default:
		s, ok := v.(string)
		if !ok {
			return false
		}
		return compareStrings(op, s, want.(string), a.CaseExact)
	}
}

func compareStrings(op, s, want string, caseExact bool) bool {
	if !caseExact {
		s, want = strings.ToLower(s), strings.ToLower(want)
	}
	switch op {
	case "eq":
		return s == want
	case "co":
		return strings.Contains(s, want)
	case "sw":
		return strings.HasPrefix(s, want)
	case "ew":
		return strings.HasSuffix(s, want)
	}
	return ordered(op, strings.Compare(s, want))
}

func ordered(op string, c int) bool {
	switch op {
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	case "eq":
		return c == 0
	}
	return false
}

// --- lexer ---

type tokKind int

const (
	tokWord tokKind = iota
	tokString
	tokLParen
	tokRParen
	tokLBracket
	tokRBracket
)

type token struct {
	kind tokKind
	text string // word text, or the decoded string
	pos  int
}

func lex(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			out = append(out, token{tokLParen, "(", i})
			i++
		case c == ')':
			out = append(out, token{tokRParen, ")", i})
			i++
		case c == '[':
			out = append(out, token{tokLBracket, "[", i})
			i++
		case c == ']':
			out = append(out, token{tokRBracket, "]", i})
			i++
		case c == '"':
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '"' {
					break
				}
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string starting at position %d", i)
			}
			var v string
			if err := json.Unmarshal([]byte(s[i:j+1]), &v); err != nil {
				return nil, fmt.Errorf("invalid string at position %d", i)
			}
			out = append(out, token{tokString, v, i})
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r()[]\"", rune(s[j])) {
				j++
			}
			out = append(out, token{tokWord, s[i:j], i})
			i = j
		}
	}
	return out, nil
}

// --- parser ---

// resolver turns an attribute path of a filter into an attrRef.
type resolver func(path string) (attrRef, error)

type parser struct {
	toks    []token
	i       int
	depth   int
	resolve resolver
	// valueParent is the multi-valued attribute whose value filter is
	// being parsed (nested value paths are not allowed), nil at top level.
	valueParent *Attribute
	rt          *ResourceType
}

// ParseFilter parses a filter on resources of rt.
func ParseFilter(rt *ResourceType, s string) (Expr, error) {
	return parseFilterWith(rt, s, nil)
}

// parseFilterWith parses a filter at top level (parent nil), or a value
// filter on the sub-attributes of parent.
func parseFilterWith(rt *ResourceType, s string, parent *Attribute) (Expr, error) {
	if len(s) > MaxFilterLength {
		return nil, badRequest(InvalidFilter, "The filter is longer than %d bytes", MaxFilterLength)
	}
	toks, err := lex(s)
	if err != nil {
		return nil, badRequest(InvalidFilter, "Invalid filter: %v", err)
	}
	if len(toks) == 0 {
		return nil, badRequest(InvalidFilter, "Invalid filter: empty expression")
	}
	p := &parser{toks: toks, rt: rt, valueParent: parent}
	if parent == nil {
		p.resolve = func(path string) (attrRef, error) { return resolveAttrPath(rt, path) }
	} else {
		p.resolve = subResolver(parent)
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, p.fail("unexpected %q", p.toks[p.i].text)
	}
	return e, nil
}

func subResolver(parent *Attribute) resolver {
	return func(path string) (attrRef, error) {
		if s := parent.sub(path); s != nil {
			return attrRef{attr: s}, nil
		}
		return attrRef{}, fmt.Errorf("%s has no sub-attribute %q", parent.Name, path)
	}
}

func (p *parser) fail(format string, args ...any) error {
	where := "at the end"
	if p.i < len(p.toks) {
		where = "at position " + strconv.Itoa(p.toks[p.i].pos)
	}
	return badRequest(InvalidFilter, "Invalid filter %s: %s", where, fmt.Sprintf(format, args...))
}

func (p *parser) peekWord(w string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == tokWord && strings.EqualFold(p.toks[p.i].text, w)
}

func (p *parser) or() (Expr, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.peekWord("or") {
		p.i++
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = orExpr{l, r}
	}
	return l, nil
}

func (p *parser) and() (Expr, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.peekWord("and") {
		p.i++
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = andExpr{l, r}
	}
	return l, nil
}

func (p *parser) group() (Expr, error) {
	if p.i >= len(p.toks) || p.toks[p.i].kind != tokLParen {
		return nil, p.fail("expected (")
	}
	p.i++
	p.depth++
	if p.depth > maxFilterDepth {
		return nil, p.fail("nested more than %d levels", maxFilterDepth)
	}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i >= len(p.toks) || p.toks[p.i].kind != tokRParen {
		return nil, p.fail("expected )")
	}
	p.i++
	p.depth--
	return e, nil
}

var compareOps = map[string]bool{"eq": true, "ne": true, "co": true, "sw": true, "ew": true, "gt": true, "lt": true, "ge": true, "le": true}

func (p *parser) unary() (Expr, error) {
	if p.i >= len(p.toks) {
		return nil, p.fail("unexpected end of filter")
	}
	t := p.toks[p.i]
	switch {
	case t.kind == tokLParen:
		return p.group()
	case p.peekWord("not") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == tokLParen:
		p.i++
		x, err := p.group()
		if err != nil {
			return nil, err
		}
		return notExpr{x}, nil
	case t.kind != tokWord:
		return nil, p.fail("expected an attribute path, found %q", t.text)
	}
	p.i++
	// A value path: attr[filter].
	if p.i < len(p.toks) && p.toks[p.i].kind == tokLBracket {
		return p.valuePath(t)
	}
	ref, err := p.resolve(t.text)
	if err != nil {
		return nil, badRequest(InvalidFilter, "Invalid filter: %v", err)
	}
	if p.i >= len(p.toks) || p.toks[p.i].kind != tokWord {
		return nil, p.fail("expected an operator after %s", t.text)
	}
	op := strings.ToLower(p.toks[p.i].text)
	p.i++
	if op == "pr" {
		return presentExpr{ref}, nil
	}
	if !compareOps[op] {
		return nil, badRequest(InvalidFilter, "Invalid filter: unknown operator %q", op)
	}
	if ref.sub == nil && ref.attr.Type == typeComplex {
		// "emails co x" compares the value sub-attribute (RFC 7644 §3.4.2.2).
		v := ref.attr.sub("value")
		if v == nil || !ref.attr.MultiValued {
			return nil, badRequest(InvalidFilter, "Invalid filter: %s is complex; compare one of its sub-attributes", ref.attr.Name)
		}
		ref.sub = v
	}
	if p.i >= len(p.toks) {
		return nil, p.fail("expected a value after %s", op)
	}
	val, err := p.literal(p.toks[p.i])
	if err != nil {
		return nil, err
	}
	p.i++
	if err := checkComparison(ref, op, val); err != nil {
		return nil, err
	}
	return cmpExpr{ref: ref, op: op, val: val}, nil
}

func (p *parser) valuePath(t token) (Expr, error) {
	if p.valueParent != nil {
		return nil, p.fail("value filters cannot be nested")
	}
	ref, err := p.resolve(t.text)
	if err != nil {
		return nil, badRequest(InvalidFilter, "Invalid filter: %v", err)
	}
	if ref.sub != nil || ref.attr.Type != typeComplex {
		return nil, badRequest(InvalidFilter, "Invalid filter: %s[...] needs a complex attribute", t.text)
	}
	// Collect the tokens up to the matching bracket, then parse them on
	// the sub-attributes.
	p.i++ // [
	start := p.i
	for p.i < len(p.toks) && p.toks[p.i].kind != tokRBracket {
		if p.toks[p.i].kind == tokLBracket {
			return nil, p.fail("value filters cannot be nested")
		}
		p.i++
	}
	if p.i >= len(p.toks) {
		return nil, p.fail("expected ]")
	}
	inner := &parser{toks: p.toks[start:p.i], rt: p.rt, valueParent: ref.attr, resolve: subResolver(ref.attr)}
	p.i++ // ]
	if len(inner.toks) == 0 {
		return nil, p.fail("empty value filter")
	}
	e, err := inner.or()
	if err != nil {
		return nil, err
	}
	if inner.i < len(inner.toks) {
		return nil, inner.fail("unexpected %q", inner.toks[inner.i].text)
	}
	return valuePathExpr{attr: ref.attr, filter: e}, nil
}

func (p *parser) literal(t token) (any, error) {
	if t.kind == tokString {
		return t.text, nil
	}
	if t.kind != tokWord {
		return nil, p.fail("expected a value, found %q", t.text)
	}
	switch strings.ToLower(t.text) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if f, err := strconv.ParseFloat(t.text, 64); err == nil {
		return f, nil
	}
	return nil, p.fail("expected a value (a quoted string, number, true, false or null), found %q", t.text)
}

func checkComparison(ref attrRef, op string, val any) error {
	a := ref.leaf()
	if val == nil {
		if op != "eq" && op != "ne" {
			return badRequest(InvalidFilter, "Invalid filter: null can only be compared with eq or ne")
		}
		return nil
	}
	switch a.Type {
	case typeBoolean:
		if _, ok := val.(bool); !ok {
			return badRequest(InvalidFilter, "Invalid filter: %s is a boolean", ref)
		}
		if op != "eq" && op != "ne" {
			return badRequest(InvalidFilter, "Invalid filter: %s is a boolean; only eq and ne apply", ref)
		}
	case typeComplex:
		return badRequest(InvalidFilter, "Invalid filter: %s is complex", ref)
	default:
		s, ok := val.(string)
		if !ok {
			return badRequest(InvalidFilter, "Invalid filter: %s is a %s; compare it with a quoted string", ref, a.Type)
		}
		if a.Type == typeDateTime && op != "co" && op != "sw" && op != "ew" {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return badRequest(InvalidFilter, "Invalid filter: %q is not an RFC 3339 date-time", s)
			}
		}
	}
	return nil
}

// resolveAttrPath resolves "userName", "name.givenName", "emails.value",
// "meta.lastModified", a schema-qualified path such as
// "urn:ietf:params:scim:schemas:core:2.0:User:userName", or an extension
// path such as "<extension URN>:role".
func resolveAttrPath(rt *ResourceType, path string) (attrRef, error) {
	rest := path
	lower := strings.ToLower(path)
	var top *Attribute
	for _, e := range rt.Extensions {
		urn := strings.ToLower(e.ID)
		if lower == urn {
			return attrRef{attr: rt.attr(e.ID)}, nil
		}
		if strings.HasPrefix(lower, urn+":") {
			top, rest = rt.attr(e.ID), path[len(urn)+1:]
			break
		}
	}
	if top == nil {
		if core := strings.ToLower(rt.Schema.ID) + ":"; strings.HasPrefix(lower, core) {
			rest = path[len(core):]
		}
	}
	parts := strings.Split(rest, ".")
	if len(parts) > 2 || parts[0] == "" {
		return attrRef{}, fmt.Errorf("invalid attribute path %q", path)
	}
	if top != nil {
		// Extension: "<urn>:attr" (extension attributes are simple here).
		if len(parts) != 1 {
			return attrRef{}, fmt.Errorf("invalid attribute path %q", path)
		}
		s := top.sub(parts[0])
		if s == nil {
			return attrRef{}, fmt.Errorf("unknown attribute %q", path)
		}
		return attrRef{attr: top, sub: s}, nil
	}
	a := rt.attr(parts[0])
	if a == nil || strings.HasPrefix(a.Name, "urn:") {
		return attrRef{}, fmt.Errorf("unknown attribute %q", path)
	}
	if len(parts) == 1 {
		return attrRef{attr: a}, nil
	}
	if a.Type != typeComplex {
		return attrRef{}, fmt.Errorf("%s has no sub-attributes", a.Name)
	}
	s := a.sub(parts[1])
	if s == nil {
		return attrRef{}, fmt.Errorf("unknown attribute %q", path)
	}
	return attrRef{attr: a, sub: s}, nil
}
