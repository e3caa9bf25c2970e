package fql_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing/fql"
)

func mustParse(t *testing.T, s string) fql.Expr {
	t.Helper()
	e, err := fql.Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return e
}

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{
		`eq(name, "ChatOpenAI")`,
		`and(eq(name, "ChatOpenAI"), eq(run_type, "llm"))`,
		`gt(latency, "5s")`,
		`neq(error, null)`,
		`has(tags, "beta")`,
		`search("image classification")`,
		`and(eq(feedback_key, "user_score"), eq(feedback_score, 1))`,
		`and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "t-1"))`,
		`and(gt(start_time, "2023-07-15T12:34:56Z"), or(neq(error, null), and(eq(feedback_key, "Correctness"), eq(feedback_score, 0))))`,
		`not(exists(end_time))`,
		`search(inputs, "hello")`,
		`lte(total_tokens, 5000)`,
		`eq(is_root, true)`,
	} {
		e := mustParse(t, s)
		again := mustParse(t, fql.String(e))
		if fql.String(again) != fql.String(e) {
			t.Errorf("round trip of %q: %q then %q", s, fql.String(e), fql.String(again))
		}
	}
	if e, err := fql.Parse("   "); e != nil || err != nil {
		t.Errorf("blank filter: %v %v", e, err)
	}
	// Single quotes, escapes, case-insensitive operators.
	e := mustParse(t, `AND(Eq(name, 'it\'s'), eq(name, "a\"b\u00e9"))`)
	if got := fql.String(e); got != `and(eq(name, "it's"), eq(name, "a\"bé"))` {
		t.Errorf("got %s", got)
	}
}

func TestSyntaxErrorPositions(t *testing.T) {
	for _, tc := range []struct {
		src string
		pos int
		msg string
	}{
		{`eq(name, "x"`, 12, `expected ")"`},
		{`eq(name "x")`, 8, `expected "," and a value`},
		{`foo(name, "x")`, 0, `unknown operator "foo"`},
		{`eq(nme, "x")`, 3, `unknown field "nme"`},
		{`and(eq(name, "x"),)`, 18, "expected an operator"},
		{`eq(name, "x") extra`, 14, "unexpected identifier"},
		{`eq(name, "unterminated)`, 9, "unterminated string"},
		{`gt(latency, "fast")`, 12, "is not a latency"},
		{`gt(name, "a")`, 0, "gt cannot compare name"},
		{`in(run_type, "llm")`, 13, "in takes a list"},
		{`in(run_type, [])`, 13, "non-empty list"},
		{`has(name, "x")`, 0, "has applies to tags"},
		{`not(eq(name, "a"), eq(name, "b"))`, 0, "not takes exactly one argument"},
		{`eq(start_time, "yesterday")`, 15, "is not a time"},
		{`eq(name, [["a"]])`, 10, "lists cannot be nested"},
		{`eq(name, "a") $`, 14, "unexpected"},
		{`eq(name, @)`, 9, "unexpected character"},
		{`eq(name, 1.2.3)`, 9, "invalid number"},
		{`eq(total_tokens, "many")`, 17, "takes a number"},
		{`eq(name, x)`, 9, "expected a value"},
		{`(`, 0, "expected an operator"},
		{`eq(`, 3, "expected a field name"},
		{`eq(name, "a\q")`, 11, "invalid escape"},
		{`gt(error, null)`, 0, "gt cannot compare error"},
	} {
		_, err := fql.Parse(tc.src)
		var fe *fql.Error
		if !errors.As(err, &fe) {
			t.Errorf("%q: want a position error, got %v", tc.src, err)
			continue
		}
		if fe.Pos != tc.pos || !strings.Contains(fe.Msg, tc.msg) {
			t.Errorf("%q: got position %d %q, want %d containing %q", tc.src, fe.Pos, fe.Msg, tc.pos, tc.msg)
		}
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("not(", fql.MaxDepth+2) + `eq(name, "a")` + strings.Repeat(")", fql.MaxDepth+2)
	if _, err := fql.Parse(deep); err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("deep: %v", err)
	}
	if _, err := fql.Parse(strings.Repeat(" ", fql.MaxLength+1)); err != nil {
		t.Errorf("blank long: %v", err)
	}
	long := `eq(name, "` + strings.Repeat("a", fql.MaxLength) + `")`
	if _, err := fql.Parse(long); err == nil {
		t.Error("an over-long filter parsed")
	}
	wide := "or(" + strings.Repeat(`eq(name, "a"), `, fql.MaxNodes) + `eq(name, "a"))`
	if _, err := fql.Parse(wide); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("wide: %v", err)
	}
}

