package tracing_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/tracing"
)

func TestInfoAndSettings(t *testing.T) {
	e := newEnv(t, envOptions{flags: map[string]bool{"dataset_examples_multipart_enabled": true}})
	for _, p := range []string{"/info", "/api/v1/info"} {
		info := e.must(200, e.doKey("", "GET", p, nil)).obj()
		bic := info["batch_ingest_config"].(map[string]any)
		if bic["size_limit_bytes"].(float64) > 5<<20 || bic["use_multipart_endpoint"] != true {
			t.Errorf("batch_ingest_config: %v", bic)
		}
		flags := info["instance_flags"].(map[string]any)
		if flags["dataset_examples_multipart_enabled"] != true || len(flags) != 1 {
			t.Errorf("instance_flags: %v", flags)
		}
	}
	s := e.must(200, e.do("GET", "/settings", nil)).obj()
	if s["id"] != e.ws || s["display_name"] != "Default" {
		t.Errorf("settings: %v", s)
	}
	// The SDKs compare prompt owners with tenant_handle, and the JS SDK
	// refuses to create a public prompt while it is null.
	if s["tenant_handle"] != "handle-"+e.ws {
		t.Errorf("tenant_handle: %v", s["tenant_handle"])
	}
	e.must(401, e.doKey("", "GET", "/settings", nil))
	e.must(401, e.doKey("ap_wrong", "GET", "/api/v1/settings", nil))
}

func TestCreateUpdateReadBack(t *testing.T) {
	e := newEnv(t, envOptions{})
	root, child := newID(), newID()
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	e.must(202, e.do("POST", "/runs", map[string]any{
		"id": root, "name": "agent", "run_type": "chain", "start_time": ts(start), "session_name": "proj-a",
		"inputs": map[string]any{"question": "hi"}, "tags": []string{"t1"},
		"extra":        map[string]any{"metadata": map[string]any{"thread_id": "th-1", "user": "alice"}, "runtime": map[string]any{"sdk": "js"}},
		"dotted_order": seg(start, root), "trace_id": root, "serialized": map[string]any{"name": "agent"},
	}))
	e.must(202, e.do("POST", "/api/v1/runs", map[string]any{
		"id": child, "name": "ChatOpenAI", "run_type": "llm", "start_time": start.Add(time.Second).UnixMilli(), "session_name": "proj-a",
		"parent_run_id": root, "trace_id": root, "dotted_order": seg(start, root) + "." + seg(start.Add(time.Second), child),
		"inputs": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}},
		"extra":  map[string]any{"metadata": map[string]any{"thread_id": "th-1"}},
	}))
	e.must(202, e.do("PATCH", "/runs/"+child, map[string]any{
		"end_time": ts(start.Add(3 * time.Second)),
		"outputs":  map[string]any{"content": "hello", "usage_metadata": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15, "total_cost": 0.0003}},
		"events":   []any{map[string]any{"name": "new_token", "time": ts(start.Add(1500 * time.Millisecond))}},
	}))
	e.must(202, e.do("PATCH", "/api/v1/runs/"+root, map[string]any{"end_time": ts(start.Add(4 * time.Second)), "outputs": map[string]any{"answer": "hello"}}))
	e.drain()

	r := e.must(200, e.do("GET", "/runs/"+child, nil)).obj()
	want := map[string]any{"name": "ChatOpenAI", "run_type": "llm", "status": "success", "trace_id": root, "parent_run_id": root,
		"thread_id": "th-1", "total_tokens": float64(15), "prompt_tokens": float64(10), "completion_tokens": float64(5), "total_cost": "0.0003"}
	for k, v := range want {
		if fmt.Sprint(r[k]) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
	if r["outputs"].(map[string]any)["content"] != "hello" || r["inputs"].(map[string]any)["messages"] == nil {
		t.Errorf("large fields: %v %v", r["inputs"], r["outputs"])
	}
	if r["first_token_time"] == nil || len(r["events"].([]any)) != 1 {
		t.Errorf("events: %v %v", r["first_token_time"], r["events"])
	}
	if ids := r["parent_run_ids"].([]any); len(ids) != 1 || ids[0] != root {
		t.Errorf("parent_run_ids: %v", r["parent_run_ids"])
	}
	rr := e.must(200, e.do("GET", "/api/v1/runs/"+root, nil)).obj()
	if rr["serialized"].(map[string]any)["name"] != "agent" || rr["extra"].(map[string]any)["runtime"] == nil {
		t.Errorf("root: %v", rr)
	}
	if md := rr["extra"].(map[string]any)["metadata"].(map[string]any); md["user"] != "alice" {
		t.Errorf("metadata: %v", md)
	}
	p := e.project("proj-a")
	if p["run_count"].(float64) != 2 || p["trace_count"].(float64) != 1 || p["total_tokens"].(float64) != 15 || p["error_rate"].(float64) != 0 {
		t.Errorf("stats: %v", p)
	}
	if lat := p["latency_p50"].(float64); lat < 3.8 || lat > 4.2 {
		t.Errorf("latency_p50 %v, want about 4", lat)
	}
	if p["last_run_start_time"] == nil || p["tenant_id"] != e.ws {
		t.Errorf("project: %v", p)
	}
	if _, ok := p["reference_dataset_id"]; !ok {
		t.Error("reference_dataset_id must be present")
	}
	// The trace was reported to billing once.
	usage := e.bus.eventsOf(tracing.TopicBillingUsage)
	if len(usage) != 1 {
		t.Fatalf("billing events: %d", len(usage))
	}
	var ev tracing.UsageEvent
	_ = json.Unmarshal(usage[0], &ev)
	if ev.Metric != "traces" || ev.Quantity != 1 || ev.OrganizationID != e.org || ev.WorkspaceID != e.ws || !strings.Contains(ev.ID, root) {
		t.Errorf("usage event: %+v", ev)
	}
	e.must(404, e.do("GET", "/runs/"+newID(), nil))
}

