package threads_test

import (
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestCreateGetDefaults(t *testing.T) {
	e := newEnv(t)
	th := e.create(nil)
	id := str(th, "thread_id")
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("thread_id %q: %v", id, err)
	}
	if th["status"] != "idle" || th["values"] != nil || len(th["metadata"].(map[string]any)) != 0 {
		t.Fatalf("new thread: %v", th)
	}
	for _, f := range []string{"created_at", "updated_at", "state_updated_at"} {
		if _, err := time.Parse(time.RFC3339Nano, str(th, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if !reflect.DeepEqual(th["config"], map[string]any{}) || !reflect.DeepEqual(th["interrupts"], map[string]any{}) {
		t.Fatalf("config/interrupts: %v", th)
	}
	got := e.must(200, "GET", "/threads/"+id, nil).M()
	if !reflect.DeepEqual(got, th) {
		t.Fatalf("GET differs from create:\n%v\n%v", got, th)
	}
	if _, ok := got["ttl"]; ok {
		t.Fatal("ttl shown without include=ttl")
	}

	// A client-chosen id, if_exists raise (default) and do_nothing.
	mine := uuid.NewString()
	e.create(map[string]any{"thread_id": mine, "metadata": map[string]any{"a": 1}})
	r := e.do("POST", "/threads", map[string]any{"thread_id": mine})
	if r.Status != 409 || !strings.Contains(detail(r), mine) {
		t.Fatalf("duplicate: %d %s", r.Status, r.Raw)
	}
	same := e.create(map[string]any{"thread_id": strings.ToUpper(mine), "if_exists": "do_nothing", "metadata": map[string]any{"b": 2}})
	if !reflect.DeepEqual(same["metadata"], map[string]any{"a": float64(1)}) {
		t.Fatalf("do_nothing changed the thread: %v", same)
	}

	// Bad input changes nothing and answers 422 with a location.
	for name, body := range map[string]string{
		"bad id":        `{"thread_id": "nope"}`,
		"bad if_exists": `{"if_exists": "overwrite"}`,
		"unknown field": `{"colour": "red"}`,
		"metadata type": `{"metadata": [1]}`,
		"malformed":     `{"metadata": `,
		"ttl zero":      `{"ttl": 0}`,
		"ttl strategy":  `{"ttl": {"strategy": "archive", "ttl": 5}}`,
		"ttl 1e20":      `{"ttl": 1e20}`,
		"ttl 1e300":     `{"ttl": 1e300}`,
		"ttl 1e400":     `{"ttl": 1e400}`,
		"ttl obj 1e300": `{"ttl": {"strategy": "keep_latest", "ttl": 1e300}}`,
		"ttl 101 years": `{"ttl": 53084160}`,
		"null body":     `null`,
		"as_node":       `{"metadata": {"graph_id": "agent"}, "supersteps": [{"updates": [{"values": {}}]}]}`,
		"no updates":    `{"metadata": {"graph_id": "agent"}, "supersteps": [{}]}`,
		"graph_id type": `{"metadata": {"graph_id": 7}}`,
	} {
		r := e.do("POST", "/threads", body)
		if r.Status != 422 {
			t.Errorf("%s: status %d: %s", name, r.Status, r.Raw)
			continue
		}
		if _, ok := get(r.Body, "detail", 0, "loc").([]any); !ok {
			t.Errorf("%s: no loc: %s", name, r.Raw)
		}
	}
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(2) {
		t.Fatalf("count after bad input: %v", n)
	}
	if r := e.do("GET", "/threads/not-a-uuid", nil); r.Status != 422 {
		t.Fatalf("bad path id: %d", r.Status)
	}
	if r := e.do("GET", "/threads/"+uuid.NewString(), nil); r.Status != 404 || !strings.Contains(detail(r), "not found") {
		t.Fatalf("missing: %d %s", r.Status, r.Raw)
	}
}

func TestSuperstepsDocsExample(t *testing.T) {
	e := newEnv(t)
	th := e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": docsSupersteps()})
	id := str(th, "thread_id")
	msgs := get(th, "values", "messages").([]any)
	if len(msgs) != 2 || str(msgs[0], "type") != "human" || str(msgs[0], "content") != "hello" ||
		str(msgs[1], "type") != "ai" || str(msgs[1], "id") == "" || str(msgs[0], "id") == str(msgs[1], "id") {
		t.Fatalf("values: %v", th["values"])
	}
	if th["status"] != "idle" {
		t.Fatalf("status %v", th["status"])
	}

	st := e.must(200, "GET", "/threads/"+id+"/state", nil).M()
	wantKeys := []string{"checkpoint", "checkpoint_id", "created_at", "metadata", "next", "parent_checkpoint", "parent_checkpoint_id", "tasks", "values"}
	var keys []string
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, wantKeys) {
		t.Fatalf("state fields %v, want %v", keys, wantKeys)
	}
	md := st["metadata"].(map[string]any)
	if md["source"] != "update" || md["step"] != float64(1) || md["thread_id"] != id || md["graph_id"] != "agent" ||
		md["checkpoint_id"] != str(st, "parent_checkpoint_id") || !reflect.DeepEqual(md["parents"], map[string]any{}) {
		t.Fatalf("metadata: %v", md)
	}
	if w := get(md, "writes", "call_model", "messages", 0, "content"); w != "Hello! How can I assist you today?" {
		t.Fatalf("writes: %v", md["writes"])
	}
	if !reflect.DeepEqual(st["next"], []any{}) || !reflect.DeepEqual(st["tasks"], []any{}) {
		t.Fatalf("next/tasks: %v %v", st["next"], st["tasks"])
	}
	if str(st, "checkpoint", "thread_id") != id || str(st, "checkpoint", "checkpoint_ns") != "" ||
		str(st, "checkpoint", "checkpoint_id") != str(st, "checkpoint_id") {
		t.Fatalf("checkpoint: %v", st["checkpoint"])
	}
	if !reflect.DeepEqual(st["values"], th["values"]) {
		t.Fatalf("state values differ from thread values")
	}

	hist := e.must(200, "POST", "/threads/"+id+"/history", map[string]any{}).L()
	if len(hist) != 3 {
		t.Fatalf("history has %d states", len(hist))
	}
	steps, sources := []float64{}, []string{}
	for i, h := range hist {
		steps = append(steps, num(h, "metadata", "step"))
		sources = append(sources, str(h, "metadata", "source"))
		if i > 0 && str(hist[i-1], "parent_checkpoint_id") != str(h, "checkpoint_id") {
			t.Fatalf("state %d is not the parent of state %d", i, i-1)
		}
		if i > 0 && str(h, "checkpoint_id") >= str(hist[i-1], "checkpoint_id") {
			t.Fatalf("checkpoint ids not time-ordered: %s then %s", str(h, "checkpoint_id"), str(hist[i-1], "checkpoint_id"))
		}
	}
	if !reflect.DeepEqual(steps, []float64{1, 0, -1}) || !reflect.DeepEqual(sources, []string{"update", "update", "input"}) {
		t.Fatalf("steps %v sources %v", steps, sources)
	}
	input := hist[2]
	if !reflect.DeepEqual(input.(map[string]any)["next"], []any{"__start__"}) || str(input, "tasks", 0, "name") != "__start__" ||
		input.(map[string]any)["parent_checkpoint"] != nil || !reflect.DeepEqual(get(input, "metadata", "writes"), map[string]any{"__start__": map[string]any{}}) {
		t.Fatalf("input state: %v", input)
	}
	if _, ok := get(input, "metadata").(map[string]any)["checkpoint_id"]; ok {
		t.Fatal("the first checkpoint has no base checkpoint_id")
	}
	if n := len(get(hist[1], "values", "messages").([]any)); n != 1 {
		t.Fatalf("after __start__: %d messages", n)
	}

	// A single checkpoint by id, and history paging with every form of
	// before.
	mid := str(hist[1], "checkpoint_id")
	at := e.must(200, "GET", "/threads/"+id+"/state/"+mid, nil).M()
	if !reflect.DeepEqual(at, hist[1]) {
		t.Fatalf("state at %s differs from history", mid)
	}
	if r := e.do("GET", "/threads/"+id+"/state/"+uuid.NewString(), nil); r.Status != 404 {
		t.Fatalf("unknown checkpoint: %d", r.Status)
	}
	at2 := e.must(200, "POST", "/threads/"+id+"/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": mid}}).M()
	if !reflect.DeepEqual(at2, at) {
		t.Fatal("state/checkpoint differs")
	}
	for _, before := range []any{mid, map[string]any{"checkpoint_id": mid}, map[string]any{"configurable": map[string]any{"checkpoint_id": mid}}} {
		h := e.must(200, "POST", "/threads/"+id+"/history", map[string]any{"before": before}).L()
		if len(h) != 1 || str(h[0], "checkpoint_id") != str(hist[2], "checkpoint_id") {
			t.Fatalf("before %v: %v", before, h)
		}
	}
	h := e.must(200, "GET", "/threads/"+id+"/history?limit=2", nil).L()
	if len(h) != 2 || str(h[0], "checkpoint_id") != str(hist[0], "checkpoint_id") {
		t.Fatalf("GET history limit 2: %d", len(h))
	}
	h = e.must(200, "GET", "/threads/"+id+"/history?before="+str(hist[0], "checkpoint_id"), nil).L()
	if len(h) != 2 {
		t.Fatalf("GET history before: %d", len(h))
	}
	h = e.must(200, "POST", "/threads/"+id+"/history", map[string]any{"metadata": map[string]any{"source": "input"}}).L()
	if len(h) != 1 || num(h[0], "metadata", "step") != -1 {
		t.Fatalf("metadata filter: %v", h)
	}
	h = e.must(200, "POST", "/threads/"+id+"/history", map[string]any{"checkpoint": map[string]any{"checkpoint_ns": "sub"}}).L()
	if len(h) != 0 {
		t.Fatal("a subgraph namespace has no history")
	}
	for _, body := range []string{`{"limit": 0}`, `{"limit": 1001}`, `{"limit": "ten"}`, `{"before": "x"}`, `{"before": 5}`} {
		if r := e.do("POST", "/threads/"+id+"/history", body); r.Status != 422 {
			t.Errorf("history %s: %d", body, r.Status)
		}
	}
	if r := e.do("GET", "/threads/"+id+"/history?limit=0", nil); r.Status != 422 {
		t.Errorf("GET history limit=0: %d", r.Status)
	}
}