func base() *fql.Row {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return &fql.Row{
		ID: "r1", Name: "ChatOpenAI", RunType: "llm", Status: "success", TraceID: "t1", ThreadID: "th-1",
		ParentRunID: "p1", ReferenceExampleID: "ex1", SessionID: "s1",
		StartTime: start, EndTime: start.Add(6 * time.Second),
		TotalTokens: 120, PromptTokens: 100, CompletionTokens: 20, TotalCost: 0.5, ExecutionOrder: 2,
		Tags:     []string{"beta", "prod"},
		Metadata: map[string]any{"thread_id": "th-1", "user": "alice", "n": float64(3), "flag": true, "nothing": nil, "obj": map[string]any{"a": 1}},
		Feedback: []fql.Feedback{{Key: "user_score", Score: 1, HasScore: true}, {Key: "correctness", Score: 0, HasScore: true}, {Key: "note"}},
		Inputs:   func() string { return `{"question":"image classification please"}` },
		Outputs:  func() string { return `{"answer":"a cat"}` },
	}
}

// Every operator over every field kind.
func TestEval(t *testing.T) {
	errRow := base()
	errRow.HasError, errRow.Error, errRow.EndTime, errRow.Tags, errRow.IsRoot = true, "ValueError: boom", time.Time{}, nil, true
	for _, tc := range []struct {
		filter    string
		base, err bool
	}{
		{`eq(id, "r1")`, true, true},
		{`neq(id, "r1")`, false, false},
		{`in(run_type, ["chain", "llm"])`, true, true},
		{`eq(name, "ChatOpenAI")`, true, true},
		{`eq(name, null)`, false, false},
		{`exists(name)`, true, true},
		{`eq(thread_id, "th-1")`, true, true},
		{`eq(trace_id, "t1")`, true, true},
		{`eq(parent_run_id, "p1")`, true, true},
		{`eq(reference_example_id, "ex1")`, true, true},
		{`eq(session_id, "s1")`, true, true},
		{`eq(status, "success")`, true, true},
		{`search(name, "openai")`, true, true},
		{`gt(latency, "5s")`, true, false},
		{`gt(latency, 7)`, false, false},
		{`lte(latency, "6000ms")`, true, false},
		{`lt(latency, "1m")`, true, false},
		{`exists(latency)`, true, false},
		{`eq(latency, null)`, false, true},
		{`gte(total_tokens, 120)`, true, true},
		{`gt(total_tokens, 120)`, false, false},
		{`lt(prompt_tokens, 101)`, true, true},
		{`eq(completion_tokens, 20)`, true, true},
		{`in(total_tokens, [1, 120])`, true, true},
		{`gt(total_cost, 0.1)`, true, true},
		{`eq(execution_order, 2)`, true, true},
		{`gt(start_time, "2025-03-01T11:00:00Z")`, true, true},
		{`lt(start_time, "2025-03-01")`, false, false},
		{`eq(start_time, "2025-03-01T12:00:00Z")`, true, true},
		{`gte(end_time, "2025-03-01T12:00:06Z")`, true, false},
		{`eq(end_time, null)`, false, true},
		{`exists(end_time)`, true, false},
		{`eq(error, null)`, true, false},
		{`neq(error, null)`, false, true},
		{`eq(error, true)`, false, true},
		{`eq(error, false)`, true, false},
		{`eq(error, "ValueError: boom")`, false, true},
		{`search(error, "boom")`, false, true},
		{`exists(error)`, false, true},
		{`has(tags, "beta")`, true, false},
		{`eq(tags, "prod")`, true, false},
		{`neq(tags, "beta")`, false, true},
		{`in(tags, ["x", "prod"])`, true, false},
		{`exists(tags)`, true, false},
		{`eq(tags, null)`, false, true},
		{`eq(is_root, true)`, false, true},
		{`neq(is_root, true)`, true, false},
		{`and(eq(metadata_key, "user"), eq(metadata_value, "alice"))`, true, true},
		// The pair rule: key and value of one pair.
		{`and(eq(metadata_key, "user"), eq(metadata_value, "th-1"))`, false, false},
		{`and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "th-1"))`, true, true},
		{`and(eq(metadata_key, "n"), gt(metadata_value, 2))`, true, true},
		{`and(eq(metadata_key, "n"), eq(metadata_value, "3"))`, true, true},
		{`and(eq(metadata_key, "flag"), eq(metadata_value, true))`, true, true},
		{`and(eq(metadata_key, "nothing"), eq(metadata_value, null))`, true, true},
		{`and(eq(metadata_key, "obj"), eq(metadata_value, "{\"a\":1}"))`, true, true},
		{`has(metadata_key, "user")`, true, true},
		{`eq(metadata_value, "alice")`, true, true},
		{`search(metadata_value, "ALI")`, true, true},
		{`neq(metadata_key, "user")`, true, true},
		{`and(eq(feedback_key, "user_score"), eq(feedback_score, 1))`, true, true},
		{`and(eq(feedback_key, "correctness"), eq(feedback_score, 1))`, false, false},
		{`and(eq(feedback_key, "correctness"), lt(feedback_score, 0.5))`, true, true},
		{`and(eq(feedback_key, "note"), eq(feedback_score, null))`, true, true},
		{`eq(feedback_key, "user_score")`, true, true},
		{`gte(feedback_score, true)`, true, true},
		{`search("image classification")`, true, true},
		{`search("a cat")`, true, true},
		{`search("beta")`, true, false},
		{`search("nowhere")`, false, false},
		{`search(inputs, "image")`, true, true},
		{`search(outputs, "image")`, false, false},
		{`or(eq(name, "x"), eq(run_type, "llm"))`, true, true},
		{`or(eq(name, "x"), eq(run_type, "y"))`, false, false},
		{`not(eq(run_type, "llm"))`, false, false},
		{`and(eq(run_type, "llm"), has(tags, "beta"), gt(latency, 1))`, true, false},
	} {
		p := fql.Compile(mustParse(t, tc.filter))
		if got := p(base()); got != tc.base {
			t.Errorf("%s on the base row: %v, want %v", tc.filter, got, tc.base)
		}
		if got := p(errRow); got != tc.err {
			t.Errorf("%s on the error row: %v, want %v", tc.filter, got, tc.err)
		}
	}
	if !fql.Compile(nil)(base()) {
		t.Error("a nil filter must match")
	}
}

