package platformtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// The run filter language, the subset the tests use: and, or, not, eq,
// neq, in, has over the fields id, name, run_type, trace_id, status,
// tags, error and metadata_key / metadata_value. A metadata predicate
// speaks of one metadata entry; a run matches when some entry (or the run
// alone, without metadata predicates) satisfies the whole expression, as
// the platform's thread filter needs.

type expr struct {
	fn   string
	args []any // *expr, or a literal: string, float64, nil, []any, or a field name (field)
}

type field string

type parser struct {
	s   string
	pos int
}

func parseFilter(s string) (*expr, error) {
	p := &parser{s: s}
	e, err := p.call()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, fmt.Errorf("unexpected %q at %d", p.s[p.pos:], p.pos)
	}
	return e, nil
}

func (p *parser) space() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *parser) ident() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) && (p.s[p.pos] == '_' || unicode.IsLetter(rune(p.s[p.pos])) || unicode.IsDigit(rune(p.s[p.pos]))) {
		p.pos++
	}
	return p.s[start:p.pos]
}

func (p *parser) expect(c byte) error {
	p.space()
	if p.pos >= len(p.s) || p.s[p.pos] != c {
		return fmt.Errorf("expected %q at %d", c, p.pos)
	}
	p.pos++
	return nil
}

var functions = map[string]bool{"and": true, "or": true, "not": true, "eq": true, "neq": true, "in": true, "has": true}
var fields = map[string]bool{"id": true, "name": true, "run_type": true, "trace_id": true, "status": true, "tags": true, "error": true, "metadata_key": true, "metadata_value": true}

func (p *parser) call() (*expr, error) {
	name := p.ident()
	if !functions[name] {
		return nil, fmt.Errorf("unknown function %q", name)
	}
	if err := p.expect('('); err != nil {
		return nil, err
	}
	e := &expr{fn: name}
	for {
		p.space()
		if p.pos < len(p.s) && p.s[p.pos] == ')' {
			p.pos++
			return e, nil
		}
		if len(e.args) > 0 {
			if err := p.expect(','); err != nil {
				return nil, err
			}
		}
		a, err := p.arg()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, a)
	}
}

func (p *parser) arg() (any, error) {
	p.space()
	if p.pos >= len(p.s) {
		return nil, fmt.Errorf("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '"' || c == '[' || c == '-' || (c >= '0' && c <= '9'):
		d := json.NewDecoder(strings.NewReader(p.s[p.pos:]))
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("bad literal at %d: %v", p.pos, err)
		}
		p.pos += int(d.InputOffset())
		return v, nil
	}
	save := p.pos
	id := p.ident()
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos = save
		return p.call()
	}
	switch id {
	case "null":
		return nil, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	if !fields[id] {
		return nil, fmt.Errorf("unknown field %q", id)
	}
	return field(id), nil
}

// matchRun reports whether run satisfies e for some metadata entry.
func matchRun(e *expr, run map[string]any) bool {
	meta, _ := dig(run, "extra", "metadata").(map[string]any)
	if len(meta) == 0 {
		return e.eval(run, nil)
	}
	for k, v := range meta {
		if e.eval(run, &[2]any{k, v}) {
			return true
		}
	}
	return false
}

func (e *expr) eval(run map[string]any, entry *[2]any) bool {
	sub := func(i int) bool {
		x, ok := e.args[i].(*expr)
		return ok && x.eval(run, entry)
	}
	switch e.fn {
	case "and":
		for i := range e.args {
			if !sub(i) {
				return false
			}
		}
		return true
	case "or":
		for i := range e.args {
			if sub(i) {
				return true
			}
		}
		return false
	case "not":
		return len(e.args) == 1 && !sub(0)
	}
	if len(e.args) != 2 {
		return false
	}
	f, ok := e.args[0].(field)
	if !ok {
		return false
	}
	val, present := fieldValue(run, entry, f)
	if !present {
		return false
	}
	switch e.fn {
	case "eq":
		return same(val, e.args[1])
	case "neq":
		return !same(val, e.args[1])
	case "in":
		list, _ := e.args[1].([]any)
		for _, x := range list {
			if same(val, x) {
				return true
			}
		}
		return false
	case "has":
		list, _ := val.([]any)
		for _, x := range list {
			if same(x, e.args[1]) {
				return true
			}
		}
	}
	return false
}

func fieldValue(run map[string]any, entry *[2]any, f field) (any, bool) {
	switch f {
	case "metadata_key":
		if entry == nil {
			return nil, false
		}
		return entry[0], true
	case "metadata_value":
		if entry == nil {
			return nil, false
		}
		return entry[1], true
	case "error":
		if e, _ := run["error"].(string); e != "" {
			return e, true
		}
		return nil, true
	}
	v, ok := run[string(f)]
	return v, ok || f == "tags"
}

func same(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func dig(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
