package toolserver_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/domains/toolserver/platformtest"
)

func TestGetThreadHistory(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	args := func(page int, extra map[string]any) map[string]any {
		a := map[string]any{"thread_id": "thread-a", "project_name": "chat-app", "page_number": page}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	first := ok(t, cs, "get_thread_history", args(1, map[string]any{"max_chars_per_page": 5000, "preview_chars": 0}))
	total := int(first["total_pages"].(float64))
	if total < 3 || first["max_chars_per_page"] != 5000.0 || first["preview_chars"] != 0.0 || first["page_number"] != 1.0 {
		t.Fatalf("first page: %v pages, %v", total, first["max_chars_per_page"])
	}
	// Walk every page: the concatenation is the conversation, in order, each message once.
	var all []map[string]any
	for p := 1; p <= total; p++ {
		out := ok(t, cs, "get_thread_history", args(p, map[string]any{"max_chars_per_page": 5000, "preview_chars": 0}))
		if out["total_pages"] != float64(total) {
			t.Fatalf("page %d: total_pages %v", p, out["total_pages"])
		}
		page := items(out["result"])
		b, _ := json.Marshal(out["result"])
		if len(page) == 0 || len(b) > 5000 {
			t.Fatalf("page %d: %d messages, %d characters", p, len(page), len(b))
		}
		all = append(all, page...)
	}
	if len(all) != len(w.thread) {
		t.Fatalf("%d messages, want %d", len(all), len(w.thread))
	}
	for i, m := range all {
		if !reflect.DeepEqual(m, w.thread[i]) {
			t.Fatalf("message %d: %v, want %v", i, m, w.thread[i])
		}
	}
	// The same request gives the same page.
	again := ok(t, cs, "get_thread_history", args(2, map[string]any{"max_chars_per_page": 5000, "preview_chars": 0}))
	second := ok(t, cs, "get_thread_history", args(2, map[string]any{"max_chars_per_page": 5000, "preview_chars": 0}))
	if !reflect.DeepEqual(again, second) {
		t.Fatal("page 2 differs between identical requests")
	}
	// Defaults: 25000 characters, previews of 150 characters marked with the count removed.
	def := ok(t, cs, "get_thread_history", args(1, nil))
	if def["max_chars_per_page"] != 25000.0 || def["preview_chars"] != 150.0 {
		t.Fatalf("defaults: %v %v", def["max_chars_per_page"], def["preview_chars"])
	}
	content := items(def["result"])[0]["content"].(string)
	full := w.thread[0]["content"].(string)
	if want := string([]rune(full)[:150]) + fmt.Sprintf("… (+%d chars)", len([]rune(full))-150); content != want {
		t.Fatalf("preview: %q", content)
	}
	// The cap, and pages outside the range.
	if out := ok(t, cs, "get_thread_history", args(1, map[string]any{"max_chars_per_page": 100000})); out["max_chars_per_page"] != 30000.0 {
		t.Fatalf("cap: %v", out["max_chars_per_page"])
	}
	for _, p := range []int{0, -3, total + 1, 1 << 30} {
		out := ok(t, cs, "get_thread_history", args(p, map[string]any{"max_chars_per_page": 5000, "preview_chars": 0}))
		if len(items(out["result"])) != 0 || out["total_pages"] != float64(total) || out["page_number"] != float64(p) {
			t.Fatalf("page %d: %v", p, out)
		}
	}
	// A message larger than the budget is cut to fit and marked.
	big := ok(t, cs, "get_thread_history", args(1, map[string]any{"max_chars_per_page": 200, "preview_chars": 0}))
	if big["_truncated"] != true || big["_truncated_message"] == "" || len(items(big["result"])) != 1 {
		t.Fatalf("oversized message: %v", big)
	}
	// The query sent: the project's LLM runs with the thread filter, at most 100.
	var q map[string]any
	for _, r := range w.platform.Requests() {
		if r.Path == "/runs/query" {
			q = r.Body
		}
	}
	if q["run_type"] != "llm" || q["limit"] != 100.0 || !reflect.DeepEqual(q["session"], []any{w.project}) ||
		q["filter"] != `and(in(metadata_key, ["session_id","conversation_id","thread_id"]), eq(metadata_value, "thread-a"))` {
		t.Fatalf("query: %v", q)
	}
	// Errors.
	fails(t, cs, "get_thread_history", map[string]any{"thread_id": "nope", "project_name": "chat-app", "page_number": 1}, "No runs found for thread nope in project chat-app")
	fails(t, cs, "get_thread_history", map[string]any{"thread_id": "thread-a", "project_name": "missing", "page_number": 1}, `project "missing" not found`)
	fails(t, cs, "get_thread_history", map[string]any{"thread_id": `x") , eq(name, "y`, "project_name": "chat-app", "page_number": 1}, "quotes")
}

func TestFetchRuns(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	// Without trace_id: one batch of up to limit, newest first.
	out := ok(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 10, "page_number": 1})
	runs := items(out["runs"])
	if len(runs) != 10 || out["total_pages"] != 1.0 || out["page_number"] != 1.0 {
		t.Fatalf("batch: %d runs, %v", len(runs), out["total_pages"])
	}
	for i := 1; i < len(runs); i++ {
		if runs[i-1]["start_time"].(string) < runs[i]["start_time"].(string) {
			t.Fatal("not newest first")
		}
	}
	if p2 := ok(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 10, "page_number": 2}); len(items(p2["runs"])) != 0 || p2["total_pages"] != 1.0 {
		t.Fatalf("page 2 of a batch: %v", p2)
	}
	// Oldest first, the cap of 100, and cursors followed when the platform pages by 7.
	w.platform.SetMaxPage(7)
	asc := items(ok(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 500, "page_number": 1, "order_by": "start_time", "preview_chars": 0})["runs"])
	if len(asc) != 72 || asc[0]["start_time"].(string) > asc[1]["start_time"].(string) {
		t.Fatalf("asc: %d runs", len(asc))
	}
	if got := items(ok(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 50, "page_number": 1})["runs"]); len(got) != 50 {
		t.Fatalf("limit 50 over pages of 7: %d", len(got))
	}
	w.platform.SetMaxPage(0)
	// Filters.
	count := func(args map[string]any) int {
		a := map[string]any{"project_name": "chat-app", "limit": 100, "page_number": 1}
		for k, v := range args {
			a[k] = v
		}
		return len(items(ok(t, cs, "fetch_runs", a)["runs"]))
	}
	for want, args := range map[int]map[string]any{
		57: {"run_type": "llm"},
		14: {"run_type": "tool"},
		5:  {"error": "true"},
		67: {"error": "FALSE"},
		72: {"error": "maybe"},
		43: {"is_root": "true"},
		29: {"is_root": "false"},
		1:  {"filter": `eq(name, "step-7")`},
		15: {"filter": `and(eq(run_type, "llm"), has(tags, "step"))`, "trace_filter": `eq(name, "agent-run")`},
		30: {"tree_filter": `eq(name, "step-3")`},
		2:  {"filter": `and(in(metadata_key, ["thread_id"]), eq(metadata_value, "thread-other"))`},
	} {
		if got := count(args); got != want {
			t.Errorf("%v: %d runs, want %d", args, got, want)
		}
	}
	// Several projects as a JSON array string.
	if n := count(map[string]any{"project_name": `["chat-app","batch-jobs"]`}); n != 72 {
		t.Fatalf("two projects: %d", n)
	}
	// With trace_id: the trace's runs, paginated by characters.
	args := func(page int) map[string]any {
		return map[string]any{"project_name": "chat-app", "limit": 100, "page_number": page, "trace_id": w.trace, "max_chars_per_page": 8000, "preview_chars": 500}
	}
	first := ok(t, cs, "fetch_runs", args(1))
	total := int(first["total_pages"].(float64))
	seen := map[string]bool{}
	var order []string
	for p := 1; p <= total; p++ {
		for _, r := range items(ok(t, cs, "fetch_runs", args(p))["runs"]) {
			id := r["id"].(string)
			if seen[id] || r["trace_id"] != w.trace {
				t.Fatalf("run %s repeated or outside the trace", id)
			}
			seen[id] = true
			order = append(order, id)
			if in := r["inputs"].(map[string]any)["input"].(string); !strings.HasSuffix(in, " chars)") {
				t.Fatalf("preview not applied: %.80q", in)
			}
		}
	}
	if total < 3 || len(order) != 30 {
		t.Fatalf("trace: %d pages, %d runs", total, len(order))
	}
	// Errors are tool errors with the platform's reason.
	fails(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 5, "page_number": 1, "filter": "eq(name"}, "Invalid filter")
	fails(t, cs, "fetch_runs", map[string]any{"project_name": "nope", "limit": 5, "page_number": 1}, `project "nope" not found`)
	fails(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 5, "page_number": 1, "order_by": "-total_tokens"}, "order_by")
	fails(t, cs, "fetch_runs", map[string]any{"project_name": `["a",`, "limit": 5, "page_number": 1}, "JSON array")
	fails(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app", "limit": 0, "page_number": 1}, "validating")
}

