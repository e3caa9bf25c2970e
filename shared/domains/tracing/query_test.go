package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// fixture is a small project with runs of every kind the filters tell
// apart.
type fixture struct {
	e                      *env
	project, other         string
	A, A1, A2, B, B1, C, X string
	t                      map[string]time.Time
	ex1                    string
}

func seedFixture(t *testing.T) *fixture {
	e := newEnv(t, envOptions{})
	f := &fixture{e: e, A: newID(), A1: newID(), A2: newID(), B: newID(), B1: newID(), C: newID(), X: newID(), ex1: newID(), t: map[string]time.Time{}}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	for i, id := range []string{f.A, f.A1, f.A2, f.B, f.B1, f.C} {
		f.t[id] = at(i)
	}
	run := func(id, name, typ, parent, dotted string, latency time.Duration, extra map[string]any) map[string]any {
		r := map[string]any{"id": id, "name": name, "run_type": typ, "start_time": ts(f.t[id]), "session_name": "q", "dotted_order": dotted,
			"inputs": map[string]any{"q": name}}
		if parent != "" {
			r["parent_run_id"] = parent
		}
		if latency > 0 {
			r["end_time"] = ts(f.t[id].Add(latency))
			r["outputs"] = map[string]any{"a": "ok"}
		}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	md := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return map[string]any{"metadata": m}
	}
	dA := seg(f.t[f.A], f.A)
	dA1 := dA + "." + seg(f.t[f.A1], f.A1)
	dB := seg(f.t[f.B], f.B)
	posts := []any{
		run(f.A, "agent", "chain", "", dA, 10*time.Second, map[string]any{"tags": []string{"prod"}, "extra": md("thread_id", "th1", "user", "alice"), "reference_example_id": f.ex1}),
		run(f.A1, "ChatOpenAI", "llm", f.A, dA1, 2*time.Second, map[string]any{"tags": []string{"beta"}, "extra": md("thread_id", "th1"),
			"outputs": map[string]any{"usage_metadata": map[string]any{"input_tokens": 60, "output_tokens": 40}}}),
		run(f.A2, "search", "tool", f.A1, dA1+"."+seg(f.t[f.A2], f.A2), 500*time.Millisecond, map[string]any{"error": "ValueError: boom"}),
		run(f.B, "agent", "chain", "", dB, time.Second, map[string]any{"tags": []string{"beta", "prod"}, "extra": md("thread_id", "th2", "user", "bob")}),
		run(f.B1, "ChatOpenAI", "llm", f.B, dB+"."+seg(f.t[f.B1], f.B1), 6*time.Second, map[string]any{"extra": md("conversation_id", "c9"),
			"inputs": map[string]any{"q": "image classification"}, "total_tokens": 300}),
		run(f.C, "ChatAnthropic", "llm", "", seg(f.t[f.C], f.C), 0, map[string]any{"extra": md("session_id", "th1")}),
	}
	e.must(202, e.do("POST", "/runs/batch", map[string]any{"post": posts}))
	e.must(202, e.do("POST", "/runs", map[string]any{"id": f.X, "name": "other", "run_type": "chain", "start_time": ts(base), "session_name": "q2"}))
	e.drain()
	f.project = e.project("q")["id"].(string)
	f.other = e.project("q2")["id"].(string)
	e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": f.A, "key": "user_score", "score": 1}))
	e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": f.C, "key": "correctness", "score": 0}))
	return f
}

