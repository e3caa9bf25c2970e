package threads_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/threads"
)

// The fast reads (GET a thread, GET its state) copy the stored metadata,
// values and writes through instead of decoding and encoding them: every
// read here is also rendered the general way by the service and compared
// byte for byte (see fastread.go), over content whose encoding has traps:
// HTML characters, escapes, non-ASCII text, number spellings, empty and
// nested containers, null, a TTL, a fork, a state update, no graph.
func TestFastReadsMatchTheGeneralPath(t *testing.T) {
	e := newEnv(t)
	md := map[string]any{"graph_id": "agent", "html": "<a href='x'>&amp;</a>", "esc": "tab\tnl\n\"q\" \\ \u2028 \u0001",
		"text": "é日本語🙂", "ints": []any{0, -1, 1234567890123, 0.1}, "floats": "1.50", "empty": map[string]any{},
		"list": []any{}, "null": nil, "nested": map[string]any{"z": 1, "a": map[string]any{"y": true, "b": false}}}
	raw := `{"metadata":{"graph_id":"agent","n":1.50,"e":1e21,"small":1E-7,"neg":-0.0,"big":123456789012345678901234567890},` +
		`"ttl":{"strategy":"delete","ttl":90.5},"supersteps":[{"updates":[{"values":{},"as_node":"__input__"}]},` +
		`{"updates":[{"values":{"messages":[{"type":"human","content":"<b>hi</b> & \u00e9","id":"m1"}],"n":2.50,"k":{"b":1,"a":[1,2.0]}},"as_node":"__start__"}]}]}`
	var ids []string
	for _, body := range []any{
		map[string]any{},
		map[string]any{"metadata": map[string]any{"plain": "no graph"}},
		map[string]any{"metadata": md},
		raw,
		map[string]any{"metadata": map[string]any{"graph_id": "agent"}, "supersteps": []any{
			map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": "hello"}, "as_node": "__input__"}}}}},
	} {
		r := e.do("POST", "/threads", body)
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		ids = append(ids, r.M()["thread_id"].(string))
	}
	last := ids[3]
	if r := e.do("POST", "/threads/"+last+"/state", map[string]any{"values": map[string]any{"k": "<>", "messages": []any{
		map[string]any{"type": "ai", "content": "x", "tool_calls": []any{}}}}, "as_node": "call_model"}); r.Status != 200 {
		t.Fatalf("update: %d %s", r.Status, r.Raw)
	}
	c := e.do("POST", "/threads/"+last+"/copy", nil)
	if c.Status != 200 {
		t.Fatalf("copy: %d %s", c.Status, c.Raw)
	}
	ids = append(ids, c.M()["thread_id"].(string))
	for _, id := range ids {
		for _, path := range []string{"", "?include=ttl", "/state"} {
			if r := e.do("GET", "/threads/"+id+path, nil); r.Status != 200 {
				t.Fatalf("GET %s%s: %d %s", id, path, r.Status, r.Raw)
			}
		}
	}
}

// TestFastReadsAfterRecreate: a thread deleted and created again under the
// same id starts again at store version 1, with other content; its hot
// reads must not answer what was kept for the first one.
func TestFastReadsAfterRecreate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const id = "7d4c2f4e-4a52-4c58-9a55-2a1c6a2b8f10"
	for _, owner := range []string{"first", "second"} {
		if _, err := e.svc.Create(ctx, e.dep, threads.CreateIn{ThreadID: id, Metadata: map[string]any{"graph_id": "agent", "owner": owner}}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // the second read is answered from the kept answer
			b, err := e.svc.GetJSON(ctx, e.dep, id, false)
			if err != nil || !strings.Contains(string(b), `"owner":"`+owner+`"`) {
				t.Fatalf("%s: %s %v", owner, b, err)
			}
			if _, err := e.svc.GetStateJSON(ctx, e.dep, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.svc.Delete(ctx, e.dep, id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.GetJSON(ctx, e.dep, id, false); err == nil {
			t.Fatal("a deleted thread answered")
		}
	}
}