func TestListProjects(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	out := ok(t, cs, "list_projects", map[string]any{})
	projects := items(out["projects"])
	if len(projects) != 2 { // reference-free projects only: the experiment is left out
		t.Fatalf("projects: %v", out)
	}
	for _, p := range projects {
		if p["name"] == "chat-app" && (p["project_id"] != w.project || p["agent_deployment_id"] != "dep-123") {
			t.Fatalf("chat-app: %v", p)
		}
		if len(p) > 3 {
			t.Fatalf("simplified project has %v", p)
		}
	}
	if n := names(ok(t, cs, "list_projects", map[string]any{"project_name": "BATCH"})["projects"], "name"); !slices.Equal(n, []string{"batch-jobs"}) {
		t.Fatalf("name filter: %v", n)
	}
	if n := len(items(ok(t, cs, "list_projects", map[string]any{"limit": 1})["projects"])); n != 1 {
		t.Fatalf("limit: %d", n)
	}
	full := items(ok(t, cs, "list_projects", map[string]any{"more_info": "true", "reference_dataset_name": "qa-pairs"})["projects"])
	if len(full) != 1 || full[0]["id"] != w.experiment || full[0]["tenant_id"] != wsA {
		t.Fatalf("more_info with dataset: %v", full)
	}
	if n := names(ok(t, cs, "list_projects", map[string]any{"reference_dataset_id": w.dataset})["projects"], "name"); !slices.Equal(n, []string{"qa-pairs-baseline"}) {
		t.Fatalf("dataset id filter: %v", n)
	}
	fails(t, cs, "list_projects", map[string]any{"reference_dataset_id": w.dataset, "reference_dataset_name": "qa-pairs"}, "only one")
	fails(t, cs, "list_projects", map[string]any{"reference_dataset_name": "nope"}, `dataset "nope" not found`)
}

