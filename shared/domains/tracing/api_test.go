package tracing_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/tracing"
)

func TestMultipartEveryPartKind(t *testing.T) {
	e := newEnv(t, envOptions{})
	root, child, fb := newID(), newID(), newID()
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	dRoot := seg(start, root)
	dChild := dRoot + "." + seg(start.Add(time.Millisecond), child)
	r := e.must(202, e.multipart([]part{
		jsonPart("post."+root, map[string]any{"id": root, "name": "agent", "run_type": "chain", "start_time": ts(start), "session_name": "mp", "trace_id": root, "dotted_order": dRoot}),
		jsonPart("post."+root+".inputs", map[string]any{"q": "hello"}),
		jsonPart("post."+root+".extra", map[string]any{"metadata": map[string]any{"thread_id": "t-mp"}, "runtime": map[string]any{"lang": "js"}}),
		jsonPart("post."+root+".serialized", map[string]any{"kind": "fn"}),
		jsonPart("post."+child, map[string]any{"id": child, "name": "tool", "run_type": "tool", "start_time": ts(start.Add(time.Millisecond)), "session_name": "mp", "trace_id": root, "dotted_order": dChild, "parent_run_id": root}),
		jsonPart("post."+child+".inputs", map[string]any{"arg": 1}),
		jsonPart("patch."+child, map[string]any{"id": child, "trace_id": root, "dotted_order": dChild, "end_time": ts(start.Add(time.Second))}),
		jsonPart("patch."+child+".outputs", map[string]any{"result": 2}),
		jsonPart("patch."+child+".error", "Oops"),
		jsonPart("patch."+child+".events", []any{map[string]any{"name": "start", "time": ts(start)}}),
		{name: "attachment." + child + ".image", contentType: "image/png", data: []byte("\x89PNG fake image bytes")},
		jsonPart("feedback."+fb, map[string]any{"id": fb, "run_id": child, "trace_id": root, "key": "quality", "score": 0.5, "comment": "meh"}),
	}))
	if res := r.obj(); res["runs"] != float64(3) || res["feedback"] != float64(1) || res["attachments"] != float64(1) {
		t.Errorf("result: %v", res)
	}
	e.drain()
	c := e.must(200, e.do("GET", "/runs/"+child, nil)).obj()
	if c["inputs"].(map[string]any)["arg"] != float64(1) || c["outputs"].(map[string]any)["result"] != float64(2) || c["error"] != "Oops" {
		t.Errorf("child: %v", c)
	}
	if len(c["events"].([]any)) != 1 || c["feedback_stats"].(map[string]any)["quality"] == nil {
		t.Errorf("events/feedback: %v %v", c["events"], c["feedback_stats"])
	}
	att := c["attachments"].(map[string]any)["image"].(map[string]any)
	if att["content_type"] != "image/png" {
		t.Errorf("attachment: %v", att)
	}
	got := e.must(200, e.do("GET", att["path"].(string), nil))
	if string(got.raw) != "\x89PNG fake image bytes" || got.hdr.Get("Content-Type") != "image/png" {
		t.Errorf("attachment bytes: %q %s", got.raw, got.hdr.Get("Content-Type"))
	}
	e.must(404, e.do("GET", "/runs/"+child+"/attachments/nope", nil))
	rt := e.must(200, e.do("GET", "/runs/"+root, nil)).obj()
	if rt["serialized"].(map[string]any)["kind"] != "fn" || rt["thread_id"] != "t-mp" || rt["extra"].(map[string]any)["runtime"] == nil {
		t.Errorf("root: %v", rt)
	}
	f := e.must(200, e.do("GET", "/feedback/"+fb, nil)).obj()
	if f["key"] != "quality" || f["score"] != 0.5 || f["run_id"] != child {
		t.Errorf("feedback: %v", f)
	}
	// gzip bodies are accepted.
	id := newID()
	body, ct := multipartBody([]part{jsonPart("post."+id, map[string]any{"id": id, "name": "z", "run_type": "chain", "start_time": ts(start), "session_name": "mp"})})
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	_, _ = zw.Write(body)
	_ = zw.Close()
	e.must(202, e.do("POST", "/runs/multipart", zb.Bytes(), "Content-Type", ct, "Content-Encoding", "gzip"))
	e.drain()
	e.must(200, e.do("GET", "/runs/"+id, nil))
}

