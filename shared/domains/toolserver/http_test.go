package toolserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHealthAndAuthentication(t *testing.T) {
	w := newWorld(t)
	res, err := http.Get(w.srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || len(body) == 0 {
		t.Fatalf("health: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
	}

	post := func(headers map[string]string, body string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest("POST", w.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res, m
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	// No key, an empty key: 401 in the interface's error shape, no platform call.
	for _, h := range []map[string]string{nil, {toolserver.HeaderAPIKey: "  "}} {
		res, m := post(h, list)
		if res.StatusCode != 401 || m["detail"] != "Missing SERVICE-API-KEY header" || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("no key: %d %v", res.StatusCode, m)
		}
	}
	if n := len(w.platform.Requests()); n != 0 {
		t.Fatalf("%d platform calls without a key", n)
	}
	// With a key, a stateless JSON answer: no session id, any process can serve the next request.
	res, m := post(map[string]string{toolserver.HeaderAPIKey: keyA}, list)
	if res.StatusCode != 200 || res.Header.Get("Mcp-Session-Id") != "" || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("tools/list: %d %v %v", res.StatusCode, res.Header, m)
	}
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatal("no CORS header on /mcp")
	}
	// Other methods: 405 with Allow.
	for _, method := range []string{"GET", "DELETE", "PUT"} {
		req, _ := http.NewRequest(method, w.srv.URL+"/mcp", nil)
		req.Header.Set(toolserver.HeaderAPIKey, keyA)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 405 || !strings.Contains(res.Header.Get("Allow"), "POST") {
			t.Fatalf("%s /mcp: %d %q", method, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	// CORS preflight, without a key.
	req, _ := http.NewRequest("OPTIONS", w.srv.URL+"/mcp", nil)
	req.Header.Set("Origin", "https://inspector.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 204 || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), toolserver.HeaderAPIKey) {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	// Malformed MCP requests are the SDK's 4xx, never a 5xx.
	for _, body := range []string{"", "{", `{"jsonrpc":"2.0","id":1,"method":"nope"}`, `[1,2]`} {
		res, _ := post(map[string]string{toolserver.HeaderAPIKey: keyA}, body)
		if res.StatusCode >= 500 {
			t.Fatalf("body %q: %d", body, res.StatusCode)
		}
	}
}

// The 15 tools with their exact names, required parameters, types and
// documented defaults.
func TestToolsAndSchemas(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, keyA)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
		b, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		_ = json.Unmarshal(b, &s)
		schemas[tool.Name] = s
		if tool.Description == "" || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s: description or read-only annotation missing", tool.Name)
		}
	}
	want := slices.Clone(toolserver.ToolNames)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(got) != 15 {
		t.Fatalf("tools: %v", got)
	}
	required := map[string][]string{
		"list_prompts": {}, "get_prompt_by_name": {"prompt_name"}, "push_prompt": {},
		"get_thread_history": {"thread_id", "project_name", "page_number"},
		"fetch_runs":         {"project_name", "limit", "page_number"},
		"list_projects":      {}, "get_billing_usage": {"starting_on", "ending_before"}, "list_experiments": {},
		"list_datasets": {}, "list_examples": {}, "read_dataset": {}, "read_example": {"example_id"},
		"create_dataset": {}, "update_examples": {}, "run_experiment": {},
	}
	params := map[string][]string{
		"list_prompts":       {"is_public", "limit"},
		"get_prompt_by_name": {"prompt_name"},
		"get_thread_history": {"thread_id", "project_name", "page_number", "max_chars_per_page", "preview_chars"},
		"fetch_runs": {"project_name", "limit", "page_number", "trace_id", "run_type", "error", "is_root", "filter",
			"trace_filter", "tree_filter", "order_by", "reference_example_id", "max_chars_per_page", "preview_chars"},
		"list_projects":     {"limit", "project_name", "more_info", "reference_dataset_id", "reference_dataset_name"},
		"get_billing_usage": {"starting_on", "ending_before", "workspace", "on_current_plan"},
		"list_experiments":  {"reference_dataset_id", "reference_dataset_name", "limit", "project_name"},
		"list_datasets":     {"dataset_ids", "data_type", "dataset_name", "dataset_name_contains", "metadata", "limit"},
		"list_examples": {"dataset_id", "dataset_name", "example_ids", "filter", "metadata", "splits", "inline_s3_urls",
			"include_attachments", "as_of", "limit", "offset"},
		"read_dataset": {"dataset_id", "dataset_name"},
		"read_example": {"example_id", "as_of"},
	}
	for name, s := range schemas {
		if s["type"] != "object" {
			t.Errorf("%s: type %v", name, s["type"])
		}
		var req []string
		reqList, _ := s["required"].([]any)
		for _, r := range reqList {
			req = append(req, r.(string))
		}
		if !slices.Equal(req, required[name]) && !(len(req) == 0 && len(required[name]) == 0) {
			t.Errorf("%s: required %v, want %v", name, req, required[name])
		}
		props, _ := s["properties"].(map[string]any)
		var keys []string
		for k := range props {
			keys = append(keys, k)
		}
		want := append([]string(nil), params[name]...)
		slices.Sort(keys)
		slices.Sort(want)
		if !slices.Equal(keys, want) && !(len(keys) == 0 && len(want) == 0) {
			t.Errorf("%s: parameters %v, want %v", name, keys, want)
		}
	}
	prop := func(tool, p string) map[string]any {
		return schemas[tool]["properties"].(map[string]any)[p].(map[string]any)
	}
	for _, c := range []struct {
		tool, param string
		typ         any
		def         any
	}{
		{"list_prompts", "is_public", "string", "false"},
		{"list_prompts", "limit", "integer", 20.0},
		{"get_thread_history", "max_chars_per_page", "integer", 25000.0},
		{"get_thread_history", "preview_chars", "integer", 150.0},
		{"fetch_runs", "order_by", "string", "-start_time"},
		{"fetch_runs", "max_chars_per_page", "integer", 25000.0},
		{"list_projects", "limit", "integer", 5.0},
		{"list_projects", "more_info", "string", "false"},
		{"get_billing_usage", "on_current_plan", "string", "true"},
		{"list_experiments", "limit", "integer", 5.0},
		{"list_datasets", "limit", "integer", 20.0},
		{"list_examples", "limit", "integer", 10.0},
	} {
		p := prop(c.tool, c.param)
		if p["type"] != c.typ || p["default"] != c.def || p["description"] == "" {
			t.Errorf("%s.%s: %v", c.tool, c.param, p)
		}
	}
	for _, c := range [][2]string{{"fetch_runs", "trace_id"}, {"fetch_runs", "error"}, {"list_examples", "offset"}, {"read_example", "as_of"}} {
		p := prop(c[0], c[1])
		if !reflect.DeepEqual(p["type"], []any{"string", "null"}) || p["default"] != nil {
			t.Errorf("%s.%s: optional parameters take a string or null: %v", c[0], c[1], p)
		}
	}
	if p := prop("get_thread_history", "page_number"); p["type"] != "integer" {
		t.Errorf("page_number: %v", p)
	}
	// The SDK validates arguments against the schema before any platform call.
	before := len(w.platform.Requests())
	fails(t, cs, "fetch_runs", map[string]any{"project_name": "chat-app"}, "validating")
	fails(t, cs, "get_thread_history", map[string]any{"thread_id": "x", "project_name": "p", "page_number": "1"}, "validating")
	fails(t, cs, "read_example", map[string]any{}, "validating")
	if len(w.platform.Requests()) != before {
		t.Fatal("an invalid call reached the platform")
	}
	// An unknown tool is a protocol error, not a crash.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("unknown tool accepted")
	}
}