func TestListExperiments(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	for _, args := range []map[string]any{{"reference_dataset_id": w.dataset}, {"reference_dataset_name": "qa-pairs", "project_name": "baseline"}} {
		ex := items(ok(t, cs, "list_experiments", args)["experiments"])
		if len(ex) != 1 {
			t.Fatalf("%v: %v", args, ex)
		}
		e := ex[0]
		want := map[string]any{
			"name": "qa-pairs-baseline", "experiment_id": w.experiment, "latency_p50_seconds": 1.5, "latency_p99_seconds": 123.5,
			"total_cost": 0.0421, "prompt_cost": 0.02, "completion_cost": 0.0221,
			"feedback_stats": map[string]any{"correct": map[string]any{"n": 2.0, "avg": 0.5}},
		}
		if !reflect.DeepEqual(e, want) {
			t.Fatalf("experiment: %v", e)
		}
	}
	if ex := items(ok(t, cs, "list_experiments", map[string]any{"reference_dataset_id": w.dataset, "project_name": "other"})["experiments"]); len(ex) != 0 {
		t.Fatalf("name filter: %v", ex)
	}
	fails(t, cs, "list_experiments", map[string]any{}, "must be provided")
	fails(t, cs, "list_experiments", map[string]any{"reference_dataset_id": w.dataset, "reference_dataset_name": "qa-pairs"}, "only one")
}

func TestDatasets(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	all := ok(t, cs, "list_datasets", map[string]any{})
	if all["total_count"] != 2.0 {
		t.Fatalf("datasets: %v", all)
	}
	d := items(all["datasets"])[0]
	var keys []string
	for k := range d {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "data_type", "description", "example_count", "id", "inputs_schema_definition", "last_session_start_time", "modified_at", "name", "outputs_schema_definition", "session_count"}; !slices.Equal(keys, want) {
		t.Fatalf("dataset fields: %v", keys)
	}
	if !reflect.DeepEqual(d["inputs_schema_definition"], map[string]any{"type": "object"}) {
		t.Fatalf("schema definitions are passed through: %v", d["inputs_schema_definition"])
	}
	for want, args := range map[string]map[string]any{
		"qa-pairs": {"dataset_ids": `["` + w.dataset + `"]`},
		"chats":    {"data_type": "chat"},
	} {
		if n := names(ok(t, cs, "list_datasets", args)["datasets"], "name"); !slices.Equal(n, []string{want}) {
			t.Errorf("%v: %v", args, n)
		}
	}
	for args, want := range map[string][]string{
		`{"dataset_ids":"` + w.dataset + `"}`:   {"qa-pairs"},
		`{"dataset_name":"chats"}`:              {"chats"},
		`{"dataset_name_contains":"PAIR"}`:      {"qa-pairs"},
		`{"metadata":"{\"team\": \"growth\"}"}`: {"chats"},
		`{"limit":1}`:                           {"qa-pairs"},
	} {
		var a map[string]any
		_ = json.Unmarshal([]byte(args), &a)
		if n := names(ok(t, cs, "list_datasets", a)["datasets"], "name"); !slices.Equal(n, want) {
			t.Errorf("%s: %v", args, n)
		}
	}
	fails(t, cs, "list_datasets", map[string]any{"metadata": "team=growth"}, "JSON object")

	for _, args := range []map[string]any{{"dataset_id": w.dataset}, {"dataset_name": "qa-pairs"}, {"dataset_id": w.dataset, "dataset_name": "chats"}} {
		if got := ok(t, cs, "read_dataset", args)["dataset"].(map[string]any); got["name"] != "qa-pairs" || got["example_count"] != 2.0 {
			t.Fatalf("read_dataset %v: %v", args, got)
		}
	}
	fails(t, cs, "read_dataset", map[string]any{"dataset_name": "nope"}, `dataset "nope" not found`)
	fails(t, cs, "read_dataset", map[string]any{}, "must be provided")
}