// An empty or unparseable multipart body is a 422 (the JS SDK's signal to
// retry with a buffered body); nothing is queued for a bad request.
func TestMultipartBadInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := newID()
	good, ct := multipartBody([]part{jsonPart("post."+id, map[string]any{"id": id, "name": "x", "run_type": "chain"})})
	boundary := ct[strings.Index(ct, "boundary=")+9:]
	cases := []struct {
		name string
		body []byte
		ct   string
	}{
		{"empty", nil, ct},
		{"no parts", []byte("--" + boundary + "--\r\n"), ct},
		{"truncated", good[:len(good)/2], ct},
		{"garbage", []byte("hello world"), ct},
		{"no boundary", good, "multipart/form-data"},
		{"not multipart", good, "application/json"},
		{"bad part name", mp(t, part{"post.not-a-uuid", "", []byte(`{}`)}), ""},
		{"unknown part", mp(t, part{"frob." + id, "", []byte(`{}`)}), ""},
		{"unknown field", mp(t, part{"post." + id + ".frob", "", []byte(`{}`)}), ""},
		{"bad json", mp(t, part{"post." + id, "", []byte(`{"name": `)}), ""},
		{"bad field json", mp(t, part{"post." + id + ".inputs", "", []byte(`{`)}), ""},
		{"missing name", mp(t, jsonPart("post."+id, map[string]any{"run_type": "chain"})), ""},
		{"bad run type", mp(t, jsonPart("post."+id, map[string]any{"name": "x", "run_type": "bogus"})), ""},
		{"id mismatch", mp(t, jsonPart("post."+id, map[string]any{"id": newID(), "name": "x", "run_type": "chain"})), ""},
		{"bad dotted order", mp(t, jsonPart("post."+id, map[string]any{"name": "x", "run_type": "chain", "dotted_order": "nonsense"})), ""},
		{"dotted order of another run", mp(t, jsonPart("post."+id, map[string]any{"name": "x", "run_type": "chain", "dotted_order": seg(time.Now(), newID())})), ""},
		{"feedback without trace", mp(t, jsonPart("feedback."+newID(), map[string]any{"run_id": id, "key": "k"})), ""},
		{"feedback without key", mp(t, jsonPart("feedback."+newID(), map[string]any{"run_id": id, "trace_id": id})), ""},
		{"attachment with a dot", mp(t, part{"attachment." + id + ".a.b", "text/plain", []byte("x")}), ""},
		{"bad start time", mp(t, jsonPart("post."+id, map[string]any{"name": "x", "run_type": "chain", "start_time": "noon"})), ""},
		{"unknown session", mp(t, jsonPart("post."+id, map[string]any{"name": "x", "run_type": "chain", "session_id": newID()})), ""},
	}
	for _, c := range cases {
		ctype := c.ct
		if ctype == "" {
			ctype = "multipart/form-data; boundary=B0UNDARY"
		}
		r := e.do("POST", "/runs/multipart", c.body, "Content-Type", ctype)
		want := 422
		if c.name == "unknown session" {
			want = 404
		}
		if r.code != want || !json.Valid(r.raw) {
			t.Errorf("%s: %d %s", c.name, r.code, r.raw)
		}
	}
	if r := e.do("POST", "/runs/multipart", good, "Content-Type", ct, "Content-Encoding", "br"); r.code != 415 {
		t.Errorf("brotli: %d", r.code)
	}
	if r := e.do("POST", "/runs/multipart", []byte("not gzip"), "Content-Type", ct, "Content-Encoding", "gzip"); r.code != 422 {
		t.Errorf("bad gzip: %d", r.code)
	}
	if n := len(e.bus.eventsOf(tracing.TopicIngest)); n != 0 {
		t.Errorf("%d batches queued from bad requests", n)
	}
}

func mp(t *testing.T, parts ...part) []byte {
	var buf bytes.Buffer
	for _, p := range parts {
		ct := p.contentType
		if ct == "" {
			ct = "application/json"
		}
		fmt.Fprintf(&buf, "--B0UNDARY\r\nContent-Disposition: form-data; name=%q\r\nContent-Type: %s\r\n\r\n%s\r\n", p.name, ct, p.data)
	}
	buf.WriteString("--B0UNDARY--\r\n")
	return buf.Bytes()
}