func (f *fixture) names(ids []string) string {
	rev := map[string]string{f.A: "A", f.A1: "A1", f.A2: "A2", f.B: "B", f.B1: "B1", f.C: "C", f.X: "X"}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = rev[id]
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestQueryFilters(t *testing.T) {
	f := seedFixture(t)
	e := f.e
	for _, tc := range []struct {
		body map[string]any
		want string
		plan string
	}{
		{map[string]any{}, "A,A1,A2,B,B1,C", "project"},
		{map[string]any{"filter": `eq(name, "ChatOpenAI")`}, "A1,B1", "name"},
		{map[string]any{"filter": `neq(name, "agent")`}, "A1,A2,B1,C", "project"},
		{map[string]any{"filter": `gt(latency, "5s")`}, "A,B1", "project"},
		{map[string]any{"filter": `gte(latency, 6)`}, "A,B1", ""},
		{map[string]any{"filter": `lt(latency, 1)`}, "A2", ""},
		{map[string]any{"filter": `lte(latency, "1s")`}, "A2,B", ""},
		{map[string]any{"filter": `eq(run_type, "llm")`}, "A1,B1,C", "run_type"},
		{map[string]any{"filter": `in(run_type, ["tool", "llm"])`}, "A1,A2,B1,C", "run_type"},
		{map[string]any{"filter": `gt(total_tokens, 150)`}, "B1", ""},
		{map[string]any{"filter": `gte(total_tokens, 100)`}, "A1,B1", ""},
		{map[string]any{"filter": `neq(error, null)`}, "A2", "error"},
		{map[string]any{"filter": `eq(error, null)`}, "A,A1,B,B1,C", ""},
		{map[string]any{"filter": `has(tags, "beta")`}, "A1,B", "tag"},
		{map[string]any{"filter": `search("image classification")`}, "B1", ""},
		{map[string]any{"filter": `exists(end_time)`}, "A,A1,A2,B,B1", ""},
		{map[string]any{"filter": `not(exists(end_time))`}, "C", ""},
		{map[string]any{"filter": `and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "th1"))`}, "A,A1,C", "metadata"},
		{map[string]any{"filter": `and(eq(metadata_key, "user"), eq(metadata_value, "bob"))`}, "B", "metadata"},
		{map[string]any{"filter": `and(eq(metadata_key, "user"), eq(metadata_value, "th1"))`}, "", "metadata"},
		{map[string]any{"filter": `and(eq(feedback_key, "user_score"), eq(feedback_score, 1))`}, "A", "feedback"},
		{map[string]any{"filter": `eq(feedback_key, "correctness")`}, "C", "feedback"},
		{map[string]any{"filter": fmt.Sprintf(`eq(id, "%s")`, f.A)}, "A", "id"},
		{map[string]any{"filter": fmt.Sprintf(`in(id, ["%s", "%s"])`, f.A, f.B)}, "A,B", "id"},
		{map[string]any{"filter": fmt.Sprintf(`gt(start_time, "%s")`, ts(f.t[f.B]))}, "B1,C", "project"},
		{map[string]any{"filter": fmt.Sprintf(`lt(start_time, "%s")`, ts(f.t[f.A1]))}, "A", "project"},
		{map[string]any{"filter": `eq(thread_id, "th1")`}, "A,A1,C", "thread"},
		{map[string]any{"filter": `or(eq(name, "search"), has(tags, "prod"))`}, "A,A2,B", "or"},
		{map[string]any{"filter": `eq(is_root, true)`}, "A,B,C", "root"},
		{map[string]any{"filter": `and(eq(run_type, "llm"), eq(metadata_key, "thread_id"), eq(metadata_value, "th1"))`}, "A1", "metadata"},
		{map[string]any{"run_type": "llm"}, "A1,B1,C", "run_type"},
		{map[string]any{"error": true}, "A2", "error"},
		{map[string]any{"error": false}, "A,A1,B,B1,C", "project"},
		{map[string]any{"is_root": true}, "A,B,C", "root"},
		{map[string]any{"is_root": false}, "A1,A2,B1", "project"},
		{map[string]any{"trace": f.A}, "A,A1,A2", "trace"},
		{map[string]any{"parent_run": f.A}, "A1", "parent"},
		{map[string]any{"reference_example": []string{f.ex1}}, "A", "reference_example"},
		{map[string]any{"id": []string{f.A1}}, "A1", "id"},
		{map[string]any{"start_time": ts(f.t[f.B])}, "B,B1,C", "project"},
		{map[string]any{"execution_order": 1}, "A,B,C", "root"},
		{map[string]any{"query": "image"}, "B1", ""},
		{map[string]any{"filter": `eq(run_type, "llm")`, "trace_filter": `and(eq(feedback_key, "user_score"), eq(feedback_score, 1))`}, "A1", ""},
		{map[string]any{"is_root": true, "tree_filter": `neq(error, null)`}, "A", "root"},
		{map[string]any{"is_root": true, "tree_filter": `eq(name, "ChatOpenAI")`}, "A,B", "root"},
	} {
		body := map[string]any{"session": []string{f.project}}
		for k, v := range tc.body {
			body[k] = v
		}
		runs, _ := e.query(body)
		if got := f.names(ids(runs)); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.body, got, tc.want)
		}
		_, plan, _, err := e.svc.QueryCost(context.Background(), e.ws, body)
		if err != nil {
			t.Errorf("%v: %v", tc.body, err)
		}
		if tc.plan != "" && plan != tc.plan {
			t.Errorf("%v: plan %q, want %q", tc.body, plan, tc.plan)
		}
	}
	// Without a session: trace, ids and examples are workspace-wide.
	runs, _ := e.query(map[string]any{"trace": f.B})
	if f.names(ids(runs)) != "B,B1" {
		t.Errorf("trace without session: %s", f.names(ids(runs)))
	}
	runs, _ = e.query(map[string]any{"session": []string{f.other}})
	if f.names(ids(runs)) != "X" {
		t.Errorf("other project: %s", f.names(ids(runs)))
	}
	runs, _ = e.query(map[string]any{"session": []string{f.project, f.other}, "filter": `eq(name, "other")`})
	if f.names(ids(runs)) != "X" {
		t.Errorf("two projects: %s", f.names(ids(runs)))
	}
}