func TestExamples(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	list := func(args map[string]any) []map[string]any {
		return items(ok(t, cs, "list_examples", args)["examples"])
	}
	ex := list(map[string]any{"dataset_id": w.dataset})
	if len(ex) != 2 {
		t.Fatalf("examples: %v", ex)
	}
	e := ex[0]
	if e["id"] != w.example || e["dataset_id"] != w.dataset || e["runs"] != nil || e["attachments"] != nil ||
		!reflect.DeepEqual(e["outputs"], map[string]any{"answer": "4"}) || len(e) != 10 {
		t.Fatalf("example: %v", e)
	}
	if n := len(list(map[string]any{"dataset_name": "qa-pairs", "splits": "test"})); n != 1 {
		t.Fatalf("split: %d", n)
	}
	if n := len(list(map[string]any{"dataset_name": "qa-pairs", "splits": `["train","test"]`, "limit": 1, "offset": "1"})); n != 1 {
		t.Fatalf("limit and offset: %d", n)
	}
	if got := list(map[string]any{"example_ids": w.example, "dataset_name": "ignored"}); len(got) != 1 || got[0]["id"] != w.example {
		t.Fatalf("by id: %v", got)
	}
	// Versions: by tag and by time, the answer was "5" and the second example did not exist.
	for _, asOf := range []string{"v1", platformtest.Base.Add(3600e9).Format("2006-01-02T15:04:05Z")} {
		old := list(map[string]any{"dataset_id": w.dataset, "as_of": asOf})
		if len(old) != 1 || !reflect.DeepEqual(old[0]["outputs"], map[string]any{"answer": "5"}) {
			t.Fatalf("as_of %s: %v", asOf, old)
		}
	}
	att := list(map[string]any{"dataset_id": w.dataset, "include_attachments": "true"})
	if !reflect.DeepEqual(att[0]["attachments"], map[string]any{"photo": map[string]any{"presigned_url": "https://files.example/photo", "mime_type": "image/png"}}) {
		t.Fatalf("attachments: %v", att[0]["attachments"])
	}
	fails(t, cs, "list_examples", map[string]any{}, "must be provided")
	fails(t, cs, "list_examples", map[string]any{"dataset_id": w.dataset, "offset": "ten"}, "offset")
	fails(t, cs, "list_examples", map[string]any{"dataset_id": w.dataset, "filter": `has(metadata, '{"a": 1}')`}, "Invalid filter")

	got := ok(t, cs, "read_example", map[string]any{"example_id": w.example})["example"].(map[string]any)
	if !reflect.DeepEqual(got["outputs"], map[string]any{"answer": "4"}) || got["attachments"] == nil {
		t.Fatalf("read_example: %v", got)
	}
	old := ok(t, cs, "read_example", map[string]any{"example_id": w.example, "as_of": "v1"})["example"].(map[string]any)
	if !reflect.DeepEqual(old["outputs"], map[string]any{"answer": "5"}) {
		t.Fatalf("read_example as_of: %v", old)
	}
	fails(t, cs, "read_example", map[string]any{"example_id": "no/such"}, "404")
}