func TestProjects(t *testing.T) {
	e := newEnv(t, envOptions{})
	dataset := newID()
	p := e.must(200, e.do("POST", "/sessions", map[string]any{"name": "exp-1", "description": "an experiment",
		"reference_dataset_id": dataset, "extra": map[string]any{"metadata": map[string]any{"model": "gpt"}}, "num_examples": 3})).obj()
	pid := p["id"].(string)
	if p["reference_dataset_id"] != dataset || p["tenant_id"] != e.ws || p["run_count"] != nil || p["trace_tier"] != "longlived" {
		t.Errorf("created: %v", p)
	}
	e.must(409, e.do("POST", "/sessions", map[string]any{"name": "exp-1"}))
	up := e.must(200, e.do("POST", "/sessions?upsert=true", map[string]any{"name": "exp-1", "description": "changed"})).obj()
	if up["id"] != pid || up["description"] != "changed" {
		t.Errorf("upsert: %v", up)
	}
	free := e.must(200, e.do("POST", "/api/v1/sessions", map[string]any{"name": "plain"})).obj()
	// Runs of the experiment, against examples, with feedback.
	ex := []string{newID(), newID()}
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	var posts []any
	for i, x := range ex {
		id := newID()
		posts = append(posts, map[string]any{"id": id, "name": "target", "run_type": "chain", "session_id": pid, "reference_example_id": x,
			"start_time": ts(start), "end_time": ts(start.Add(time.Duration(i+1) * time.Second)), "total_tokens": 10 * (i + 1), "total_cost": "0.5"})
	}
	e.must(202, e.do("POST", "/runs/batch", map[string]any{"post": posts}))
	e.drain()
	for i, x := range ex {
		runs, _ := e.query(map[string]any{"reference_example": []string{x}})
		if len(runs) != 1 {
			t.Fatalf("runs of example: %d", len(runs))
		}
		e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": runs[0]["id"], "key": "correctness", "score": float64(i)}))
	}
	e.must(200, e.do("POST", "/feedback", map[string]any{"session_id": pid, "key": "summary", "score": 0.9}))
	exps := e.must(200, e.do("GET", "/sessions?reference_dataset="+dataset+"&include_stats=true", nil)).list()
	if len(exps) != 1 {
		t.Fatalf("experiments: %v", exps)
	}
	x := exps[0]
	if x["run_count"] != float64(2) || x["total_tokens"] != float64(30) || x["total_cost"] != "1" {
		t.Errorf("experiment stats: %v", x)
	}
	if p50, p99 := x["latency_p50"].(float64), x["latency_p99"].(float64); p50 < 0.95 || p50 > 1.05 || p99 < 1.9 || p99 > 2.1 {
		t.Errorf("latency p50 %v p99 %v", p50, p99)
	}
	fs := x["feedback_stats"].(map[string]any)["correctness"].(map[string]any)
	if fs["n"] != float64(2) || fs["avg"] != 0.5 {
		t.Errorf("feedback_stats: %v", fs)
	}
	if sfs := x["session_feedback_stats"].(map[string]any)["summary"].(map[string]any); sfs["n"] != float64(1) {
		t.Errorf("session_feedback_stats: %v", sfs)
	}
	// Listing filters.
	check := func(q string, want ...string) {
		t.Helper()
		l := e.must(200, e.do("GET", "/sessions?"+q, nil)).list()
		var names []string
		for _, p := range l {
			names = append(names, p["name"].(string))
		}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", q, names, want)
		}
	}
	check("name=plain", "plain")
	check("name_contains=EXP", "exp-1")
	check("reference_free=true", "plain")
	check("reference_free=false", "exp-1")
	check("reference_free=True&sort_by=name", "plain")
	check("sort_by=name&sort_by_desc=false", "exp-1", "plain")
	check("sort_by=name&sort_by_desc=true", "plain", "exp-1")
	check("id="+free["id"].(string), "plain")
	check(`metadata={"model":"gpt"}`, "exp-1")
	check("limit=1&offset=1&sort_by=name&sort_by_desc=false", "plain")
	check("name=nope")
	// Read, patch, delete.
	g := e.must(200, e.do("GET", "/sessions/"+pid+"?include_stats=true", nil)).obj()
	if g["run_count"] != float64(2) || g["last_run_start_time"] == nil {
		t.Errorf("get: %v", g)
	}
	pp := e.must(200, e.do("PATCH", "/sessions/"+pid, map[string]any{"name": "exp-renamed", "trace_tier": "shortlived", "description": nil})).obj()
	if pp["name"] != "exp-renamed" || pp["retention_days"] != float64(14) || pp["description"] != "changed" {
		t.Errorf("patch: %v", pp)
	}
	e.must(409, e.do("PATCH", "/sessions/"+pid, map[string]any{"name": "plain"}))
	e.must(200, e.do("POST", "/sessions", map[string]any{"name": "exp-1"})) // the old name is free
	e.must(202, e.do("DELETE", "/sessions/"+pid, nil))
	e.drain()
	e.must(404, e.do("GET", "/sessions/"+pid, nil))
	e.must(404, e.do("DELETE", "/sessions/"+pid, nil))
	if runs, _ := e.query(map[string]any{"session": []string{pid}}); len(runs) != 0 {
		t.Errorf("runs left after delete: %d", len(runs))
	}
	if runs, _ := e.query(map[string]any{"reference_example": ex}); len(runs) != 0 {
		t.Errorf("example runs left after delete: %d", len(runs))
	}
	// Experiment events: created, then deleted.
	evs := e.bus.eventsOf(tracing.TopicExperiment)
	if len(evs) != 2 {
		t.Fatalf("experiment events: %s", evs)
	}
	var created, deleted tracing.ExperimentEvent
	_ = json.Unmarshal(evs[0], &created)
	_ = json.Unmarshal(evs[1], &deleted)
	if created.ProjectID != pid || created.ReferenceDatasetID != dataset || created.Deleted || !deleted.Deleted || created.WorkspaceID != e.ws {
		t.Errorf("events: %+v %+v", created, deleted)
	}
}

