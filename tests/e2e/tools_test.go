package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerTransport adds the caller's credential headers to every request.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// session opens an MCP session of the Go SDK's client on the tool server
// with these credential headers.
func session(t testing.TB, mcpURL string, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentplane-e2e-go", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: mcpURL + "/mcp", HTTPClient: &http.Client{Transport: headerTransport{h}}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// result is a tool's answer: its JSON (or markdown text) and whether it is
// a tool error.
type result struct {
	text  string
	value map[string]any
	err   bool
}

func callTool(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", tool, res.Content[0])
	}
	r := result{text: tc.Text, err: res.IsError}
	if json.Unmarshal([]byte(tc.Text), &r.value) == nil {
		// The structured content is the same object as the text.
		sc, _ := json.Marshal(res.StructuredContent)
		var v map[string]any
		if json.Unmarshal(sc, &v) != nil || !reflect.DeepEqual(v, r.value) {
			t.Fatalf("%s: structuredContent %s differs from the text %s", tool, sc, tc.Text)
		}
	}
	return r
}

func ok(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	r := callTool(t, cs, tool, args)
	if r.err {
		t.Fatalf("%s(%v): %s", tool, args, r.text)
	}
	return r.value
}

func fails(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, want string) {
	t.Helper()
	r := callTool(t, cs, tool, args)
	if !r.err {
		t.Fatalf("%s(%v) should fail: %.300s", tool, args, r.text)
	}
	if msg, _ := r.value["error"].(string); !strings.Contains(msg, want) {
		t.Fatalf("%s(%v): error %q, want it to contain %q", tool, args, msg, want)
	}
}

// list is the items under key of an answer.
func list(t testing.TB, v map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := v[key].([]any)
	if !ok {
		t.Fatalf("no %q list in %v", key, v)
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i], _ = x.(map[string]any)
	}
	return out
}

func ids(items []map[string]any, key string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it[key].(string)
	}
	sort.Strings(out)
	return out
}