// A create and an update of one run, in either order, in separate
// requests, sent twice each, end as one run counted once.
func TestOutOfOrderAndReplays(t *testing.T) {
	e := newEnv(t, envOptions{})
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	for _, order := range []string{"post-first", "patch-first"} {
		t.Run(order, func(t *testing.T) {
			e.t = t
			id := newID()
			post := map[string]any{"id": id, "name": "r", "run_type": "chain", "start_time": ts(start), "session_name": "ooo-" + order,
				"inputs": map[string]any{"x": 1}, "extra": map[string]any{"metadata": map[string]any{"a": "post", "b": "post"}},
				"dotted_order": seg(start, id), "trace_id": id}
			patch := map[string]any{"end_time": ts(start.Add(2 * time.Second)), "outputs": map[string]any{"y": 2},
				"extra": map[string]any{"metadata": map[string]any{"b": "patch"}}, "error": "boom"}
			steps := []func(){
				func() { e.must(202, e.do("POST", "/runs", post)) },
				func() { e.must(202, e.do("PATCH", "/runs/"+id, patch)) },
			}
			if order == "patch-first" {
				steps[0], steps[1] = steps[1], steps[0]
			}
			for _, s := range steps {
				s()
				e.drain()
			}
			// Replays, in both orders.
			steps[1]()
			steps[0]()
			e.drain()
			r := e.must(200, e.do("GET", "/runs/"+id, nil)).obj()
			md := r["extra"].(map[string]any)["metadata"].(map[string]any)
			if md["a"] != "post" || md["b"] != "patch" || r["error"] != "boom" || r["status"] != "error" || r["end_time"] == nil {
				t.Errorf("merged run: %v", r)
			}
			if r["inputs"].(map[string]any)["x"] != float64(1) || r["outputs"].(map[string]any)["y"] != float64(2) {
				t.Errorf("large fields: %v %v", r["inputs"], r["outputs"])
			}
			p := e.project("ooo-" + order)
			if p["run_count"] != float64(1) || p["error_rate"] != float64(1) {
				t.Errorf("counted: %v %v", p["run_count"], p["error_rate"])
			}
			runs, _ := e.query(map[string]any{"session": []string{p["id"].(string)}})
			if len(runs) != 1 {
				t.Errorf("query: %d runs", len(runs))
			}
		})
	}
}

// 20 writers at once on one trace: each creates a child and updates it,
// and each adds a metadata key to the root; nothing is lost.
func TestConcurrentWritersOneTrace(t *testing.T) {
	e := newEnv(t, envOptions{consumers: 8})
	root := newID()
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	e.must(202, e.do("POST", "/runs", map[string]any{"id": root, "name": "root", "run_type": "chain", "start_time": ts(start),
		"session_name": "concurrent", "dotted_order": seg(start, root), "trace_id": root,
		"extra": map[string]any{"metadata": map[string]any{"thread_id": "th"}}}))
	e.drain()
	const writers = 20
	var wg sync.WaitGroup
	children := make([]string, writers)
	for i := 0; i < writers; i++ {
		children[i] = newID()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := children[i]
			cs := start.Add(time.Duration(i+1) * time.Millisecond)
			e.must(202, e.do("POST", "/runs/batch", map[string]any{"post": []any{map[string]any{
				"id": c, "name": "step", "run_type": "tool", "start_time": ts(cs), "session_name": "concurrent",
				"parent_run_id": root, "trace_id": root, "dotted_order": seg(start, root) + "." + seg(cs, c),
				"extra":   map[string]any{"metadata": map[string]any{"thread_id": "th"}},
				"outputs": map[string]any{"usage_metadata": map[string]any{"input_tokens": 1, "output_tokens": 1}}}}}))
			e.must(202, e.do("PATCH", "/runs/"+c, map[string]any{"end_time": ts(cs.Add(time.Second))}))
			e.must(202, e.do("PATCH", "/runs/"+root, map[string]any{"extra": map[string]any{"metadata": map[string]any{fmt.Sprintf("k%d", i): i}}}))
		}(i)
	}
	wg.Wait()
	e.drain()
	r := e.must(200, e.do("GET", "/runs/"+root, nil)).obj()
	md := r["extra"].(map[string]any)["metadata"].(map[string]any)
	for i := 0; i < writers; i++ {
		if md[fmt.Sprintf("k%d", i)] != float64(i) {
			t.Errorf("metadata key k%d lost: %v", i, md)
		}
	}
	runs, _ := e.query(map[string]any{"trace": root})
	if len(runs) != writers+1 {
		t.Fatalf("trace has %d runs", len(runs))
	}
	for _, x := range runs {
		if x["id"] != root && x["end_time"] == nil {
			t.Errorf("run %v lost its update", x["id"])
		}
	}
	p := e.project("concurrent")
	if p["run_count"] != float64(writers+1) || p["total_tokens"] != float64(2*writers) {
		t.Errorf("stats: run_count %v total_tokens %v", p["run_count"], p["total_tokens"])
	}
	threads := e.must(200, e.do("GET", "/sessions/"+p["id"].(string)+"/threads", nil)).list()
	if len(threads) != 1 || threads[0]["run_count"] != float64(writers+1) || threads[0]["total_tokens"] != float64(2*writers) {
		t.Errorf("threads: %v", threads)
	}
	if n := len(e.bus.eventsOf(tracing.TopicBillingUsage)); n != 1 {
		t.Errorf("billing events: %d", n)
	}
}