func TestStateWithoutGraph(t *testing.T) {
	e := newEnv(t)
	id := str(e.create(map[string]any{"metadata": map[string]any{"user": "u1"}}), "thread_id")
	st := e.must(200, "GET", "/threads/"+id+"/state", nil)
	want := `{"values":{},"next":[],"tasks":[],"metadata":null,"created_at":null,"checkpoint":null,"parent_checkpoint":null,"checkpoint_id":null,"parent_checkpoint_id":null}`
	if string(st.Raw) != want {
		t.Fatalf("state of a thread without graph:\n%s\nwant\n%s", st.Raw, want)
	}
	if h := e.must(200, "POST", "/threads/"+id+"/history", nil).L(); len(h) != 0 {
		t.Fatalf("history: %v", h)
	}
	r := e.do("POST", "/threads/"+id+"/state", map[string]any{"values": map[string]any{"a": 1}})
	if r.Status != 400 || !strings.Contains(detail(r), "no assigned graph ID") {
		t.Fatalf("update without graph: %d %s", r.Status, r.Raw)
	}
	r = e.do("POST", "/threads", map[string]any{"supersteps": docsSupersteps()})
	if r.Status != 400 || !strings.Contains(detail(r), "no assigned graph ID") {
		t.Fatalf("supersteps without graph: %d %s", r.Status, r.Raw)
	}
	// With a graph but no checkpoint yet.
	id2 := str(e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}}), "thread_id")
	if st := e.must(200, "GET", "/threads/"+id2+"/state", nil); string(st.Raw) != want {
		t.Fatalf("state before any checkpoint: %s", st.Raw)
	}
}