func TestPrompts(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	out := ok(t, cs, "list_prompts", map[string]any{})
	ps := items(out["prompts"])
	if len(ps) != 1 || ps[0]["repo_handle"] != "support-answer" || out["total_count"] != 1.0 || len(ps[0]) != 12 {
		t.Fatalf("private prompts: %v", out)
	}
	if n := names(ok(t, cs, "list_prompts", map[string]any{"is_public": "True", "limit": 5})["prompts"], "repo_handle"); !slices.Equal(n, []string{"public-greeter"}) {
		t.Fatalf("public prompts: %v", n)
	}
	for _, name := range []string{"support-answer", "-/support-answer", "support-answer:" + w.commit[:8], "support-answer:latest"} {
		p := ok(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": name})
		meta := p["metadata"].(map[string]any)
		if p["_type"] != "ChatPromptTemplate" || meta["lc_hub_repo"] != "support-answer" || meta["lc_hub_commit_hash"] != w.commit {
			t.Fatalf("%s: %v", name, p)
		}
		msgs := items(p["messages"])
		tmpl := msgs[0]["prompt"].(map[string]any)
		if len(msgs) != 2 || msgs[0]["_type"] != "SystemMessagePromptTemplate" || tmpl["template"] != "You answer support questions in {language}." {
			t.Fatalf("%s messages: %v", name, msgs)
		}
	}
	fails(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": "nope"}, `prompt "nope" not found`)
	fails(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": "a/b/c"}, "must be")
}

func TestBillingUsage(t *testing.T) {
	// Local mode: the caller may name a loopback endpoint (below).
	w := newWorld(t, func(o *toolserver.Options) { o.AllowLocalEndpoints = true })
	cs := w.session(t, keyA)
	args := map[string]any{"starting_on": "2025-08-01T00:00:00Z", "ending_before": "2025-09-01T00:00:00Z"}
	usage := items(ok(t, cs, "get_billing_usage", args)["usage"])
	if len(usage) != 1 {
		t.Fatalf("usage: %v", usage)
	}
	want := map[string]any{
		wsA:                                    map[string]any{"workspace_name": "Alpha workspace", "value": 1200.0},
		"33333333-3333-4333-8333-333333333333": map[string]any{"workspace_name": "Alpha staging", "value": 30.0},
	}
	if !reflect.DeepEqual(usage[0]["groups"], want) || usage[0]["billable_metric_name"] != "traces" {
		t.Fatalf("groups: %v", usage[0])
	}
	for _, ws := range []string{"alpha STAGING", "33333333-3333-4333-8333-333333333333"} {
		args["workspace"] = ws
		groups := items(ok(t, cs, "get_billing_usage", args)["usage"])[0]["groups"].(map[string]any)
		if len(groups) != 1 || groups["33333333-3333-4333-8333-333333333333"] == nil {
			t.Fatalf("workspace %s: %v", ws, groups)
		}
	}
	args["workspace"] = "nope"
	fails(t, cs, "get_billing_usage", args, `workspace "nope" not found`)
	fails(t, cs, "get_billing_usage", map[string]any{"starting_on": "last week", "ending_before": "2025-09-01T00:00:00Z"}, "ISO 8601")
	fails(t, cs, "get_billing_usage", map[string]any{"starting_on": "2025-08-01T00:00:00Z"}, "validating")
	// The endpoint may already end in /api/v1: billing paths are not doubled.
	cs2 := connect(t, w.srv.URL, map[string]string{"SERVICE-API-KEY": keyA, "SERVICE-ENDPOINT": w.platform.URL + "/api/v1/"})
	args = map[string]any{"starting_on": "2025-08-01T00:00:00Z", "ending_before": "2025-09-01T00:00:00Z"}
	if len(items(ok(t, cs2, "get_billing_usage", args)["usage"])) != 1 {
		t.Fatal("endpoint with /api/v1")
	}
	if n := len(items(ok(t, cs2, "list_datasets", nil)["datasets"])); n != 2 {
		t.Fatalf("SDK paths under /api/v1: %d", n)
	}
}

func TestDocumentationTools(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	for tool, wants := range map[string][]string{
		"push_prompt":     {"POST " + w.platform.URL + "/repos/", "/commits/-/", "push_prompt(", "pushPrompt("},
		"create_dataset":  {"POST " + w.platform.URL + "/datasets", "/examples/bulk", "create_examples(", "createDataset("},
		"update_examples": {"PATCH " + w.platform.URL + "/examples/", "update_example(", "updateExample(", "as_of"},
		"run_experiment":  {"evaluate(", "reference_example_id", "POST " + w.platform.URL + "/feedback", "list_experiments"},
	} {
		res := callRaw(t, cs, tool, nil)
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %v", tool, res)
		}
		text := textOf(t, res)
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("%s: missing %q", tool, want)
			}
		}
		if strings.Contains(text, "{{endpoint}}") {
			t.Errorf("%s: placeholder left", tool)
		}
	}
	if n := len(w.platform.Requests()); n != 0 {
		t.Fatalf("documentation tools called the platform %d times", n)
	}
}
