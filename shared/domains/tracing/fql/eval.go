package fql

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Row is what a filter reads from a run.
type Row struct {
	ID, Name, RunType, Status, TraceID, ThreadID, ParentRunID string
	ReferenceExampleID, SessionID                             string
	Error                                                     string
	HasError                                                  bool
	StartTime                                                 time.Time
	// EndTime is zero while the run has not ended.
	EndTime                                     time.Time
	TotalTokens, PromptTokens, CompletionTokens float64
	TotalCost, PromptCost, CompletionCost       float64
	ExecutionOrder                              float64
	IsRoot                                      bool
	Tags                                        []string
	Metadata                                    map[string]any
	Feedback                                    []Feedback
	// Inputs and Outputs return the run's inputs and outputs as JSON text,
	// for search; they are called only when a search needs them (they may
	// read blob storage). Nil means none.
	Inputs, Outputs func() string
}

// Feedback is one feedback entry of a run.
type Feedback struct {
	Key      string
	Score    float64
	HasScore bool
}

// Predicate reports whether a row matches.
type Predicate func(*Row) bool

// Compile returns the predicate of e; a nil e matches everything.
//
// Conditions on metadata_key and metadata_value that are arguments of one
// and(...) must hold for the same metadata pair, and so must conditions on
// feedback_key and feedback_score for the same feedback entry:
// and(eq(metadata_key, "a"), eq(metadata_value, "b")) means "metadata a is
// b", not "some key is a and some value is b". Such a condition anywhere
// else stands alone ("some pair satisfies it").
func Compile(e Expr) Predicate {
	if e == nil {
		return func(*Row) bool { return true }
	}
	return compile(e)
}

func compile(e Expr) Predicate {
	switch n := e.(type) {
	case *Logical:
		switch n.Op {
		case Not:
			p := compile(n.Args[0])
			return func(r *Row) bool { return !p(r) }
		case Or:
			ps := make([]Predicate, len(n.Args))
			for i, a := range n.Args {
				ps[i] = compile(a)
			}
			return func(r *Row) bool {
				for _, p := range ps {
					if p(r) {
						return true
					}
				}
				return false
			}
		default:
			return compileAnd(n.Args)
		}
	case *Cond:
		switch Fields[n.Field] {
		case KindMetaKey, KindMetaValue:
			return metaGroup([]*Cond{n})
		case KindFeedbackKey, KindFeedbackScore:
			return feedbackGroup([]*Cond{n})
		}
		return cond(n)
	}
	return func(*Row) bool { return false }
}

func compileAnd(args []Expr) Predicate {
	var ps []Predicate
	var meta, fb []*Cond
	for _, a := range args {
		if c, ok := a.(*Cond); ok {
			switch Fields[c.Field] {
			case KindMetaKey, KindMetaValue:
				meta = append(meta, c)
				continue
			case KindFeedbackKey, KindFeedbackScore:
				fb = append(fb, c)
				continue
			}
		}
		ps = append(ps, compile(a))
	}
	if len(meta) > 0 {
		ps = append(ps, metaGroup(meta))
	}
	if len(fb) > 0 {
		ps = append(ps, feedbackGroup(fb))
	}
	return func(r *Row) bool {
		for _, p := range ps {
			if !p(r) {
				return false
			}
		}
		return true
	}
}

// scalar is a metadata value or feedback score in comparable form.
type scalar struct {
	null   bool
	isNum  bool
	num    float64
	isBool bool
	b      bool
	str    string
}