func TestProjectEnsureConsumer(t *testing.T) {
	e := newEnv(t, envOptions{})
	dep := newID()
	for i := 0; i < 3; i++ {
		_ = e.bus.Enqueue(context.Background(), tracing.TopicProjectEnsure, tracing.ProjectEnsure{WorkspaceID: e.ws, Name: "my-agent", DeploymentID: dep})
	}
	_ = e.bus.Enqueue(context.Background(), tracing.TopicProjectEnsure, map[string]any{"name": 12})
	e.drain()
	p := e.project("my-agent")
	md := p["extra"].(map[string]any)["metadata"].(map[string]any)
	if md["deployment_id"] != dep {
		t.Errorf("project: %v", p)
	}
	// An existing project learns the deployment.
	e.must(200, e.do("POST", "/sessions", map[string]any{"name": "existing"}))
	_ = e.bus.Enqueue(context.Background(), tracing.TopicProjectEnsure, tracing.ProjectEnsure{WorkspaceID: e.ws, Name: "existing", DeploymentID: dep})
	e.drain()
	if md := e.project("existing")["extra"].(map[string]any)["metadata"].(map[string]any); md["deployment_id"] != dep {
		t.Errorf("existing: %v", md)
	}
}

func TestFeedbackRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	id := newID()
	e.must(202, e.do("POST", "/runs", map[string]any{"id": id, "name": "r", "run_type": "llm", "start_time": ts(time.Now().Add(-time.Minute)), "session_name": "fb"}))
	e.drain()
	f := e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": id, "key": "helpful", "score": true, "value": "yes",
		"comment": "good", "feedback_source": map[string]any{"type": "api", "metadata": map[string]any{}}, "feedbackConfig": nil})).obj()
	fid := f["id"].(string)
	if f["score"] != float64(1) || f["value"] != "yes" || f["session_id"] == nil {
		t.Errorf("created: %v", f)
	}
	// The same create again is a no-op; the id with another run a conflict.
	e.must(200, e.do("POST", "/feedback", map[string]any{"id": fid, "run_id": id, "key": "helpful", "score": 1}))
	e.must(409, e.do("POST", "/feedback", map[string]any{"id": fid, "run_id": newID(), "key": "helpful"}))
	f2 := e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": id, "key": "accuracy", "score": 0.25})).obj()
	list := e.must(200, e.do("GET", "/feedback?run="+id, nil)).list()
	if len(list) != 2 {
		t.Errorf("by run: %d", len(list))
	}
	if l := e.must(200, e.do("GET", "/feedback?key=accuracy", nil)).list(); len(l) != 1 || l[0]["id"] != f2["id"] {
		t.Errorf("by key: %v", l)
	}
	if l := e.must(200, e.do("GET", "/feedback?source=api&limit=1", nil)).list(); len(l) != 1 {
		t.Errorf("by source: %v", l)
	}
	p := e.project("fb")
	if fs := p["feedback_stats"].(map[string]any); len(fs) != 2 {
		t.Errorf("project feedback_stats: %v", fs)
	}
	pf := e.must(200, e.do("PATCH", "/feedback/"+fid, map[string]any{"score": 0, "comment": nil, "correction": map[string]any{"x": 1}})).obj()
	if pf["score"] != float64(0) || pf["comment"] != nil || pf["correction"] == nil {
		t.Errorf("patched: %v", pf)
	}
	fs := e.project("fb")["feedback_stats"].(map[string]any)["helpful"].(map[string]any)
	if fs["n"] != float64(1) || fs["avg"] != float64(0) {
		t.Errorf("stats after patch: %v", fs)
	}
	e.must(204, e.do("DELETE", "/feedback/"+fid, nil))
	e.must(404, e.do("GET", "/feedback/"+fid, nil))
	e.must(404, e.do("DELETE", "/feedback/"+fid, nil))
	e.must(404, e.do("PATCH", "/feedback/"+fid, map[string]any{"score": 1}))
	if fs := e.project("fb")["feedback_stats"].(map[string]any); fs["helpful"] != nil || fs["accuracy"] == nil {
		t.Errorf("stats after delete: %v", fs)
	}
	r := e.must(200, e.do("GET", "/runs/"+id, nil)).obj()
	if stats := r["feedback_stats"].(map[string]any); len(stats) != 1 {
		t.Errorf("run feedback_stats: %v", stats)
	}
	// Feedback on a run not ingested yet counts once the run arrives.
	later := newID()
	e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": later, "key": "early", "score": 1}))
	e.must(202, e.do("POST", "/runs", map[string]any{"id": later, "name": "r", "run_type": "llm", "start_time": ts(time.Now().Add(-time.Minute)), "session_name": "fb"}))
	e.drain()
	if fs := e.project("fb")["feedback_stats"].(map[string]any); fs["early"] == nil {
		t.Errorf("early feedback not counted: %v", fs)
	}
	runs, _ := e.query(map[string]any{"session": []string{p["id"].(string)}, "filter": `eq(feedback_key, "early")`})
	if len(runs) != 1 || runs[0]["id"] != later {
		t.Errorf("query by early feedback: %v", ids(runs))
	}
}