func TestQueryOrderPagingSelect(t *testing.T) {
	f := seedFixture(t)
	e := f.e
	// Default order: newest first.
	runs, cur := e.query(map[string]any{"session": []string{f.project}})
	if len(runs) != 6 || runs[0]["id"] != f.C || runs[5]["id"] != f.A || cur["next"] != nil {
		t.Fatalf("order: %v next %v", f.names(ids(runs)), cur)
	}
	for _, order := range []string{"desc", "asc"} {
		var all []string
		body := map[string]any{"session": []string{f.project}, "limit": 2, "order": order}
		for page := 0; ; page++ {
			runs, cur := e.query(body)
			all = append(all, ids(runs)...)
			if cur["next"] == nil {
				break
			}
			body["cursor"] = cur["next"]
			if page > 5 {
				t.Fatal("paging does not end")
			}
		}
		if len(all) != 6 {
			t.Fatalf("%s pages: %d runs", order, len(all))
		}
		if order == "asc" && all[0] != f.A || order == "desc" && all[0] != f.C {
			t.Errorf("%s: first %s", order, f.names(all[:1]))
		}
		seen := map[string]bool{}
		for _, id := range all {
			if seen[id] {
				t.Errorf("%s: %s twice", order, f.names([]string{id}))
			}
			seen[id] = true
		}
	}
	// Paging with a filter and by id.
	body := map[string]any{"session": []string{f.project}, "limit": 1, "filter": `eq(run_type, "llm")`}
	n := 0
	for {
		runs, cur := e.query(body)
		n += len(runs)
		if cur["next"] == nil {
			break
		}
		body["cursor"] = cur["next"]
	}
	if n != 3 {
		t.Errorf("filtered pages: %d", n)
	}
	body = map[string]any{"id": []string{f.A, f.B, f.C}, "limit": 2}
	runs, cur = e.query(body)
	if len(runs) != 2 || cur["next"] == nil {
		t.Fatalf("ids page: %d %v", len(runs), cur)
	}
	body["cursor"] = cur["next"]
	runs, _ = e.query(body)
	if len(runs) != 1 || runs[0]["id"] != f.A {
		t.Errorf("ids page 2: %v", f.names(ids(runs)))
	}
	// select keeps what was asked (and what the SDK models require).
	runs, _ = e.query(map[string]any{"session": []string{f.project}, "select": []string{"id", "thread_id", "feedback_stats"}, "filter": `eq(is_root, true)`})
	for _, r := range runs {
		if _, ok := r["inputs"]; ok {
			t.Errorf("inputs returned without being selected: %v", r)
		}
		for _, k := range []string{"id", "name", "run_type", "start_time", "trace_id", "thread_id"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%s missing: %v", k, r)
			}
		}
	}
	for _, r := range runs {
		if r["id"] == f.A {
			fs := r["feedback_stats"].(map[string]any)["user_score"].(map[string]any)
			if fs["n"] != float64(1) || fs["avg"] != float64(1) {
				t.Errorf("feedback_stats: %v", fs)
			}
		}
	}
	// The default select has the large fields.
	runs, _ = e.query(map[string]any{"id": []string{f.B1}})
	if runs[0]["inputs"].(map[string]any)["q"] != "image classification" || runs[0]["outputs"] == nil {
		t.Errorf("large fields: %v", runs[0])
	}
}

func TestQueryErrors(t *testing.T) {
	f := seedFixture(t)
	e := f.e
	r := e.must(422, e.do("POST", "/runs/query", map[string]any{"session": []string{f.project}, "filter": `and(eq(name, "x"), foo(1))`}))
	var v struct {
		Detail []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		} `json:"detail"`
	}
	_ = json.Unmarshal(r.raw, &v)
	if len(v.Detail) != 1 || fmt.Sprint(v.Detail[0].Loc) != "[body filter 19]" || !strings.Contains(v.Detail[0].Msg, "position 19") {
		t.Errorf("syntax error: %s", r.raw)
	}
	for _, body := range []any{
		map[string]any{"session": []string{"not-a-uuid"}},
		map[string]any{"session": []string{f.project}, "cursor": "garbage"},
		map[string]any{"session": []string{f.project}, "trace_filter": "eq("},
		map[string]any{"session": []string{f.project}, "tree_filter": `gt(name, "a")`},
		map[string]any{"session": []string{f.project}, "run_type": "bogus"},
		map[string]any{"session": []string{f.project}, "order": "sideways"},
		map[string]any{"session": []string{f.project}, "limit": 0},
		map[string]any{"session": []string{f.project}, "start_time": "yesterday"},
		map[string]any{"session": 42},
		`[]`, `{"session": [`, `"x"`,
	} {
		if r := e.do("POST", "/runs/query", body); r.code != 422 {
			t.Errorf("%v: %d %s", body, r.code, r.raw)
		}
	}
	e.must(400, e.do("POST", "/runs/query", map[string]any{}))
	e.must(400, e.do("POST", "/runs/query", map[string]any{"filter": `eq(name, "x")`}))
	// An empty body is a query of nothing: 400 too, not a server error.
	e.must(400, e.do("POST", "/runs/query", nil))
}