func TestConjuncts(t *testing.T) {
	e := mustParse(t, `and(eq(name, "a"), and(eq(run_type, "llm"), has(tags, "x")), or(eq(name, "b"), eq(name, "c")))`)
	if n := len(fql.Conjuncts(e)); n != 4 {
		t.Errorf("conjuncts: %d", n)
	}
	if n := len(fql.Conjuncts(mustParse(t, `eq(name, "a")`))); n != 1 {
		t.Errorf("single: %d", n)
	}
}

func TestDurationAndTime(t *testing.T) {
	for s, want := range map[string]float64{"5s": 5, "250ms": 0.25, "2m": 120, "1h": 3600, "1.5": 1.5} {
		if d, ok := fql.ParseDuration(s); !ok || d != want {
			t.Errorf("ParseDuration(%q) = %v %v", s, d, ok)
		}
	}
	if _, ok := fql.ParseDuration("NaN"); ok {
		t.Error("NaN is not a duration")
	}
	for _, s := range []string{"2025-01-01T00:00:00Z", "2025-01-01T00:00:00.123456", "2025-01-01 00:00:00", "2025-01-01", "2025-01-01T00:00:00+02:00"} {
		if _, ok := fql.ParseTime(s); !ok {
			t.Errorf("ParseTime(%q) failed", s)
		}
	}
}

// FuzzParse checks that no input panics, that errors carry a position
// inside the input, and that accepted filters round-trip. Seeds are in
// testdata/fuzz/FuzzParse as well.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`and(eq(name, "ChatOpenAI"), eq(run_type, "llm"))`,
		`and(in(metadata_key, ["session_id","thread_id"]), eq(metadata_value, "x"))`,
		`gt(latency, "5s")`, `search("x")`, `not(exists(error))`, `eq(name, 'a\'b')`,
		`in(total_tokens, [1, 2.5e3, -4])`, `eq(`, `and(`, `"`, `eq(name, "\u00e9")`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := fql.Parse(s)
		if err != nil {
			var fe *fql.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error without a position: %v", err)
			}
			if fe.Pos < 0 || fe.Pos > len(s) {
				t.Fatalf("position %d outside the input of %d bytes", fe.Pos, len(s))
			}
			return
		}
		if e == nil {
			return
		}
		out := fql.String(e)
		again, err := fql.Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", out, s, err)
		}
		if fql.String(again) != out {
			t.Fatalf("unstable rendering: %q then %q", out, fql.String(again))
		}
		fql.Compile(e)(base())
	})
}

// Canonical must give equal texts to every value and literal eq() matches,
// or an index read would miss runs.
func TestCanonicalAgreesWithEq(t *testing.T) {
	values := []any{"3", "3.0", float64(3), "abc", true, "true", false, map[string]any{"a": float64(1)}, []any{"x"}, "1e3", float64(1000), ""}
	literals := []string{`"3"`, `3`, `"3.0"`, `"abc"`, `true`, `"true"`, `false`, `"{\"a\":1}"`, `"[\"x\"]"`, `1000`, `"1e3"`, `""`}
	for _, v := range values {
		for _, lit := range literals {
			e := mustParse(t, `and(eq(metadata_key, "k"), eq(metadata_value, `+lit+`))`)
			match := fql.Compile(e)(&fql.Row{Metadata: map[string]any{"k": v}})
			if !match {
				continue
			}
			cv, ok1 := fql.Canonical(v)
			c := fql.Conjuncts(e)[1].(*fql.Cond)
			cl, ok2 := fql.CanonicalLiteral(c.Value)
			if !ok1 || !ok2 || cv != cl {
				t.Errorf("value %#v matches literal %s but files under %q, the literal under %q", v, lit, cv, cl)
			}
		}
	}
}