func TestThreads(t *testing.T) {
	e := newEnv(t, envOptions{})
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	var posts []any
	for i := 0; i < 7; i++ {
		id := newID()
		key := []string{"thread_id", "session_id", "conversation_id"}[i%3]
		th := fmt.Sprintf("th-%d", i%2)
		posts = append(posts, map[string]any{"id": id, "name": "turn", "run_type": "llm", "session_name": "threads",
			"start_time": ts(start.Add(time.Duration(i) * time.Minute)), "end_time": ts(start.Add(time.Duration(i)*time.Minute + time.Second)),
			"extra": map[string]any{"metadata": map[string]any{key: th}}, "total_tokens": 5,
			"inputs": map[string]any{"messages": []any{map[string]any{"role": "user", "content": fmt.Sprint("m", i)}}}})
	}
	e.must(202, e.do("POST", "/runs/batch", map[string]any{"post": posts}))
	e.drain()
	pid := e.project("threads")["id"].(string)
	ts := e.must(200, e.do("GET", "/sessions/"+pid+"/threads", nil)).list()
	if len(ts) != 2 || ts[0]["thread_id"] != "th-0" || ts[0]["run_count"] != float64(4) || ts[1]["run_count"] != float64(3) || ts[0]["total_tokens"] != float64(20) {
		t.Fatalf("threads: %v", ts)
	}
	if l := e.must(200, e.do("GET", "/sessions/"+pid+"/threads?limit=1&offset=1", nil)).list(); len(l) != 1 || l[0]["thread_id"] != "th-1" {
		t.Errorf("threads page: %v", l)
	}
	page := e.must(200, e.do("GET", "/sessions/"+pid+"/threads/th-0/runs?limit=3", nil)).obj()
	runs := page["runs"].([]any)
	if len(runs) != 3 || page["cursors"].(map[string]any)["next"] == nil {
		t.Fatalf("thread runs: %v", page)
	}
	first := runs[0].(map[string]any)
	if first["inputs"].(map[string]any)["messages"].([]any)[0].(map[string]any)["content"] != "m0" {
		t.Errorf("first run: %v", first)
	}
	next := page["cursors"].(map[string]any)["next"].(string)
	page = e.must(200, e.do("GET", "/sessions/"+pid+"/threads/th-0/runs?limit=3&cursor="+next, nil)).obj()
	if len(page["runs"].([]any)) != 1 || page["cursors"].(map[string]any)["next"] != nil {
		t.Errorf("thread runs page 2: %v", page)
	}
	e.must(422, e.do("GET", "/sessions/"+pid+"/threads/th-0/runs?cursor=bad", nil))
	e.must(422, e.do("GET", "/sessions/"+pid+"/threads/th-0/runs?order=up", nil))
	e.must(404, e.do("GET", "/sessions/"+newID()+"/threads", nil))
	e.must(404, e.do("GET", "/sessions/"+newID()+"/threads/x/runs", nil))
}

