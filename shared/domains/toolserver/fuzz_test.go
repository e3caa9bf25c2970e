package toolserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/domains/toolserver/platformtest"
)

// inProcess carries requests to a handler without a network: the form the
// local all-in-one server uses for its own API (Options.DefaultTransport).
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// No request body, however malformed, makes /mcp answer 5xx or panic:
// the SDK's transport checks, argument validation and the tool bodies all
// answer in the protocol's terms.
func FuzzMCPRequest(f *testing.F) {
	tenant := platformtest.NewTenant(wsA, "Alpha")
	project := tenant.AddProject("chat-app", "", nil)
	tenant.AddThread(project, "thread-a", 5, 50)
	tenant.AddTrace(project, "agent-run", 5, 50, platformtest.Base)
	ds := tenant.AddDataset("qa-pairs", "kv", "d", nil)
	tenant.AddExample(ds, "e1", platformtest.ExampleVersion{At: platformtest.Base, Inputs: map[string]any{"q": "x"}})
	tenant.AddPrompt("p", "system", false, platformtest.Base)
	platform := platformtest.New(map[string]*platformtest.Tenant{keyA: tenant})
	defer platform.Close()
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: "http://platform.internal", DefaultTransport: inProcess{platform}})
	if err != nil {
		f.Fatal(err)
	}
	h := svc.Handler()
	call := func(tool string, args any) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
		return string(b)
	}
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_datasets","arguments":null}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_datasets"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_datasets","arguments":[1]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_datasets","arguments":{"limit":null}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":null}`,
		call("get_thread_history", map[string]any{"thread_id": "thread-a", "project_name": "chat-app", "page_number": 1, "max_chars_per_page": 300}),
		call("fetch_runs", map[string]any{"project_name": `["chat-app"]`, "limit": 5, "page_number": 1, "trace_id": platformtest.ID(wsA + "/trace/agent-run"), "filter": "and(eq(name,"}),
		call("list_examples", map[string]any{"dataset_name": "qa-pairs", "splits": "[", "metadata": "{}", "offset": "-1"}),
		call("get_prompt_by_name", map[string]any{"prompt_name": "a/b:c:d"}),
		call("get_billing_usage", map[string]any{"starting_on": "2025", "ending_before": "x", "workspace": ""}),
		call("read_example", map[string]any{"example_id": "../../x?y"}),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`,
		``, `{`, `null`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(toolserver.HeaderAPIKey, keyA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d %s", body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code == 200 && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q: invalid JSON answer %s", body, rec.Body.Bytes())
		}
	})
}
