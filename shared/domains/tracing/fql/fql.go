// Package fql is the filter language of the run query (LangSmith's
// "trace query syntax"): nested calls such as
//
//	and(eq(run_type, "llm"), gt(latency, "5s"), has(tags, "beta"))
//	and(in(metadata_key, ["session_id", "thread_id"]), eq(metadata_value, "t-1"))
//	search("image classification")
//
// Parse turns a filter into a checked syntax tree (errors carry the byte
// position of the problem), Compile turns the tree into a predicate over a
// Row. The tracing domain's planner reads the tree to pick an index and
// evaluates the whole predicate on every candidate.
package fql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Op is an operator name.
type Op string

// Operators.
const (
	And    Op = "and"
	Or     Op = "or"
	Not    Op = "not"
	Eq     Op = "eq"
	Neq    Op = "neq"
	Gt     Op = "gt"
	Gte    Op = "gte"
	Lt     Op = "lt"
	Lte    Op = "lte"
	In     Op = "in"
	Has    Op = "has"
	Search Op = "search"
	Exists Op = "exists"
)

var ops = map[string]Op{
	"and": And, "or": Or, "not": Not, "eq": Eq, "neq": Neq, "gt": Gt, "gte": Gte,
	"lt": Lt, "lte": Lte, "in": In, "has": Has, "search": Search, "exists": Exists,
}

// Kind is the type of a field.
type Kind int

// Field kinds.
const (
	KindText Kind = iota
	KindTime
	KindNumber
	KindDuration // latency: seconds, or "5s", "250ms", "2m", "1h"
	KindError    // a string, compared with null for "has an error"
	KindTags
	KindBool
	KindMetaKey
	KindMetaValue
	KindFeedbackKey
	KindFeedbackScore
)

// Fields are the fields a filter may name, with their kinds.
var Fields = map[string]Kind{
	"id": KindText, "name": KindText, "run_type": KindText, "status": KindText,
	"trace_id": KindText, "thread_id": KindText, "parent_run_id": KindText,
	"reference_example_id": KindText, "session_id": KindText,
	"start_time": KindTime, "end_time": KindTime,
	"latency":      KindDuration,
	"total_tokens": KindNumber, "prompt_tokens": KindNumber, "completion_tokens": KindNumber,
	"total_cost": KindNumber, "prompt_cost": KindNumber, "completion_cost": KindNumber,
	"execution_order": KindNumber,
	"error":           KindError,
	"tags":            KindTags,
	"is_root":         KindBool,
	"metadata_key":    KindMetaKey, "metadata_value": KindMetaValue,
	"feedback_key": KindFeedbackKey, "feedback_score": KindFeedbackScore,
	// search(inputs, "x") and search(outputs, "x") look into one side.
	"inputs": KindText, "outputs": KindText,
}

// Expr is a node of the syntax tree.
type Expr interface {
	// Pos is the byte offset of the node in the filter text.
	Pos() int
}

// Logical is and(...), or(...) or not(x).
type Logical struct {
	Op   Op
	Args []Expr
	At   int
}

// Cond is a comparison of one field: eq, neq, gt, gte, lt, lte, in, has,
// exists, or search with a field. Search without a field has Field "".
type Cond struct {
	Op    Op
	Field string
	Value Value
	At    int
}

func (l *Logical) Pos() int { return l.At }
func (c *Cond) Pos() int    { return c.At }

// ValueKind is the type of a literal.
type ValueKind int

// Literal kinds.
const (
	VNone ValueKind = iota // exists has no value
	VString
	VNumber
	VBool
	VNull
	VList
)

// Value is a literal.
type Value struct {
	Kind ValueKind
	Str  string
	Num  float64
	Bool bool
	List []Value
	At   int
	// Time and Dur are the parsed forms of Str for time and latency
	// fields (set by the checker).
	Time time.Time
	Dur  float64
}

// Error is a syntax or type error at a byte position of the filter.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("position %d: %s", e.Pos, e.Msg) }

func errAt(pos int, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// MaxLength bounds a filter's text, MaxDepth its nesting and MaxNodes its
// size, so a hostile filter cannot exhaust the server.
const (
	MaxLength = 64 << 10
	MaxDepth  = 32
	MaxNodes  = 2000
)

// Parse parses and checks a filter. An empty (or blank) filter is nil with
// no error.
func Parse(src string) (Expr, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	if len(src) > MaxLength {
		return nil, errAt(MaxLength, "the filter is longer than %d bytes", MaxLength)
	}
	p := &parser{lex: lexer{src: src}}
	p.next()
	e, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, errAt(p.tok.pos, "unexpected %s after the end of the filter", p.tok.describe())
	}
	if err := check(e); err != nil {
		return nil, err
	}
	return e, nil
}

// Conjuncts returns the top-level terms of e: the arguments of a top-level
// and (recursively flattened), or e itself.
func Conjuncts(e Expr) []Expr {
	if e == nil {
		return nil
	}
	if l, ok := e.(*Logical); ok && l.Op == And {
		var out []Expr
		for _, a := range l.Args {
			out = append(out, Conjuncts(a)...)
		}
		return out
	}
	return []Expr{e}
}

// String renders e back as filter text (canonical spacing and quoting).
func String(e Expr) string {
	var b strings.Builder
	write(&b, e)
	return b.String()
}

func write(b *strings.Builder, e Expr) {
	switch n := e.(type) {
	case *Logical:
		b.WriteString(string(n.Op))
		b.WriteByte('(')
		for i, a := range n.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, a)
		}
		b.WriteByte(')')
	case *Cond:
		b.WriteString(string(n.Op))
		b.WriteByte('(')
		if n.Field != "" {
			b.WriteString(n.Field)
			if n.Value.Kind != VNone {
				b.WriteString(", ")
			}
		}
		if n.Value.Kind != VNone {
			writeValue(b, n.Value)
		}
		b.WriteByte(')')
	}
}

func writeValue(b *strings.Builder, v Value) {
	switch v.Kind {
	case VString:
		quote(b, v.Str)
	case VNumber:
		fmt.Fprintf(b, "%v", v.Num)
	case VBool:
		fmt.Fprintf(b, "%v", v.Bool)
	case VNull:
		b.WriteString("null")
	case VList:
		b.WriteByte('[')
		for i, x := range v.List {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, x)
		}
		b.WriteByte(']')
	}
}

// quote writes s as a double-quoted string with JSON escapes, which the
// lexer reads back.
func quote(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// Any reports whether some condition of e satisfies f.
func Any(e Expr, f func(*Cond) bool) bool {
	switch n := e.(type) {
	case *Logical:
		for _, a := range n.Args {
			if Any(a, f) {
				return true
			}
		}
	case *Cond:
		return f(n)
	}
	return false
}

// NeedsMetadata reports whether evaluating e reads run metadata (a
// metadata condition, or a search of the whole run).
func NeedsMetadata(e Expr) bool {
	return Any(e, func(c *Cond) bool {
		k := Fields[c.Field]
		return k == KindMetaKey || k == KindMetaValue || c.Op == Search && c.Field == ""
	})
}