func sorted(xs ...string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

func eq(t testing.TB, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}

// walk reads every page of a character-paginated call; each page must
// fit the budget and answer the same bytes when asked again.
func walk(t testing.TB, cs *mcp.ClientSession, tool, key string, args map[string]any) []map[string]any {
	t.Helper()
	budget := args["max_chars_per_page"].(int)
	var items []map[string]any
	total := -1
	for p := 1; total < 0 || p <= total; p++ {
		a := map[string]any{"page_number": p}
		for k, v := range args {
			a[k] = v
		}
		r := callTool(t, cs, tool, a)
		if r.err {
			t.Fatalf("%s page %d: %s", tool, p, r.text)
		}
		if again := callTool(t, cs, tool, a); again.text != r.text {
			t.Fatalf("%s page %d differs when asked again", tool, p)
		}
		n, _ := r.value["total_pages"].(float64)
		if total < 0 {
			total = int(n)
		} else if int(n) != total {
			t.Fatalf("page %d: total_pages %v, page 1 said %d", p, n, total)
		}
		page := list(t, r.value, key)
		raw, _ := json.Marshal(r.value[key])
		if trunc, _ := r.value["_truncated"].(bool); !trunc && utf8.RuneCount(raw) > budget {
			t.Fatalf("page %d: %d characters, budget %d", p, utf8.RuneCount(raw), budget)
		}
		if len(page) == 0 {
			t.Fatalf("page %d of %d is empty", p, total)
		}
		items = append(items, page...)
	}
	if total < 3 {
		t.Fatalf("%s: only %d pages", tool, total)
	}
	return items
}

// checkTenant calls every tool as tn and checks the answers hold tn's
// data, and nothing of other's: the same names resolve to tn's objects,
// and other's ids are not found.
func checkTenant(t *testing.T, cs *mcp.ClientSession, tn, other *tenant, endpoint string) {
	noLeak := func(what string, v any) {
		t.Helper()
		raw, _ := json.Marshal(v)
		if strings.Contains(string(raw), other.Marker) || strings.Contains(string(raw), other.WS) {
			t.Fatalf("%s shows the other tenant's data: %.400s", what, raw)
		}
	}

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
				t.Errorf("%s is not marked read-only", tool.Name)
			}
		}
		eq(t, "tools", sorted(names...), sorted(toolserver.ToolNames...))
	})

	t.Run("get_thread_history", func(t *testing.T) {
		for _, budget := range []int{1500, 3700} {
			got := walk(t, cs, "get_thread_history", "result", map[string]any{
				"thread_id": threadID, "project_name": projectName, "max_chars_per_page": budget, "preview_chars": 0})
			eq(t, fmt.Sprintf("messages at %d characters a page", budget), got, tn.Messages)
		}
		first := ok(t, cs, "get_thread_history", map[string]any{"thread_id": threadID, "project_name": projectName, "page_number": 1})
		msg := list(t, first, "result")[0]["content"].(string)
		full := tn.Messages[0].(map[string]any)["content"].(string)
		if utf8.RuneCountInString(full) <= 150 {
			t.Fatalf("message 0 is too short to be cut: %q", full)
		}
		if want := string([]rune(full)[:150]) + fmt.Sprintf("… (+%d chars)", utf8.RuneCountInString(full)-150); msg != want {
			t.Fatalf("preview %q, want %q", msg, want)
		}
		fails(t, cs, "get_thread_history", map[string]any{"thread_id": "no-such-thread", "project_name": projectName, "page_number": 1}, "No runs found")
	})

	t.Run("fetch_runs", func(t *testing.T) {
		all := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1}), "runs")
		if len(all) != len(tn.RunIDs) {
			t.Fatalf("%d runs, want %d", len(all), len(tn.RunIDs))
		}
		for _, r := range all {
			if !tn.RunIDs[r["id"].(string)] {
				t.Fatalf("run %v is not %s's", r["id"], tn.Name)
			}
		}
		roots := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1, "is_root": "true"}), "runs")
		if len(roots) != tn.Roots {
			t.Fatalf("%d roots, want %d", len(roots), tn.Roots)
		}
		errs := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1, "error": "true"}), "runs")
		eq(t, "errors", ids(errs, "id"), []string{tn.ErrorTrace})
		eq(t, "error text", errs[0]["error"], "boom "+tn.Marker)
		llm := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 2, "page_number": 1, "run_type": "llm", "order_by": "start_time", "preview_chars": 0}), "runs")
		eq(t, "first model output", llm[0]["outputs"].(map[string]any)["choices"].([]any)[0].(map[string]any)["message"], tn.Messages[1])
		fb := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 5, "page_number": 1, "filter": `eq(feedback_key, "helpfulness")`}), "runs")
		eq(t, "runs with feedback", ids(fb, "id"), []string{tn.TurnRoot0})
		trace := walk(t, cs, "fetch_runs", "runs", map[string]any{"project_name": projectName, "limit": 100, "trace_id": tn.TraceID, "max_chars_per_page": 1200, "preview_chars": 0})
		eq(t, "the trace's runs", ids(trace, "id"), sorted(tn.TraceRuns...))
		// The other tenant's trace, by id, in a project of the same name.
		eq(t, "other's trace", ok(t, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1, "trace_id": other.TraceID})["runs"], []any{})
		ex := list(t, ok(t, cs, "fetch_runs", map[string]any{"project_name": experimentName, "limit": 10, "page_number": 1, "reference_example_id": tn.CurrentExamples[0]}), "runs")
		if len(ex) != 1 || ex[0]["reference_example_id"] != tn.CurrentExamples[0] {
			t.Fatalf("runs of the example: %v", ex)
		}
		noLeak("fetch_runs", all)
	})

	t.Run("list_projects", func(t *testing.T) {
		eq(t, "projects", ok(t, cs, "list_projects", map[string]any{"limit": 100})["projects"],
			[]any{map[string]any{"name": projectName, "project_id": tn.ProjectID}})
		eq(t, "experiments", ok(t, cs, "list_projects", map[string]any{"reference_dataset_name": datasetName})["projects"],
			[]any{map[string]any{"name": experimentName, "project_id": tn.ExperimentID}})
		full := list(t, ok(t, cs, "list_projects", map[string]any{"more_info": "true"}), "projects")
		if len(full) != 1 || full[0]["tenant_id"] != tn.WS || full[0]["description"] != tn.Name {
			t.Fatalf("more_info: %v", full)
		}
		// The other tenant's dataset, by id: no experiments, as for any unknown id.
		eq(t, "other's experiments", ok(t, cs, "list_projects", map[string]any{"reference_dataset_id": other.DatasetID})["projects"], []any{})
	})

	t.Run("list_experiments", func(t *testing.T) {
		for _, args := range []map[string]any{{"reference_dataset_name": datasetName}, {"reference_dataset_id": tn.DatasetID}} {
			exps := list(t, ok(t, cs, "list_experiments", args), "experiments")
			if len(exps) != 1 || exps[0]["experiment_id"] != tn.ExperimentID || exps[0]["name"] != experimentName {
				t.Fatalf("experiments: %v", exps)
			}
			eq(t, "feedback_stats", exps[0]["feedback_stats"], map[string]any{"correctness": map[string]any{"n": 2, "avg": tn.ExperimentScore}})
			// The latency histogram is within 4.5%.
			if p50, _ := exps[0]["latency_p50_seconds"].(float64); math.Abs(p50-tn.ExperimentLatency) > 0.05*tn.ExperimentLatency {
				t.Fatalf("latency_p50_seconds %v, want about %v", p50, tn.ExperimentLatency)
			}
		}
		eq(t, "other's experiments", ok(t, cs, "list_experiments", map[string]any{"reference_dataset_id": other.DatasetID})["experiments"], []any{})
	})

	t.Run("get_billing_usage", func(t *testing.T) {
		q, _ := url.ParseQuery(usageRange())
		usage := list(t, ok(t, cs, "get_billing_usage", map[string]any{"starting_on": q.Get("starting_on"), "ending_before": q.Get("ending_before")}), "usage")
		var traces map[string]any
		for _, u := range usage {
			if u["billable_metric_name"] == "traces" {
				traces = u
			}
		}
		eq(t, "traces", traces["groups"], map[string]any{tn.WS: map[string]any{"workspace_name": tn.Name, "value": tn.Traces}})
		eq(t, "value", traces["value"], tn.Traces)
		fails(t, cs, "get_billing_usage", map[string]any{"starting_on": q.Get("starting_on"), "ending_before": q.Get("ending_before"), "workspace": other.Name}, "workspace")
	})

	t.Run("list_prompts, get_prompt_by_name", func(t *testing.T) {
		prompts := list(t, ok(t, cs, "list_prompts", map[string]any{"limit": 100}), "prompts")
		if len(prompts) != 1 || prompts[0]["id"] != tn.PromptID || prompts[0]["repo_handle"] != promptName {
			t.Fatalf("prompts: %v", prompts)
		}
		template := func(p map[string]any) any {
			return p["messages"].([]any)[0].(map[string]any)["prompt"].(map[string]any)["template"]
		}
		latest := ok(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": promptName})
		eq(t, "latest", template(latest), tn.Marker+" v2")
		eq(t, "commit", latest["metadata"].(map[string]any)["lc_hub_commit_hash"], tn.Commit2)
		eq(t, "first", template(ok(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": promptName + ":" + tn.Commit1})), tn.Marker+" v1")
		fails(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": promptName + ":" + other.Commit1}, "not found")
		fails(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": other.WS + "/" + promptName}, "not found")
	})

	t.Run("list_datasets, read_dataset", func(t *testing.T) {
		ds := list(t, ok(t, cs, "list_datasets", map[string]any{}), "datasets")
		if len(ds) != 1 || ds[0]["id"] != tn.DatasetID || ds[0]["example_count"] != 2.0 || ds[0]["session_count"] != 1.0 {
			t.Fatalf("datasets: %v", ds)
		}
		eq(t, "by name", ok(t, cs, "read_dataset", map[string]any{"dataset_name": datasetName})["dataset"].(map[string]any)["id"], tn.DatasetID)
		fails(t, cs, "read_dataset", map[string]any{"dataset_id": other.DatasetID}, "not found")
		eq(t, "other's id", ok(t, cs, "list_datasets", map[string]any{"dataset_ids": other.DatasetID})["datasets"], []any{})
	})

	t.Run("list_examples, read_example", func(t *testing.T) {
		now := list(t, ok(t, cs, "list_examples", map[string]any{"dataset_name": datasetName}), "examples")
		eq(t, "now", ids(now, "id"), sorted(tn.CurrentExamples...))
		for _, asOf := range []string{"initial", tn.V1} {
			then := list(t, ok(t, cs, "list_examples", map[string]any{"dataset_id": tn.DatasetID, "as_of": asOf}), "examples")
			eq(t, "as of "+asOf, ids(then, "id"), sorted(tn.Examples...))
		}
		eq(t, "train now", ids(list(t, ok(t, cs, "list_examples", map[string]any{"dataset_id": tn.DatasetID, "splits": `["train"]`}), "examples"), "id"), sorted(tn.CurrentExamples...))
		eq(t, "test then", ids(list(t, ok(t, cs, "list_examples", map[string]any{"dataset_id": tn.DatasetID, "splits": "test", "as_of": "initial"}), "examples"), "id"), []string{tn.Examples[1]})
		eq(t, "edited", ok(t, cs, "read_example", map[string]any{"example_id": tn.Examples[0]})["example"].(map[string]any)["outputs"], tn.EditedOutputsNow)
		eq(t, "before the edit", ok(t, cs, "read_example", map[string]any{"example_id": tn.Examples[0], "as_of": "initial"})["example"].(map[string]any)["outputs"], tn.EditedOutputsThen)
		eq(t, "deleted, then", ok(t, cs, "read_example", map[string]any{"example_id": tn.Examples[1], "as_of": tn.V1})["example"].(map[string]any)["id"], tn.Examples[1])
		fails(t, cs, "read_example", map[string]any{"example_id": tn.Examples[1]}, "404")
		fails(t, cs, "read_example", map[string]any{"example_id": other.Examples[0]}, "404")
		eq(t, "other's examples", ok(t, cs, "list_examples", map[string]any{"example_ids": other.Examples[0]})["examples"], []any{})
		noLeak("list_examples", now)
	})

	t.Run("documentation tools", func(t *testing.T) {
		for _, tool := range []string{"push_prompt", "create_dataset", "update_examples", "run_experiment"} {
			r := callTool(t, cs, tool, map[string]any{})
			if r.err || !strings.Contains(r.text, endpoint+"/") {
				t.Fatalf("%s does not name %s: %.200s", tool, endpoint, r.text)
			}
		}
	})
}

// Every tool through the Go SDK's client, against the tool server of the
// local server calling the real platform, for two tenants (two workspaces
// with their own keys) at once through the one tool server process: the
// tool server's default endpoint (the platform in process) and a
// SERVICE-ENDPOINT naming the platform's socket.
func TestToolsTwoTenants(t *testing.T) {
	s := start(t)
	a := newTenant(t, s, "Tenant Alpha", "ALPHA", 30)
	b := newTenant(t, s, "Tenant Beta", "BETA", 20)
	a.ExperimentLatency, a.ExperimentScore = 1.2, 1
	b.ExperimentLatency, b.ExperimentScore = 2.5, 0
	// Seeded at the same time, too.
	t.Run("seed", func(t *testing.T) {
		for _, tn := range []*tenant{a, b} {
			t.Run(tn.Name, func(t *testing.T) {
				t.Parallel()
				tn.seed(t, s)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	u, _ := url.Parse(s.API)
	for _, via := range []struct{ name, endpoint string }{
		{"in process", ""},
		{"over the socket", "http://localhost:" + u.Port()},
	} {
		t.Run(via.name, func(t *testing.T) {
			for _, pair := range [][2]*tenant{{a, b}, {b, a}} {
				tn, other := pair[0], pair[1]
				t.Run(tn.Name, func(t *testing.T) {
					t.Parallel()
					h := map[string]string{toolserver.HeaderAPIKey: tn.Key}
					endpoint := s.API
					if via.endpoint != "" {
						h[toolserver.HeaderEndpoint] = via.endpoint
						endpoint = via.endpoint
					}
					checkTenant(t, session(t, s.MCP, h), tn, other, endpoint)
				})
			}
		})
	}
	// The organization's admin sees both workspaces' usage, each by name;
	// a tenant's key sees only its own (above).
	t.Run("billing of the organization", func(t *testing.T) {
		cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: adminKey, toolserver.HeaderWorkspaceID: a.WS})
		q, _ := url.ParseQuery(usageRange())
		usage := list(t, ok(t, cs, "get_billing_usage", map[string]any{"starting_on": q.Get("starting_on"), "ending_before": q.Get("ending_before")}), "usage")
		found := false
		for _, u := range usage {
			if u["billable_metric_name"] == "traces" {
				found = true
				eq(t, "groups", u["groups"], map[string]any{
					a.WS: map[string]any{"workspace_name": a.Name, "value": a.Traces},
					b.WS: map[string]any{"workspace_name": b.Name, "value": b.Traces}})
				eq(t, "value", u["value"], a.Traces+b.Traces)
			}
		}
		if !found {
			t.Fatalf("no traces metric: %v", usage)
		}
		one := list(t, ok(t, cs, "get_billing_usage", map[string]any{"starting_on": q.Get("starting_on"), "ending_before": q.Get("ending_before"), "workspace": b.Name}), "usage")
		eq(t, "one workspace", one[0]["groups"], map[string]any{b.WS: map[string]any{"workspace_name": b.Name, "value": b.Traces}})
	})
	// Many sessions of both tenants at once, interleaved.
	t.Run("concurrent sessions", func(t *testing.T) {
		for i := 0; i < 16; i++ {
			tn, other := a, b
			if i%2 == 1 {
				tn, other = b, a
			}
			t.Run(fmt.Sprintf("%s-%d", tn.Marker, i), func(t *testing.T) {
				t.Parallel()
				cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: tn.Key})
				got := walk(t, cs, "get_thread_history", "result", map[string]any{
					"thread_id": threadID, "project_name": projectName, "max_chars_per_page": 2500, "preview_chars": 0})
				eq(t, "messages", got, tn.Messages)
				ex := list(t, ok(t, cs, "list_examples", map[string]any{"dataset_name": datasetName, "as_of": "initial"}), "examples")
				eq(t, "examples", ids(ex, "id"), sorted(tn.Examples...))
				raw, _ := json.Marshal(ex)
				if strings.Contains(string(raw), other.Marker) {
					t.Fatalf("the other tenant's examples: %s", raw)
				}
			})
		}
	})
}

// A key that reaches both workspaces names one with SERVICE-WORKSPACE-ID;
// without it the platform's refusal is a tool error.
func TestToolsWorkspaceHeader(t *testing.T) {
	s := start(t)
	a := newTenant(t, s, "Tenant Alpha", "ALPHA", 4)
	b := newTenant(t, s, "Tenant Beta", "BETA", 4)
	for _, tn := range []*tenant{a, b} {
		var d struct {
			ID string `json:"id"`
		}
		api(t, s.API, tn.Key, "POST", "/datasets", map[string]any{"name": datasetName, "description": tn.Marker}, 200, &d)
		tn.DatasetID = d.ID
	}
	// The admin key reaches the default workspace and both tenants'.
	fails(t, session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: adminKey}), "list_datasets", map[string]any{}, "X-Tenant-Id")
	for _, tn := range []*tenant{a, b} {
		cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: adminKey, toolserver.HeaderWorkspaceID: tn.WS})
		ds := list(t, ok(t, cs, "list_datasets", map[string]any{}), "datasets")
		if len(ds) != 1 || ds[0]["id"] != tn.DatasetID || ds[0]["description"] != tn.Marker {
			t.Fatalf("%s: %v", tn.Name, ds)
		}
	}
	// A tenant's key naming the other workspace is refused.
	cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: a.Key, toolserver.HeaderWorkspaceID: b.WS})
	fails(t, cs, "list_datasets", map[string]any{}, "403")
}

