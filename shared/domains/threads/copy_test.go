package threads_test

import (
	"context"
	"reflect"
	"testing"
)

// historyIDs returns a thread's checkpoint ids, newest first.
func (e *env) historyIDs(id string) []string {
	e.t.Helper()
	var out []string
	for _, h := range e.must(200, "POST", "/threads/"+id+"/history", map[string]any{"limit": 1000}).L() {
		out = append(out, str(h, "checkpoint_id"))
		if str(h, "metadata", "thread_id") != id || str(h, "checkpoint", "thread_id") != id {
			e.t.Fatalf("a state of %s names thread %s", id, str(h, "metadata", "thread_id"))
		}
		if p, ok := get(h, "parent_checkpoint").(map[string]any); ok && p["thread_id"] != id {
			e.t.Fatalf("a parent of %s names thread %v", id, p["thread_id"])
		}
	}
	return out
}

func (e *env) say(id, node, text string) {
	e.t.Helper()
	e.must(200, "POST", "/threads/"+id+"/state", map[string]any{"as_node": node, "values": map[string]any{"messages": []any{map[string]any{"type": "ai", "content": text}}}})
}

// chainItems counts every stored chain and checkpoint item.
func (e *env) chainItems() int { return e.st.count("thrc#") }

func TestCopyOnWrite(t *testing.T) {
	e := newEnv(t)
	src := e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent", "user": "u1"}, "supersteps": docsSupersteps()})
	sid := str(src, "thread_id")
	for i := 0; i < 5; i++ {
		e.say(sid, "call_model", "more")
	}
	before := e.historyIDs(sid)
	srcState := e.must(200, "GET", "/threads/"+sid+"/state", nil).M()

	cp := e.must(200, "POST", "/threads/"+sid+"/copy", nil).M()
	cid := str(cp, "thread_id")
	if cid == sid || cp["status"] != "idle" || !reflect.DeepEqual(cp["metadata"], src["metadata"]) ||
		!reflect.DeepEqual(cp["values"], srcState["values"]) {
		t.Fatalf("copy: %v", cp)
	}
	if got := e.historyIDs(cid); !reflect.DeepEqual(got, before) {
		t.Fatalf("copy history %v, want %v", got, before)
	}
	cst := e.must(200, "GET", "/threads/"+cid+"/state", nil).M()
	if str(cst, "checkpoint_id") != str(srcState, "checkpoint_id") || str(cst, "metadata", "thread_id") != cid {
		t.Fatalf("copy state: %v", cst["metadata"])
	}
	if at := e.must(200, "GET", "/threads/"+cid+"/state/"+before[3], nil).M(); str(at, "checkpoint", "thread_id") != cid {
		t.Fatalf("old checkpoint of the copy: %v", at["checkpoint"])
	}

	// Both go on independently.
	e.say(sid, "call_model", "source only")
	e.say(cid, "call_model", "copy only")
	if got := e.historyIDs(cid); len(got) != len(before)+1 || !reflect.DeepEqual(got[1:], before) {
		t.Fatalf("copy history after writes: %v", got)
	}
	srcHist := e.historyIDs(sid)
	if len(srcHist) != len(before)+1 || srcHist[0] == e.historyIDs(cid)[0] {
		t.Fatal("source and copy share a new checkpoint")
	}
	lastMsg := func(id string) string {
		m := get(e.must(200, "GET", "/threads/"+id, nil).M(), "values", "messages").([]any)
		return str(m[len(m)-1], "content")
	}
	if lastMsg(sid) != "source only" || lastMsg(cid) != "copy only" {
		t.Fatalf("values mixed: %q %q", lastMsg(sid), lastMsg(cid))
	}

	// Copies of copies, then the source and the first copy go away.
	cc := str(e.must(200, "POST", "/threads/"+cid+"/copy", nil).M(), "thread_id")
	ccHist := e.historyIDs(cc)
	if !reflect.DeepEqual(ccHist, e.historyIDs(cid)) {
		t.Fatal("copy of copy differs")
	}
	fresh := str(e.must(200, "POST", "/threads/"+cc+"/copy", nil).M(), "thread_id") // no own writes yet
	e.must(204, "DELETE", "/threads/"+sid, nil)
	e.must(204, "DELETE", "/threads/"+cid, nil)
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := e.historyIDs(cc); !reflect.DeepEqual(got, ccHist) {
		t.Fatalf("copy of copy after its ancestors were deleted: %v", got)
	}
	for _, id := range ccHist {
		if st := e.must(200, "GET", "/threads/"+cc+"/state/"+id, nil).M(); str(st, "checkpoint_id") != id {
			t.Fatal("checkpoint lost")
		}
	}
	if got := e.historyIDs(fresh); !reflect.DeepEqual(got, ccHist) {
		t.Fatal("copy of a copy without writes")
	}
	e.say(fresh, "call_model", "x")

	// A missing source is 409; deleting everything collects every chain.
	if r := e.do("POST", "/threads/"+sid+"/copy", nil); r.Status != 409 {
		t.Fatalf("copy of a deleted thread: %d", r.Status)
	}
	e.must(204, "DELETE", "/threads/"+cc, nil)
	e.must(204, "DELETE", "/threads/"+fresh, nil)
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.chainItems(); n != 0 {
		t.Fatalf("%d chain items left after every thread was deleted", n)
	}
}

func TestCopyOfEmptyThread(t *testing.T) {
	e := newEnv(t)
	id := str(e.create(map[string]any{"metadata": map[string]any{"graph_id": "agent"}}), "thread_id")
	cp := e.must(200, "POST", "/threads/"+id+"/copy", nil).M()
	if cp["values"] != nil {
		t.Fatalf("copy of an empty thread: %v", cp)
	}
	e.say(str(cp, "thread_id"), "agent", "hi")
	if h := e.historyIDs(id); len(h) != 0 {
		t.Fatal("the source got the copy's checkpoint")
	}
}