// Another workspace's runs, projects and feedback are absent (404), never
// forbidden.
func TestOtherWorkspace(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	ws2, err := e.id.CreateWorkspace(ctx, e.org, "Second")
	if err != nil {
		t.Fatal(err)
	}
	_, key2, err := e.id.CreateAPIKey(ctx, identity.NewKey{OrganizationID: e.org, OrgRole: identity.RoleViewer,
		Workspaces: []identity.Grant{{WorkspaceID: ws2.ID, Role: identity.RoleAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	id := newID()
	// The admin key reaches both workspaces: it must say which.
	e.must(400, e.do("POST", "/runs", map[string]any{"id": id, "name": "r", "run_type": "chain", "session_name": "mine"}))
	e.must(202, e.do("POST", "/runs", map[string]any{"id": id, "name": "r", "run_type": "chain", "session_name": "mine"}, "X-Tenant-Id", e.ws))
	e.drain()
	p := e.must(200, e.do("GET", "/sessions?name=mine", nil, "X-Tenant-Id", e.ws)).list()[0]
	f := e.must(200, e.do("POST", "/feedback", map[string]any{"run_id": id, "key": "k"}, "X-Tenant-Id", e.ws)).obj()
	e.must(200, e.do("GET", "/runs/"+id, nil, "X-Tenant-Id", e.ws))
	for _, path := range []string{"/runs/" + id, "/sessions/" + p["id"].(string), "/feedback/" + f["id"].(string), "/sessions/" + p["id"].(string) + "/threads"} {
		if r := e.doKey(key2, "GET", path, nil); r.code != 404 {
			t.Errorf("%s from the other workspace: %d", path, r.code)
		}
	}
	if r := e.doKey(key2, "PATCH", "/sessions/"+p["id"].(string), map[string]any{"name": "x"}); r.code != 404 {
		t.Errorf("patch: %d", r.code)
	}
	if r := e.doKey(key2, "DELETE", "/sessions/"+p["id"].(string), nil); r.code != 404 {
		t.Errorf("delete: %d", r.code)
	}
	if r := e.doKey(key2, "DELETE", "/feedback/"+f["id"].(string), nil); r.code != 404 {
		t.Errorf("delete feedback: %d", r.code)
	}
	r := e.doKey(key2, "POST", "/runs/query", map[string]any{"session": []string{p["id"].(string)}})
	if r.code != 200 || len(r.obj()["runs"].([]any)) != 0 {
		t.Errorf("query: %d %s", r.code, r.raw)
	}
	r = e.doKey(key2, "POST", "/runs/query", map[string]any{"id": []string{id}})
	if len(r.obj()["runs"].([]any)) != 0 {
		t.Errorf("query by id: %s", r.raw)
	}
	if l := e.must(200, e.doKey(key2, "GET", "/sessions", nil)).list(); len(l) != 0 {
		t.Errorf("projects: %v", l)
	}
	// A run naming the other workspace's project is refused.
	if r := e.doKey(key2, "POST", "/runs", map[string]any{"name": "r", "run_type": "chain", "session_id": p["id"]}); r.code != 404 {
		t.Errorf("post into the other project: %d", r.code)
	}
	// Updating the other workspace's run id from here touches only this
	// workspace: the original is unchanged.
	e.must(202, e.doKey(key2, "PATCH", "/runs/"+id, map[string]any{"error": "hijack"}))
	e.drain()
	if r := e.must(200, e.do("GET", "/runs/"+id, nil, "X-Tenant-Id", e.ws)).obj(); r["error"] != nil {
		t.Errorf("the other workspace changed a run: %v", r["error"])
	}
	// A viewer cannot write.
	_, viewer, _ := e.id.CreateAPIKey(ctx, identity.NewKey{OrganizationID: e.org, OrgRole: identity.RoleViewer,
		Workspaces: []identity.Grant{{WorkspaceID: e.ws, Role: identity.RoleViewer}}})
	if r := e.doKey(viewer, "POST", "/runs", map[string]any{"name": "r", "run_type": "chain"}); r.code != 403 {
		t.Errorf("viewer write: %d", r.code)
	}
	e.must(200, e.doKey(viewer, "POST", "/runs/query", map[string]any{"id": []string{id}}))
}

// Bad input on every route: a 4xx with a JSON detail, never a server
// error, and nothing changes.
func TestBadInputEveryRoute(t *testing.T) {
	e := newEnv(t, envOptions{})
	bodies := []string{``, `{`, `[]`, `"x"`, `{"id": 5}`, `{"name": ["x"]}`, `{"session": "x"}`, `{"run_id": "nope", "key": ""}`,
		`{"post": {}}`, `{"post": [{"name": 1}]}`, `{"score": "high"}`, `{"start_time": -5}`, `{"limit": "ten"}`, `{"extra": 5}`,
		`{"name": "` + strings.Repeat("n", 2000) + `"}`, `{"filter": "and("}`, `{"tags": [1]}`, `{"retention_days": 9000}`,
		`{"trace_tier": "forever"}`, `{"reference_dataset_id": "x"}`, `{"cursor": "%%%"}`, "\x00\xff", `{"id": ["a"]}`}
	paths := []string{"not-a-uuid", newID()}
	seen := 0
	for _, r := range tracing.Routes.Routes {
		for _, prefix := range []string{"", "/api/v1"} {
			for _, id := range paths {
				path := prefix + strings.NewReplacer("{run_id}", id, "{session_id}", id, "{feedback_id}", id, "{thread_id}", "t", "{name}", "n").Replace(r.Path)
				for _, b := range bodies {
					for _, q := range []string{"", "?limit=0", "?limit=x&offset=-1&include_stats=maybe&reference_free=2&sort_by=zzz&metadata={&id=x&run=x&cursor=x&order=x&upsert=x"} {
						res := e.do(r.Method, path+q, b)
						seen++
						if res.code >= 500 || res.code < 200 {
							t.Errorf("%s %s%s %q: %d", r.Method, path, q, b, res.code)
						}
						if res.code >= 400 && !json.Valid(res.raw) {
							t.Errorf("%s %s: not JSON: %s", r.Method, path, res.raw)
						}
					}
				}
			}
		}
	}
	e.drain()
	if l := e.must(200, e.do("GET", "/sessions", nil)).list(); len(l) > 1 {
		// Only a body that is valid for POST /runs (none here) could
		// create a project.
		t.Errorf("projects after bad input: %v", l)
	}
	t.Logf("%d bad requests", seen)
}

func TestRunStats(t *testing.T) {
	f := seedFixture(t)
	e := f.e
	st := e.must(200, e.do("POST", "/runs/stats", map[string]any{"session": []string{f.project}})).obj()
	if st["run_count"] != float64(6) || st["total_tokens"] != float64(400) {
		t.Errorf("project stats: %v", st)
	}
	st = e.must(200, e.do("POST", "/runs/stats", map[string]any{"session": []string{f.project}, "run_type": "llm"})).obj()
	if st["run_count"] != float64(3) || st["total_tokens"] != float64(400) || st["latency_p50"] == nil || st["error_rate"] != float64(0) {
		t.Errorf("llm stats: %v", st)
	}
	st = e.must(200, e.do("POST", "/api/v1/runs/stats", map[string]any{"session": []string{f.project}, "filter": `neq(error, null)`})).obj()
	if st["run_count"] != float64(1) || st["error_rate"] != float64(1) {
		t.Errorf("error stats: %v", st)
	}
	e.must(400, e.do("POST", "/runs/stats", map[string]any{}))
	e.must(422, e.do("POST", "/runs/stats", map[string]any{"session": []string{f.project}, "filter": "x("}))
}

func TestOTLPRoute(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.must(415, e.do("POST", "/otel/v1/traces", []byte("x"), "Content-Type", "text/plain"))
	// The real decoder: a body that is no protobuf export is the client's error.
	e.must(400, e.do("POST", "/otel/v1/traces", []byte("x"), "Content-Type", "application/x-protobuf"))
	// Connected to a decoder, runs take the path of /runs/batch: here two
	// exports, the child's first, whose dotted order starts below the
	// root (its parent is in the second export).
	trace, root, child, grand := newID(), newID(), newID(), newID()
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
	exports := [][]map[string]any{
		{
			{"id": child, "trace_id": trace, "parent_run_id": root, "name": "llm", "run_type": "llm", "start_time": ts(start.Add(time.Millisecond)),
				"end_time": ts(start.Add(time.Second)), "dotted_order": seg(start.Add(time.Millisecond), child), "inputs": map[string]any{}},
			{"id": grand, "trace_id": trace, "parent_run_id": child, "name": "tool", "run_type": "tool", "start_time": ts(start.Add(2 * time.Millisecond)),
				"end_time": ts(start.Add(time.Second)), "dotted_order": seg(start.Add(time.Millisecond), child) + "." + seg(start.Add(2*time.Millisecond), grand)},
		},
		{
			{"id": root, "trace_id": trace, "name": "agent", "run_type": "chain", "start_time": ts(start), "end_time": ts(start.Add(2 * time.Second)),
				"dotted_order": seg(start, root)},
		},
	}
	n := 0
	defer tracing.SetOTLPDecoder(func(ct string, body []byte) ([]map[string]any, error) {
		if string(body) == "bad" {
			return nil, fmt.Errorf("invalid OTLP protobuf body")
		}
		out := exports[n%2]
		n++
		return out, nil
	})()
	r := e.do("POST", "/otel/v1/traces", []byte("export-1"), "Content-Type", "application/x-protobuf", "Langsmith-Project", "otel-proj")
	if r.code != 200 || len(r.raw) != 0 || r.hdr.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("export: %d %q", r.code, r.raw)
	}
	e.drain()
	if d := e.must(200, e.do("GET", "/runs/"+grand, nil, "X-Tenant-Id", e.ws)).obj()["dotted_order"].(string); strings.Count(d, ".") != 1 {
		t.Errorf("before the parent: %s", d)
	}
	r = e.do("POST", "/api/v1/otel/v1/traces", []byte(`{"resourceSpans":[]}`), "Content-Type", "application/json", "Langsmith-Project", "otel-proj")
	if r.code != 200 || string(r.raw) != "{}" {
		t.Errorf("json export: %d %s", r.code, r.raw)
	}
	e.drain()
	g := e.must(200, e.do("GET", "/runs/"+grand, nil)).obj()
	want := seg(start, root) + "." + seg(start.Add(time.Millisecond), child) + "." + seg(start.Add(2*time.Millisecond), grand)
	if g["dotted_order"] != want {
		t.Errorf("completed dotted order:\n got %v\nwant %v", g["dotted_order"], want)
	}
	if ids := g["parent_run_ids"].([]any); len(ids) != 2 || ids[0] != root {
		t.Errorf("parent_run_ids: %v", ids)
	}
	p := e.project("otel-proj")
	if p["run_count"] != float64(3) || p["trace_count"] != float64(1) {
		t.Errorf("otel project: %v", p)
	}
	// trace_filter finds the root of an OTLP trace (its id is not the trace id).
	runs, _ := e.query(map[string]any{"session": []string{p["id"].(string)}, "filter": `eq(run_type, "tool")`, "trace_filter": `eq(name, "agent")`})
	if len(runs) != 1 || runs[0]["id"] != grand {
		t.Errorf("trace_filter: %v", ids(runs))
	}
	e.must(400, e.do("POST", "/otel/v1/traces", []byte("bad"), "Content-Type", "application/x-protobuf"))
}

// A batch whose queue message is lost is applied by the sweep.
func TestSweepAppliesOrphanedBatches(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.bus.mu.Lock()
	e.bus.drop[tracing.TopicIngest] = true
	e.bus.mu.Unlock()
	id := newID()
	e.must(202, e.do("POST", "/runs", map[string]any{"id": id, "name": "r", "run_type": "chain", "session_name": "sw"}))
	e.drain()
	e.must(404, e.do("GET", "/runs/"+id, nil))
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.must(404, e.do("GET", "/runs/"+id, nil)) // too recent: its message may still come
	e.clock.advance(tracing.IngestGrace + time.Minute)
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.must(200, e.do("GET", "/runs/"+id, nil))
	var left int
	_ = e.bkt.List(context.Background(), "tracing/ingest/", func(string, int64) error { left++; return nil })
	if left != 0 {
		t.Errorf("%d batches left", left)
	}
	// Blob folders past their expiry day go; run items expire by TTL.
	e.clock.advance(401 * 24 * time.Hour)
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	var blobsLeft []string
	_ = e.bkt.List(context.Background(), "tracing/runs/", func(k string, _ int64) error { blobsLeft = append(blobsLeft, k); return nil })
	if len(blobsLeft) != 0 {
		t.Errorf("expired blobs left: %v", blobsLeft)
	}
}

func TestRequestLimits(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := `{"name":"x","run_type":"chain","inputs":{"a":"` + strings.Repeat("a", 21<<20) + `"}}`
	if r := e.do("POST", "/runs", big); r.code != 413 {
		t.Errorf("oversized: %d", r.code)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/runs/"+newID(), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Errorf("no key: %d", res.StatusCode)
	}
}