func TestMessagesReducer(t *testing.T) {
	e := newEnv(t)
	th := e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": []any{
		map[string]any{"updates": []any{map[string]any{"as_node": "__start__", "values": map[string]any{
			"messages": []any{
				map[string]any{"role": "user", "content": "hi", "id": "m1"},
				map[string]any{"role": "system", "content": "be brief"},
				"plain string",
				[]any{"assistant", "pair form"},
			},
			"topic": "greeting", "count": 1,
		}}}},
		map[string]any{"updates": []any{map[string]any{"as_node": "agent", "values": map[string]any{
			"messages": map[string]any{"type": "human", "content": "hi again", "id": "m1"},
			"topic":    "farewell",
		}}}},
		map[string]any{"updates": []any{
			map[string]any{"as_node": "tools", "values": map[string]any{"messages": []any{map[string]any{"type": "tool", "content": "42", "tool_call_id": "c1"}}}},
			map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "done", "id": "m9", "custom": true}}}},
		}},
	}})
	msgs := get(th, "values", "messages").([]any)
	var summary []string
	for _, m := range msgs {
		summary = append(summary, str(m, "type")+":"+fmt.Sprint(get(m, "content")))
		if str(m, "id") == "" {
			t.Fatalf("message without id: %v", m)
		}
	}
	want := []string{"human:hi again", "system:be brief", "human:plain string", "ai:pair form", "tool:42", "ai:done"}
	if !reflect.DeepEqual(summary, want) {
		t.Fatalf("messages %v, want %v", summary, want)
	}
	if get(th, "values", "topic") != "farewell" || get(th, "values", "count") != float64(1) {
		t.Fatalf("other keys: %v", th["values"])
	}
	ai := msgs[5]
	if !reflect.DeepEqual(get(ai, "tool_calls"), []any{}) || get(ai, "additional_kwargs", "custom") != true || str(msgs[4], "tool_call_id") != "c1" {
		t.Fatalf("normalized ai/tool: %v %v", ai, msgs[4])
	}
	id := str(th, "thread_id")

	// Removal by id, then of everything.
	res := e.must(200, "POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{map[string]any{"type": "remove", "id": "m9"}}}}).M()
	if str(res, "checkpoint", "checkpoint_id") == "" || str(res, "checkpoint_id") != str(res, "checkpoint", "checkpoint_id") || str(res, "checkpoint", "thread_id") != id {
		t.Fatalf("update response: %v", res)
	}
	if n := len(get(e.must(200, "GET", "/threads/"+id, nil).M(), "values", "messages").([]any)); n != 5 {
		t.Fatalf("after remove: %d messages", n)
	}
	r := e.do("POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{map[string]any{"type": "remove", "id": "nope"}}}})
	if r.Status != 400 || !strings.Contains(detail(r), "doesn't exist") {
		t.Fatalf("remove unknown: %d %s", r.Status, r.Raw)
	}
	e.must(200, "POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{
		map[string]any{"type": "remove", "id": "__remove_all__"}, map[string]any{"type": "ai", "content": "fresh"}}}})
	if m := get(e.must(200, "GET", "/threads/"+id, nil).M(), "values", "messages").([]any); len(m) != 1 || str(m[0], "content") != "fresh" {
		t.Fatalf("after remove all: %v", m)
	}

	// Errors: a key written twice in one superstep, malformed messages.
	r = e.do("POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": []any{
		map[string]any{"updates": []any{
			map[string]any{"as_node": "a", "values": map[string]any{"topic": "x"}},
			map[string]any{"as_node": "b", "values": map[string]any{"topic": "y"}}}}}})
	if r.Status != 400 || !strings.Contains(detail(r), "Can receive only one value per step") {
		t.Fatalf("double write: %d %s", r.Status, r.Raw)
	}
	for _, m := range []any{map[string]any{"type": "robot", "content": "x"}, map[string]any{"type": "human"}, 42, map[string]any{"type": "tool", "content": "x"}} {
		r = e.do("POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"messages": []any{"ok", m}}})
		if r.Status != 422 || !reflect.DeepEqual(get(r.Body, "detail", 0, "loc"), []any{"body", "values", "messages", float64(1)}) {
			t.Fatalf("bad message %v: %d %s", m, r.Status, r.Raw)
		}
	}
	r = e.do("POST", "/threads/"+id+"/state", map[string]any{"as_node": "agent", "values": "text"})
	if r.Status != 422 {
		t.Fatalf("values not an object: %d", r.Status)
	}
}

