package datasets

import (
	"errors"
	"strings"
	"testing"
)

var sampleDoc = map[string]any{
	"id": "e1", "dataset_id": "d1", "created_at": "2026-01-02T03:04:05Z", "modified_at": "2026-01-02T03:04:05Z",
	"metadata": map[string]any{"foo": "bar", "n": float64(2), "tags": []any{"x", "y"}, "nested": map[string]any{"k": true}},
	"inputs":   map[string]any{"q": "What is up?"},
}

func TestFilterSemantics(t *testing.T) {
	for f, want := range map[string]bool{
		`exists(metadata, "foo")`:                      true,
		`exists(metadata.nested.k)`:                    true,
		`exists(metadata, "nope")`:                     false,
		`has(metadata, '{"foo": "bar"}')`:              true,
		`has(metadata, '{"foo": "baz"}')`:              false,
		`has("metadata", '{"nested": {"k": true}}')`:   true,
		`has(metadata.tags, "y")`:                      true,
		`eq(metadata.n, 2)`:                            true,
		`eq(metadata.n, 2.0)`:                          true,
		`neq(metadata.missing, 1)`:                     true,
		`and(gt(metadata.n, 1), lt(metadata.n, 3))`:    true,
		`or(eq(metadata.foo, "x"), not(eq(id, "e2")))`: true,
		`in(metadata.foo, ["a", "bar"])`:               true,
		`search(inputs.q, "WHAT")`:                     true,
		`lte(created_at, "2026-01-02T03:04:05+00:00")`: true,
		`gt(created_at, "2026-01-03")`:                 false,
		`eq(metadata.foo, 'b\'ar')`:                    false,
		`EQ(metadata.foo, "bar")`:                      true,
		`  and( exists(metadata,"foo") , true_ok(x) )`: false, // unknown function: parse error below
	} {
		p, err := ParseFilter(f)
		if err != nil {
			if strings.Contains(f, "true_ok") {
				continue
			}
			t.Errorf("%s: %v", f, err)
			continue
		}
		if got := p.Match(sampleDoc); got != want {
			t.Errorf("%s: %v, want %v", f, got, want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	for f, pos := range map[string]int{
		`eq(`:                      3,
		`eq(metadata.foo "x")`:     16,
		`and(eq(id, "a")`:          15,
		`bogus(id, "a")`:           0,
		`eq(nothing, 1)`:           3,
		`eq(id.sub, 1)`:            3,
		`exists(metadata)`:         0,
		`has(metadata, '{bad')`:    14,
		`has(metadata, "string")`:  14,
		`eq(id, "a") trailing`:     12,
		`eq(id, "unterminated)`:    7,
		`eq(id, 1e999)`:            7,
		`eq(id, bare)`:             7,
		`in(id, "x")`:              7,
		`gt(id, true)`:             7,
		`eq(metadata..x, 1)`:       12,
		"eq(id, \"a\x01\")":        9,
		strings.Repeat("not(", 40): 132,
	} {
		_, err := ParseFilter(f)
		var fe *FilterError
		if !errors.As(err, &fe) {
			t.Errorf("%q: %v, want a FilterError", f, err)
			continue
		}
		if fe.Pos != pos {
			t.Errorf("%q: position %d (%s), want %d", f, fe.Pos, fe.Msg, pos)
		}
	}
	if p, err := ParseFilter("  "); p != nil || err != nil {
		t.Fatal("a blank filter is no filter")
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`exists(metadata, "baz")`, `has("metadata", '{"foo": "bar"}')`,
		`and(not(has(metadata, '{"foo": "bar"}')), exists(metadata, "baz"))`,
		`or(eq(metadata.n, 1), in(inputs.q, ["a", 2, null, true, [1]]))`, `search(inputs.q, "x")`,
		`gte(created_at, "2026-01-01T00:00:00Z")`, `eq(id, 'it\'s')`, `eq(`, `))`, `not(not(not(`, "eq(id, \"\\u00e9\")",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseFilter(s)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) || fe.Pos < 0 || fe.Pos > len(s) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		p.Match(sampleDoc)
		p.Match(map[string]any{})
	})
}