// Bad arguments of every kind, against the real platform: each call is a
// tool error whose message says what is wrong (or, where the input is only
// odd, a normal answer), never a protocol error, a crash or a 5xx of the
// platform (the server's log is checked when the test ends).
func TestToolsBadArguments(t *testing.T) {
	s := start(t)
	tn := newTenant(t, s, "Tenant Alpha", "ALPHA", 3)
	tn.ExperimentLatency, tn.ExperimentScore = 1, 1
	tn.seed(t, s)
	cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: tn.Key})
	long := strings.Repeat("x", 5000)
	th := func(extra map[string]any) map[string]any {
		a := map[string]any{"thread_id": threadID, "project_name": projectName, "page_number": 1}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	fr := func(extra map[string]any) map[string]any {
		a := map[string]any{"project_name": projectName, "limit": 5, "page_number": 1}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	ds := func(extra map[string]any) map[string]any {
		a := map[string]any{"dataset_id": tn.DatasetID}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	const answers = "" // the call answers normally
	for _, c := range []struct {
		tool string
		args map[string]any
		want string // a part of the error message, or answers
	}{
		{"get_thread_history", th(map[string]any{"page_number": 0}), answers}, // an empty page, with total_pages
		{"get_thread_history", th(map[string]any{"page_number": -3}), answers},
		{"get_thread_history", th(map[string]any{"page_number": 1e12}), answers},
		{"get_thread_history", th(map[string]any{"max_chars_per_page": 0}), "max_chars_per_page"},
		{"get_thread_history", th(map[string]any{"max_chars_per_page": -10}), "max_chars_per_page"},
		{"get_thread_history", th(map[string]any{"preview_chars": -1}), "preview_chars"},
		{"get_thread_history", th(map[string]any{"page_number": "one"}), "page_number"},
		{"get_thread_history", th(map[string]any{"thread_id": ""}), "thread_id"},
		{"get_thread_history", th(map[string]any{"thread_id": "a\u0000b"}), "control characters"},
		{"get_thread_history", th(map[string]any{"thread_id": long, "project_name": long}), "not found"},
		{"fetch_runs", fr(map[string]any{"limit": 0}), "limit"},
		{"fetch_runs", fr(map[string]any{"limit": -1}), "limit"},
		{"fetch_runs", fr(map[string]any{"limit": 100000}), answers}, // clamped to 100
		{"fetch_runs", fr(map[string]any{"project_name": "["}), "JSON array"},
		{"fetch_runs", fr(map[string]any{"project_name": "[]"}), "at least one project"},
		{"fetch_runs", fr(map[string]any{"trace_id": "not-a-uuid"}), "valid UUID"},
		{"fetch_runs", fr(map[string]any{"reference_example_id": "not-a-uuid"}), "valid UUID"},
		{"fetch_runs", fr(map[string]any{"filter": long}), "Invalid filter"},
		{"fetch_runs", fr(map[string]any{"filter": strings.Repeat("and(", 100)}), "nests deeper"},
		{"fetch_runs", fr(map[string]any{"trace_filter": "eq(", "tree_filter": ")"}), "Invalid filter"},
		{"fetch_runs", fr(map[string]any{"run_type": "banana"}), "run_type"},
		{"fetch_runs", fr(map[string]any{"error": "maybe", "is_root": "perhaps"}), answers},          // not "true"/"false": no filter
		{"fetch_runs", fr(map[string]any{"trace_id": tn.TraceID, "max_chars_per_page": 1}), answers}, // cut to fit, marked
		{"list_projects", map[string]any{"limit": -5}, "limit"},
		{"list_projects", map[string]any{"reference_dataset_id": "not-a-uuid"}, "valid UUID"},
		{"list_projects", map[string]any{"project_name": long}, answers},
		{"list_experiments", map[string]any{"reference_dataset_id": "not-a-uuid"}, "valid UUID"},
		{"list_experiments", map[string]any{"reference_dataset_name": long}, "not found"},
		{"list_experiments", map[string]any{"reference_dataset_id": tn.DatasetID, "limit": -1}, "limit"},
		{"get_billing_usage", map[string]any{"starting_on": "2025-13-45", "ending_before": "2025-01-01"}, "starting_on"},
		{"get_billing_usage", map[string]any{"starting_on": "2025-02-01", "ending_before": "2025-01-01"}, "ending_before"},
		{"get_billing_usage", map[string]any{"starting_on": "1900-01-01", "ending_before": "2900-01-01"}, "starting_on"},
		{"get_billing_usage", map[string]any{"starting_on": "", "ending_before": "2025-01-01"}, "starting_on"},
		{"get_billing_usage", map[string]any{"starting_on": "2025-01-01", "ending_before": "2025-02-01", "workspace": long}, "workspace"},
		{"list_prompts", map[string]any{"limit": 0}, "limit"},
		{"get_prompt_by_name", map[string]any{"prompt_name": ""}, "prompt_name"},
		{"get_prompt_by_name", map[string]any{"prompt_name": ":"}, "prompt_name"},
		{"get_prompt_by_name", map[string]any{"prompt_name": "a/b/c"}, "prompt_name"},
		{"get_prompt_by_name", map[string]any{"prompt_name": "../../etc/passwd"}, "prompt_name"},
		{"get_prompt_by_name", map[string]any{"prompt_name": "%2e%2e/x"}, "not found"},
		{"get_prompt_by_name", map[string]any{"prompt_name": promptName + ":zz"}, "not found"},
		{"get_prompt_by_name", map[string]any{"prompt_name": promptName + ":" + strings.Repeat("0", 64)}, "not found"},
		{"get_prompt_by_name", map[string]any{"prompt_name": long}, "not found"},
		{"list_datasets", map[string]any{"dataset_ids": "not-a-uuid"}, "valid UUID"},
		{"list_datasets", map[string]any{"dataset_ids": "[1, 2]"}, "valid UUID"},
		{"list_datasets", map[string]any{"data_type": "table"}, "'kv', 'llm' or 'chat'"},
		{"list_datasets", map[string]any{"metadata": "{"}, "JSON object"},
		{"list_datasets", map[string]any{"metadata": "[1]"}, "JSON object"},
		{"read_dataset", map[string]any{"dataset_id": "not-a-uuid"}, "valid UUID"},
		{"read_dataset", map[string]any{"dataset_id": ""}, "dataset_id or dataset_name"},
		{"list_examples", map[string]any{"dataset_id": "not-a-uuid"}, "valid UUID"},
		{"list_examples", map[string]any{"example_ids": `["x"]`}, "valid UUID"},
		{"list_examples", ds(map[string]any{"as_of": "yesterday"}), `tag "yesterday" not found`},
		{"list_examples", ds(map[string]any{"as_of": "1999-01-01T00:00:00Z"}), answers}, // before the first version: none
		{"list_examples", ds(map[string]any{"splits": "[1"}), "JSON array"},
		{"list_examples", ds(map[string]any{"filter": "eq("}), "Invalid filter"},
		{"list_examples", ds(map[string]any{"metadata": "nope"}), "JSON object"},
		{"list_examples", ds(map[string]any{"offset": "-4"}), "offset"},
		{"list_examples", ds(map[string]any{"offset": "many"}), "offset"},
		{"list_examples", ds(map[string]any{"limit": 100000}), answers},
		{"read_example", map[string]any{"example_id": "not-a-uuid"}, "valid UUID"},
		{"read_example", map[string]any{"example_id": tn.Examples[0], "as_of": "no-such-tag"}, "not found"},
		{"read_example", map[string]any{"example_id": ""}, "example_id"},
	} {
		r := callTool(t, cs, c.tool, c.args)
		switch {
		case c.want == answers && r.err:
			t.Errorf("%s %v: %.300s", c.tool, abbreviate(c.args), r.text)
		case c.want != answers && !r.err:
			t.Errorf("%s %v answered: %.300s", c.tool, abbreviate(c.args), r.text)
		case c.want != answers && !strings.Contains(fmt.Sprint(r.value["error"]), c.want):
			t.Errorf("%s %v: error %.300s, want it to mention %q", c.tool, abbreviate(c.args), r.text, c.want)
		}
	}
	// Still serving.
	eq(t, "after", ok(t, cs, "read_dataset", map[string]any{"dataset_id": tn.DatasetID})["dataset"].(map[string]any)["id"], tn.DatasetID)
}

func abbreviate(args map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		if s, ok := v.(string); ok && len(s) > 40 {
			v = s[:20] + fmt.Sprintf("…(%d)", len(s))
		}
		out[k] = v
	}
	return out
}