func TestSuperstepRules(t *testing.T) {
	e := newEnv(t)
	g := map[string]any{"graph_id": "agent"}
	mk := func(steps ...[]any) resp {
		var ss []any
		for _, s := range steps {
			ss = append(ss, map[string]any{"updates": s})
		}
		return e.do("POST", "/threads", map[string]any{"metadata": g, "supersteps": ss})
	}
	up := func(node string, values any) map[string]any {
		return map[string]any{"as_node": node, "values": values}
	}
	if r := mk([]any{up("__input__", map[string]any{}), up("__input__", map[string]any{})}); r.Status != 400 {
		t.Fatalf("two input updates: %d", r.Status)
	}
	if r := mk([]any{up("__input__", nil)}); r.Status != 400 {
		t.Fatalf("input without values: %d", r.Status)
	}
	if r := mk([]any{up("__copy__", nil)}); r.Status != 400 {
		t.Fatalf("copy of nothing: %d", r.Status)
	}
	if r := mk([]any{up("a", map[string]any{"x": 1}), map[string]any{"as_node": "", "values": map[string]any{}}}); r.Status != 400 {
		t.Fatalf("missing as_node among several: %d", r.Status)
	}
	if n := e.must(200, "POST", "/threads/count", nil).Body; n != float64(0) {
		t.Fatalf("failed creations left %v threads", n)
	}

	// An __input__ alone leaves __start__ pending: the thread is
	// interrupted, and its values are unchanged until __start__ runs.
	th := mk([]any{up("__input__", map[string]any{"messages": []any{"queued"}})})
	if th.Status != 200 || th.M()["status"] != "interrupted" || !reflect.DeepEqual(th.M()["values"], map[string]any{}) {
		t.Fatalf("input only: %d %v", th.Status, th.M())
	}
	id := str(th.M(), "thread_id")
	st := e.must(200, "GET", "/threads/"+id+"/state", nil).M()
	if !reflect.DeepEqual(st["next"], []any{"__start__"}) || num(st, "metadata", "step") != -1 {
		t.Fatalf("input state: %v", st)
	}
	// as_node omitted after an input means __start__, which consumes it.
	e.must(200, "POST", "/threads/"+id+"/state", map[string]any{"values": map[string]any{"messages": []any{"go"}}})
	got := e.must(200, "GET", "/threads/"+id, nil).M()
	if got["status"] != "idle" || len(get(got, "values", "messages").([]any)) != 1 {
		t.Fatalf("after __start__: %v", got)
	}
	st = e.must(200, "GET", "/threads/"+id+"/state", nil).M()
	if _, ok := get(st, "metadata", "writes").(map[string]any)["__start__"]; !ok || num(st, "metadata", "step") != 0 {
		t.Fatalf("as_node not inferred as __start__: %v", st["metadata"])
	}
	// An update as another node keeps __start__ pending.
	other := str(mk([]any{up("__input__", map[string]any{})}).M(), "thread_id")
	e.must(200, "POST", "/threads/"+other+"/state", up("side", map[string]any{"note": "n"}))
	st = e.must(200, "GET", "/threads/"+other+"/state", nil).M()
	if !reflect.DeepEqual(st["next"], []any{"__start__"}) || num(st, "metadata", "step") != 0 || get(st, "values", "note") != "n" {
		t.Fatalf("after side update: %v", st)
	}
	// as_node inferred from the single last writer; ambiguous otherwise.
	e.must(200, "POST", "/threads/"+other+"/state", map[string]any{"values": map[string]any{"note": "again"}})
	if _, ok := get(e.must(200, "GET", "/threads/"+other+"/state", nil).M(), "metadata", "writes").(map[string]any)["side"]; !ok {
		t.Fatal("as_node not inferred from the last writer")
	}
	id2 := str(mk([]any{up("a", map[string]any{"x": 1}), up("b", map[string]any{"y": 2})}).M(), "thread_id")
	if r := e.do("POST", "/threads/"+id2+"/state", map[string]any{"values": map[string]any{"x": 3}}); r.Status != 400 || !strings.Contains(detail(r), "Ambiguous") {
		t.Fatalf("ambiguous: %d %s", r.Status, r.Raw)
	}
	// Command.goto makes nodes pending; __end__ with no values clears them.
	e.must(200, "POST", "/threads/"+id2+"/state", map[string]any{"as_node": "a", "values": nil})
	r := e.do("POST", "/threads", map[string]any{"metadata": g, "supersteps": []any{map[string]any{"updates": []any{
		map[string]any{"as_node": "agent", "command": map[string]any{"update": map[string]any{"x": 1}, "goto": []any{"tools", map[string]any{"node": "review", "input": map[string]any{}}}}}}}}})
	if r.Status != 200 || r.M()["status"] != "interrupted" {
		t.Fatalf("goto: %d %s", r.Status, r.Raw)
	}
	id3 := str(r.M(), "thread_id")
	if st := e.must(200, "GET", "/threads/"+id3+"/state", nil).M(); !reflect.DeepEqual(st["next"], []any{"tools", "review"}) || len(st["tasks"].([]any)) != 2 {
		t.Fatalf("goto state: %v", st)
	}
	e.must(200, "POST", "/threads/"+id3+"/state", map[string]any{"as_node": "__end__", "values": nil})
	if st := e.must(200, "GET", "/threads/"+id3, nil).M(); st["status"] != "idle" {
		t.Fatalf("after __end__: %v", st["status"])
	}
	// Fork: an update from an older checkpoint continues from there.
	hist := e.must(200, "POST", "/threads/"+id3+"/history", nil).L()
	first := str(hist[len(hist)-1], "checkpoint_id")
	e.must(200, "POST", "/threads/"+id3+"/state", map[string]any{"as_node": "agent", "values": map[string]any{"y": 9}, "checkpoint_id": first})
	st = e.must(200, "GET", "/threads/"+id3+"/state", nil).M()
	if str(st, "parent_checkpoint_id") != first || get(st, "values", "y") != float64(9) || num(st, "metadata", "step") != 1 {
		t.Fatalf("fork: %v", st)
	}
	if r := e.do("POST", "/threads/"+id3+"/state", map[string]any{"as_node": "a", "values": map[string]any{}, "checkpoint": map[string]any{"checkpoint_id": uuid.NewString()}}); r.Status != 404 {
		t.Fatalf("unknown base checkpoint: %d", r.Status)
	}
	e.must(200, "POST", "/threads/"+id3+"/state", map[string]any{"as_node": "__copy__"})
	if st := e.must(200, "GET", "/threads/"+id3+"/state", nil).M(); num(st, "metadata", "step") != 2 || str(st, "metadata", "source") != "fork" {
		t.Fatalf("__copy__: %v", st["metadata"])
	}
}