func toScalar(v any) scalar {
	switch x := v.(type) {
	case nil:
		return scalar{null: true}
	case string:
		s := scalar{str: x}
		if n, err := strconv.ParseFloat(x, 64); err == nil {
			s.isNum, s.num = true, n
		}
		return s
	case bool:
		return scalar{isBool: true, b: x, str: strconv.FormatBool(x)}
	case float64:
		return scalar{isNum: true, num: x, str: strconv.FormatFloat(x, 'f', -1, 64)}
	case int:
		return scalar{isNum: true, num: float64(x), str: strconv.Itoa(x)}
	case int64:
		return scalar{isNum: true, num: float64(x), str: strconv.FormatInt(x, 10)}
	case json.Number:
		n, _ := x.Float64()
		return scalar{isNum: true, num: n, str: x.String()}
	}
	b, _ := json.Marshal(v)
	return scalar{str: string(b)}
}

// eqScalar compares a value with a literal: numbers numerically (a numeric
// string equals its number), booleans with true/false, everything else as
// text.
func eqScalar(s scalar, v Value) bool {
	switch v.Kind {
	case VNull:
		return s.null
	case VNumber:
		return s.isNum && s.num == v.Num
	case VBool:
		return s.isBool && s.b == v.Bool || !s.isBool && s.str == strconv.FormatBool(v.Bool)
	case VString:
		return !s.null && s.str == v.Str
	}
	return false
}

