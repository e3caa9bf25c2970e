package fql

import (
	"strconv"
	"strings"
	"time"
)

// check validates operators against field kinds and parses time and
// latency literals, reporting the position of the first problem.
func check(e Expr) error {
	switch n := e.(type) {
	case *Logical:
		for _, a := range n.Args {
			if err := check(a); err != nil {
				return err
			}
		}
		return nil
	case *Cond:
		return checkCond(n)
	}
	return nil
}

func checkCond(c *Cond) error {
	if c.Op == Search {
		if c.Value.Kind != VString && c.Value.Kind != VNumber {
			return errAt(c.Value.At, "search takes a string")
		}
		if c.Value.Kind == VNumber {
			c.Value = Value{Kind: VString, Str: c.Value.Str, At: c.Value.At}
		}
		if c.Field != "" {
			if k := Fields[c.Field]; k != KindText && k != KindError && k != KindMetaValue && k != KindMetaKey {
				return errAt(c.At, "search cannot look into %s", c.Field)
			}
		}
		return nil
	}
	kind := Fields[c.Field]
	switch c.Op {
	case Exists:
		return nil
	case Has:
		if kind != KindTags && kind != KindMetaKey {
			return errAt(c.At, "has applies to tags and metadata_key, not %s", c.Field)
		}
		if c.Value.Kind != VString {
			return errAt(c.Value.At, "has takes a string")
		}
		return nil
	case In:
		if c.Value.Kind != VList {
			return errAt(c.Value.At, "in takes a list such as [\"a\", \"b\"]")
		}
		if len(c.Value.List) == 0 {
			return errAt(c.Value.At, "in takes a non-empty list")
		}
		for i := range c.Value.List {
			if err := checkValue(c, kind, &c.Value.List[i]); err != nil {
				return err
			}
		}
		return nil
	case Gt, Gte, Lt, Lte:
		switch kind {
		case KindTime, KindNumber, KindDuration, KindFeedbackScore, KindMetaValue:
		default:
			return errAt(c.At, "%s cannot compare %s; it applies to times, numbers, latency, feedback_score and metadata_value", c.Op, c.Field)
		}
		if c.Value.Kind == VNull {
			return errAt(c.Value.At, "%s cannot compare with null", c.Op)
		}
	}
	if c.Value.Kind == VList {
		return errAt(c.Value.At, "%s takes a single value; use in for a list", c.Op)
	}
	return checkValue(c, kind, &c.Value)
}

func checkValue(c *Cond, kind Kind, v *Value) error {
	switch kind {
	case KindText, KindMetaKey, KindFeedbackKey, KindTags:
		if v.Kind == VNumber {
			// Ids and names compare as text: eq(name, 42) means "42".
			*v = Value{Kind: VString, Str: v.Str, At: v.At}
		}
		if v.Kind != VString && v.Kind != VNull {
			return errAt(v.At, "%s takes a string", c.Field)
		}
	case KindTime:
		switch v.Kind {
		case VNull:
		case VString:
			t, ok := ParseTime(v.Str)
			if !ok {
				return errAt(v.At, "%q is not a time (use RFC 3339, such as 2025-01-31T12:00:00Z)", v.Str)
			}
			v.Time = t
		case VNumber:
			// Epoch seconds.
			v.Time = time.UnixMicro(int64(v.Num * 1e6)).UTC()
		default:
			return errAt(v.At, "%s takes a time", c.Field)
		}
	case KindNumber, KindFeedbackScore:
		switch v.Kind {
		case VNumber, VNull:
		case VBool:
			if kind != KindFeedbackScore {
				return errAt(v.At, "%s takes a number", c.Field)
			}
			v.Num = 0
			if v.Bool {
				v.Num = 1
			}
			v.Kind = VNumber
		case VString:
			n, err := strconv.ParseFloat(strings.TrimSpace(v.Str), 64)
			if err != nil {
				return errAt(v.At, "%s takes a number, not %q", c.Field, v.Str)
			}
			v.Kind, v.Num = VNumber, n
		default:
			return errAt(v.At, "%s takes a number", c.Field)
		}
	case KindDuration:
		switch v.Kind {
		case VNumber:
			v.Dur = v.Num
		case VNull:
		case VString:
			d, ok := ParseDuration(v.Str)
			if !ok {
				return errAt(v.At, "%q is not a latency (use seconds, or a duration such as \"5s\", \"250ms\", \"2m\")", v.Str)
			}
			v.Dur = d
		default:
			return errAt(v.At, "latency takes a number of seconds or a duration such as \"5s\"")
		}
	case KindError:
		if v.Kind == VNumber {
			return errAt(v.At, "error takes null, true, false or a string")
		}
	case KindBool:
		switch v.Kind {
		case VBool:
		case VString:
			b, err := strconv.ParseBool(strings.ToLower(v.Str))
			if err != nil {
				return errAt(v.At, "%s takes true or false", c.Field)
			}
			*v = Value{Kind: VBool, Bool: b, At: v.At}
		case VNumber:
			*v = Value{Kind: VBool, Bool: v.Num != 0, At: v.At}
		default:
			return errAt(v.At, "%s takes true or false", c.Field)
		}
	case KindMetaValue:
		// Any scalar.
	}
	return nil
}

// ParseTime reads RFC 3339 times (with or without a zone, which is then
// UTC, and with any fraction), and plain dates.
func ParseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// ParseDuration reads a latency in seconds: a bare number, or a number with
// a unit (ms, s, m, h).
func ParseDuration(s string) (float64, bool) {
	s = strings.TrimSpace(strings.ToLower(s))
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "ms"):
		s, mult = strings.TrimSuffix(s, "ms"), 0.001
	case strings.HasSuffix(s, "s"):
		s = strings.TrimSuffix(s, "s")
	case strings.HasSuffix(s, "m"):
		s, mult = strings.TrimSuffix(s, "m"), 60
	case strings.HasSuffix(s, "h"):
		s, mult = strings.TrimSuffix(s, "h"), 3600
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n != n {
		return 0, false
	}
	return n * mult, true
}