func TestBusyAndGraphs(t *testing.T) {
	e := newEnv(t)
	id := str(e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}}), "thread_id")
	if err := e.svc.SetStatus(t.Context(), e.dep, id, "busy"); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/threads/"+id+"/state", map[string]any{"as_node": "a", "values": map[string]any{}}); r.Status != 409 {
		t.Fatalf("busy: %d", r.Status)
	}
	// A deployment that knows its graphs checks graph_id.
	gd := "/deployments/" + e.graphDep
	if r := e.call(e.key, "POST", gd+"/threads", map[string]any{"metadata": map[string]any{"graph_id": "nope"}}); r.Status != 422 ||
		!reflect.DeepEqual(get(r.Body, "detail", 0, "loc"), []any{"body", "metadata", "graph_id"}) {
		t.Fatalf("unknown graph: %d %s", r.Status, r.Raw)
	}
	r := e.call(e.key, "POST", gd+"/threads", map[string]any{"metadata": map[string]any{"graph_id": "other"}})
	if r.Status != 200 {
		t.Fatalf("known graph: %d", r.Status)
	}
	if r := e.call(e.key, "PATCH", gd+"/threads/"+str(r.M(), "thread_id"), map[string]any{"metadata": map[string]any{"graph_id": "gone"}}); r.Status != 422 {
		t.Fatalf("patch to unknown graph: %d", r.Status)
	}
}