// cmpScalar orders a value against a literal (numerically when both are
// numbers, else as text); ok is false when they cannot be ordered.
func cmpScalar(s scalar, v Value) (int, bool) {
	if s.null {
		return 0, false
	}
	if v.Kind == VNumber {
		if !s.isNum {
			return 0, false
		}
		return cmpFloat(s.num, v.Num), true
	}
	if v.Kind == VString {
		if n, err := strconv.ParseFloat(v.Str, 64); err == nil && s.isNum {
			return cmpFloat(s.num, n), true
		}
		return strings.Compare(s.str, v.Str), true
	}
	return 0, false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func ordered(op Op, c int) bool {
	switch op {
	case Gt:
		return c > 0
	case Gte:
		return c >= 0
	case Lt:
		return c < 0
	case Lte:
		return c <= 0
	}
	return false
}

// matchScalar applies a condition to one scalar.
func matchScalar(c *Cond, s scalar) bool {
	switch c.Op {
	case Eq:
		return eqScalar(s, c.Value)
	case Neq:
		return !eqScalar(s, c.Value)
	case In:
		for _, v := range c.Value.List {
			if eqScalar(s, v) {
				return true
			}
		}
		return false
	case Gt, Gte, Lt, Lte:
		n, ok := cmpScalar(s, c.Value)
		return ok && ordered(c.Op, n)
	case Exists:
		return !s.null
	case Has:
		// has(metadata_key, "k"): the metadata has key k.
		return eqScalar(s, c.Value)
	case Search:
		return !s.null && strings.Contains(strings.ToLower(s.str), strings.ToLower(c.Value.Str))
	}
	return false
}

func metaGroup(cs []*Cond) Predicate {
	return func(r *Row) bool {
		for k, v := range r.Metadata {
			if pairMatches(cs, KindMetaKey, scalar{str: k}, toScalar(v)) {
				return true
			}
		}
		return false
	}
}

func feedbackGroup(cs []*Cond) Predicate {
	return func(r *Row) bool {
		for _, f := range r.Feedback {
			ks := scalar{str: f.Key}
			ss := scalar{null: true}
			if f.HasScore {
				ss = scalar{isNum: true, num: f.Score, str: strconv.FormatFloat(f.Score, 'f', -1, 64)}
			}
			if pairMatches(cs, KindFeedbackKey, ks, ss) {
				return true
			}
		}
		return false
	}
}

// pairMatches reports whether one key/value pair (a metadata entry, a
// feedback item) satisfies every condition of a group: conditions on a
// field of keyKind test the key, the others the value.
func pairMatches(cs []*Cond, keyKind Kind, key, val scalar) bool {
	for _, c := range cs {
		s := val
		if Fields[c.Field] == keyKind {
			s = key
		}
		if !matchScalar(c, s) {
			return false
		}
	}
	return true
}

func (r *Row) text(field string) string {
	switch field {
	case "id":
		return r.ID
	case "name":
		return r.Name
	case "run_type":
		return r.RunType
	case "status":
		return r.Status
	case "trace_id":
		return r.TraceID
	case "thread_id":
		return r.ThreadID
	case "parent_run_id":
		return r.ParentRunID
	case "reference_example_id":
		return r.ReferenceExampleID
	case "session_id":
		return r.SessionID
	case "error":
		return r.Error
	case "inputs":
		if r.Inputs != nil {
			return r.Inputs()
		}
	case "outputs":
		if r.Outputs != nil {
			return r.Outputs()
		}
	}
	return ""
}

func (r *Row) number(field string) (float64, bool) {
	switch field {
	case "total_tokens":
		return r.TotalTokens, true
	case "prompt_tokens":
		return r.PromptTokens, true
	case "completion_tokens":
		return r.CompletionTokens, true
	case "total_cost":
		return r.TotalCost, true
	case "prompt_cost":
		return r.PromptCost, true
	case "completion_cost":
		return r.CompletionCost, true
	case "execution_order":
		return r.ExecutionOrder, true
	case "latency":
		if r.EndTime.IsZero() || r.StartTime.IsZero() {
			return 0, false
		}
		return r.EndTime.Sub(r.StartTime).Seconds(), true
	}
	return 0, false
}

func (r *Row) hasTag(t string) bool {
	for _, x := range r.Tags {
		if x == t {
			return true
		}
	}
	return false
}

// fullText is what search("...") looks into.
func (r *Row) contains(needle string) bool {
	n := strings.ToLower(needle)
	has := func(s string) bool { return s != "" && strings.Contains(strings.ToLower(s), n) }
	if has(r.Name) || has(r.Error) || has(r.ID) {
		return true
	}
	for _, t := range r.Tags {
		if has(t) {
			return true
		}
	}
	for k, v := range r.Metadata {
		if has(k) || has(toScalar(v).str) {
			return true
		}
	}
	if r.Inputs != nil && has(r.Inputs()) {
		return true
	}
	return r.Outputs != nil && has(r.Outputs())
}

func cond(c *Cond) Predicate {
	if c.Op == Search && c.Field == "" {
		return func(r *Row) bool { return r.contains(c.Value.Str) }
	}
	switch Fields[c.Field] {
	case KindText:
		return textCond(c)
	case KindTime:
		return timeCond(c)
	case KindNumber, KindDuration:
		return numberCond(c)
	case KindError:
		return errorCond(c)
	case KindTags:
		return tagsCond(c)
	case KindBool:
		return func(r *Row) bool {
			v := r.IsRoot
			switch c.Op {
			case Eq:
				return v == c.Value.Bool
			case Neq:
				return v != c.Value.Bool
			case In:
				for _, x := range c.Value.List {
					if x.Bool == v {
						return true
					}
				}
				return false
			case Exists:
				return true
			}
			return false
		}
	}
	return func(*Row) bool { return false }
}

func textEq(s string, v Value) bool {
	if v.Kind == VNull {
		return s == ""
	}
	return s == v.Str
}

func textCond(c *Cond) Predicate {
	return func(r *Row) bool {
		s := r.text(c.Field)
		switch c.Op {
		case Eq:
			return textEq(s, c.Value)
		case Neq:
			return !textEq(s, c.Value)
		case In:
			for _, v := range c.Value.List {
				if textEq(s, v) {
					return true
				}
			}
			return false
		case Exists:
			return s != ""
		case Search:
			return s != "" && strings.Contains(strings.ToLower(s), strings.ToLower(c.Value.Str))
		}
		return false
	}
}

func timeOf(r *Row, field string) time.Time {
	if field == "start_time" {
		return r.StartTime
	}
	return r.EndTime
}

func timeEq(t time.Time, v Value) bool {
	if v.Kind == VNull {
		return t.IsZero()
	}
	return !t.IsZero() && t.Equal(v.Time)
}

func timeCond(c *Cond) Predicate {
	return func(r *Row) bool {
		t := timeOf(r, c.Field)
		switch c.Op {
		case Eq:
			return timeEq(t, c.Value)
		case Neq:
			return !timeEq(t, c.Value)
		case In:
			for _, v := range c.Value.List {
				if timeEq(t, v) {
					return true
				}
			}
			return false
		case Exists:
			return !t.IsZero()
		case Gt, Gte, Lt, Lte:
			return !t.IsZero() && ordered(c.Op, t.Compare(c.Value.Time))
		}
		return false
	}
}

func numValue(c *Cond, v Value) float64 {
	if Fields[c.Field] == KindDuration {
		return v.Dur
	}
	return v.Num
}

func numberCond(c *Cond) Predicate {
	eq := func(n float64, ok bool, v Value) bool {
		if v.Kind == VNull {
			return !ok
		}
		return ok && n == numValue(c, v)
	}
	return func(r *Row) bool {
		n, ok := r.number(c.Field)
		switch c.Op {
		case Eq:
			return eq(n, ok, c.Value)
		case Neq:
			return !eq(n, ok, c.Value)
		case In:
			for _, v := range c.Value.List {
				if eq(n, ok, v) {
					return true
				}
			}
			return false
		case Exists:
			return ok
		case Gt, Gte, Lt, Lte:
			return ok && ordered(c.Op, cmpFloat(n, numValue(c, c.Value)))
		}
		return false
	}
}

func errorEq(r *Row, v Value) bool {
	switch v.Kind {
	case VNull:
		return !r.HasError
	case VBool:
		return r.HasError == v.Bool
	case VString:
		return r.HasError && r.Error == v.Str
	}
	return false
}

func errorCond(c *Cond) Predicate {
	return func(r *Row) bool {
		switch c.Op {
		case Eq:
			return errorEq(r, c.Value)
		case Neq:
			return !errorEq(r, c.Value)
		case In:
			for _, v := range c.Value.List {
				if errorEq(r, v) {
					return true
				}
			}
			return false
		case Exists:
			return r.HasError
		case Search:
			return r.HasError && strings.Contains(strings.ToLower(r.Error), strings.ToLower(c.Value.Str))
		}
		return false
	}
}

func tagsCond(c *Cond) Predicate {
	has := func(r *Row, v Value) bool {
		if v.Kind == VNull {
			return len(r.Tags) == 0
		}
		return r.hasTag(v.Str)
	}
	return func(r *Row) bool {
		switch c.Op {
		case Eq, Has:
			return has(r, c.Value)
		case Neq:
			return !has(r, c.Value)
		case In:
			for _, v := range c.Value.List {
				if has(r, v) {
					return true
				}
			}
			return false
		case Exists:
			return len(r.Tags) > 0
		}
		return false
	}
}

// Canonical is the text under which an index files a metadata value, such
// that two values eq() considers equal (a number and its numeric string, a
// boolean and "true"/"false", an object and its JSON) get the same text.
// ok is false for null, which indexes do not file.
func Canonical(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		if n, err := strconv.ParseFloat(x, 64); err == nil {
			return strconv.FormatFloat(n, 'f', -1, 64), true
		}
		return x, true
	case json.Number:
		if n, err := x.Float64(); err == nil {
			return strconv.FormatFloat(n, 'f', -1, 64), true
		}
		return x.String(), true
	}
	s := toScalar(v)
	if s.isNum {
		return strconv.FormatFloat(s.num, 'f', -1, 64), true
	}
	return s.str, true
}

// CanonicalLiteral is Canonical of a filter literal (ok is false for null
// and lists).
func CanonicalLiteral(v Value) (string, bool) {
	switch v.Kind {
	case VString:
		return Canonical(v.Str)
	case VNumber:
		return strconv.FormatFloat(v.Num, 'f', -1, 64), true
	case VBool:
		return strconv.FormatBool(v.Bool), true
	}
	return "", false
}