func TestAccessAndIsolation(t *testing.T) {
	e := newEnv(t)
	id := str(e.create(nil), "thread_id")
	path := "/threads/" + id
	// Another deployment of the same workspace does not see the thread.
	if r := e.call(e.key, "GET", "/deployments/"+e.dep2+path, nil); r.Status != 404 {
		t.Fatalf("other deployment: %d", r.Status)
	}
	if r := e.call(e.key, "POST", "/deployments/"+e.dep2+"/threads/search", nil); len(r.L()) != 0 {
		t.Fatalf("other deployment search: %s", r.Raw)
	}
	// Another tenant: the deployment is missing, exactly like a missing one.
	missingDep := uuid.NewString()
	missing := e.call(e.otherKey, "GET", "/deployments/"+missingDep+path, nil)
	foreign := e.call(e.otherKey, "GET", "/deployments/"+e.dep+path, nil)
	if missing.Status != 404 || foreign.Status != 404 || strings.Replace(detail(foreign), e.dep, "X", 1) != strings.Replace(detail(missing), missingDep, "X", 1) {
		t.Fatalf("other tenant: %d %s / %d %s", foreign.Status, foreign.Raw, missing.Status, missing.Raw)
	}
	if r := e.call(e.key, "GET", "/deployments/"+e.otherDep+"/threads/"+id, nil); r.Status != 404 {
		t.Fatalf("admin of another org: %d", r.Status)
	}
	// Keys and roles.
	if r := e.call("", "GET", "/deployments/"+e.dep+path, nil); r.Status != 401 {
		t.Fatalf("no key: %d", r.Status)
	}
	if r := e.call("wrong", "GET", "/deployments/"+e.dep+path, nil); r.Status != 401 {
		t.Fatalf("bad key: %d", r.Status)
	}
	if r := e.call(e.viewerKey, "GET", "/deployments/"+e.dep+path, nil); r.Status != 200 {
		t.Fatalf("viewer read: %d", r.Status)
	}
	if r := e.call(e.viewerKey, "POST", "/deployments/"+e.dep+"/threads", nil); r.Status != 403 {
		t.Fatalf("viewer write: %d", r.Status)
	}
	if r := e.call(e.key, "GET", "/deployments/nope"+path, nil); r.Status != 422 {
		t.Fatalf("bad deployment id: %d", r.Status)
	}
	// No DEPLOYED revision: 503 with Retry-After; deleted: 404.
	tgt, _ := e.res.ThreadTarget(t.Context(), e.dep)
	tgt.ActiveRevisionID = ""
	e.res.set(tgt)
	r := e.do("GET", path, nil)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(detail(r), "DEPLOYED") {
		t.Fatalf("undeployed: %d %v %s", r.Status, r.Header, r.Raw)
	}
	// No DEPLOYED revision and none on its way: 409 naming the failed
	// revision, without Retry-After (waiting changes nothing), also for
	// a POST; another tenant still gets 404.
	failed := "7c1e2a9e-0000-4000-8000-00000000f00d"
	tgt.FailedRevisionID, tgt.FailedRevisionStatus = failed, "BUILD_FAILED"
	e.res.set(tgt)
	for _, method := range []string{"GET", "POST"} {
		p := path
		if method == "POST" {
			p = "/threads"
		}
		r = e.do(method, p, nil)
		if r.Status != http.StatusConflict || r.Header.Get("Retry-After") != "" ||
			!strings.Contains(detail(r), failed) || !strings.Contains(detail(r), "BUILD_FAILED") {
			t.Fatalf("failed deployment, %s: %d %v %s", method, r.Status, r.Header, r.Raw)
		}
	}
	if r := e.call(e.otherKey, "GET", "/deployments/"+e.dep+path, nil); r.Status != 404 {
		t.Fatalf("failed deployment seen by another tenant: %d %s", r.Status, r.Raw)
	}
	e.res.drop(e.dep)
	if r := e.do("GET", path, nil); r.Status != 404 || !strings.Contains(detail(r), "Deployment") {
		t.Fatalf("deleted deployment: %d %s", r.Status, r.Raw)
	}
}
