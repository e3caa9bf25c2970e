package toolserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/domains/toolserver/platformtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	keyA = "key-tenant-a"
	keyB = "key-tenant-b"
	wsA  = "11111111-1111-4111-8111-111111111111"
	wsB  = "22222222-2222-4222-8222-222222222222"
)

// world is the platform double with two tenants, and the tool server over
// it, served on 127.0.0.1.
type world struct {
	platform *platformtest.Server
	svc      *toolserver.Service
	srv      *httptest.Server
	a, b     *platformtest.Tenant
	// ids of tenant A's objects
	project, experiment, dataset, example, trace string
	commit                                       string
	thread                                       []map[string]any
}

// fixtures: tenant A holds a traced conversation, a trace, a dataset with
// versions, prompts, an experiment and billing usage; tenant B holds
// objects of the same names with different content.
func newWorld(t testing.TB, mutate ...func(*toolserver.Options)) *world {
	t.Helper()
	w := &world{a: platformtest.NewTenant(wsA, "Alpha workspace"), b: platformtest.NewTenant(wsB, "Beta workspace")}
	a := w.a
	w.a.Workspaces = append(w.a.Workspaces, map[string]any{"id": "33333333-3333-4333-8333-333333333333", "display_name": "Alpha staging"})
	w.project = a.AddProject("chat-app", "", map[string]any{"extra": map[string]any{"metadata": map[string]any{"deployment_id": "dep-123"}}})
	a.AddProject("batch-jobs", "", nil)
	w.thread = a.AddThread(w.project, "thread-a", 40, 300)
	a.AddThread(w.project, "thread-other", 2, 10)
	w.trace = a.AddTrace(w.project, "agent-run", 30, 2000, platformtest.Base.Add(time.Hour))
	w.dataset = a.AddDataset("qa-pairs", "kv", "Questions and answers", map[string]any{"team": "support"})
	a.AddDataset("chats", "chat", "Chat logs", map[string]any{"team": "growth"})
	v1 := platformtest.Base
	v2 := platformtest.Base.Add(24 * time.Hour)
	w.example = a.AddExample(w.dataset, "q1",
		platformtest.ExampleVersion{At: v1, Inputs: map[string]any{"question": "What is 2+2?"}, Outputs: map[string]any{"answer": "5"}, Metadata: map[string]any{"dataset_split": "train"}},
		platformtest.ExampleVersion{At: v2, Inputs: map[string]any{"question": "What is 2+2?"}, Outputs: map[string]any{"answer": "4"}, Metadata: map[string]any{"dataset_split": "train"},
			AttachmentURLs: map[string]any{"attachment.photo": map[string]any{"presigned_url": "https://files.example/photo", "mime_type": "image/png"}}},
	)
	a.AddExample(w.dataset, "q2", platformtest.ExampleVersion{At: v2, Inputs: map[string]any{"question": "Capital of France?"}, Outputs: map[string]any{"answer": "Paris"}, Metadata: map[string]any{"dataset_split": "test"}})
	a.TagVersion(w.dataset, "v1", v1.Add(time.Hour))
	w.experiment = a.AddProject("qa-pairs-baseline", w.dataset, map[string]any{
		"latency_p50": 1.5, "latency_p99": "PT2M3.5S", "total_cost": "0.0421", "prompt_cost": "0.0200", "completion_cost": 0.0221,
		"feedback_stats": map[string]any{"correct": map[string]any{"n": 2, "avg": 0.5}},
	})
	w.commit = a.AddPrompt("support-answer", "You answer support questions in {language}.", false, platformtest.Base.Add(2*time.Hour))
	a.AddPrompt("public-greeter", "Greet the user.", true, platformtest.Base.Add(time.Hour))
	a.AddUsage("traces", platformtest.Base.AddDate(0, 0, -1), map[string]any{wsA: 1200, "33333333-3333-4333-8333-333333333333": 30})
	a.AddUsage("traces", platformtest.Base.AddDate(0, -3, 0), map[string]any{wsA: 99})

	b := w.b
	pb := b.AddProject("chat-app", "", nil)
	b.AddThread(pb, "thread-a", 3, 20)
	b.AddTrace(pb, "agent-run", 3, 10, platformtest.Base)
	db := b.AddDataset("qa-pairs", "kv", "Tenant B's dataset", nil)
	b.AddExample(db, "b1", platformtest.ExampleVersion{At: platformtest.Base, Inputs: map[string]any{"question": "B only?"}, Outputs: map[string]any{"answer": "yes"}})
	b.AddPrompt("support-answer", "Tenant B prompt.", false, platformtest.Base)
	b.AddUsage("traces", platformtest.Base.AddDate(0, 0, -1), map[string]any{wsB: 7})

	w.platform = platformtest.New(map[string]*platformtest.Tenant{keyA: w.a, keyB: w.b})
	t.Cleanup(w.platform.Close)
	opts := toolserver.Options{DefaultEndpoint: w.platform.URL}
	for _, m := range mutate {
		m(&opts)
	}
	svc, err := toolserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	w.svc = svc
	w.srv = httptest.NewServer(svc.Handler())
	t.Cleanup(w.srv.Close)
	return w
}

// headerTransport adds the caller's credential headers to every request.
type headerTransport struct {
	h    http.Header
	next http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}

// connect opens an MCP session of the Go SDK's client over streamable
// HTTP with the given credential headers.
func connect(t testing.TB, url string, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolserver-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             url + "/mcp",
		HTTPClient:           &http.Client{Transport: headerTransport{h: h, next: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (w *world) session(t testing.TB, key string) *mcp.ClientSession {
	return connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: key})
}

// call calls a tool and returns its structured result (or its error
// object), failing the test on a protocol error.
func call(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("%s: no content", tool)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T", tool, res.Content[0])
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil && res.IsError {
		// The SDK's own argument validation answers plain text.
		return map[string]any{"error": text.Text}, true
	} else if err != nil {
		t.Fatalf("%s: text is not a JSON object: %v: %.200s", tool, err, text.Text)
	}
	if !res.IsError {
		sc, _ := json.Marshal(res.StructuredContent)
		tc, _ := json.Marshal(out)
		if string(sc) != string(tc) {
			t.Fatalf("%s: structured content differs from text", tool)
		}
	}
	return out, res.IsError
}

// ok calls a tool that must succeed.
func ok(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	out, isErr := call(t, cs, tool, args)
	if isErr {
		t.Fatalf("%s(%v): tool error: %v", tool, args, out["error"])
	}
	return out
}

// fails calls a tool that must fail, returning its message.
func fails(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any, want string) {
	t.Helper()
	out, isErr := call(t, cs, tool, args)
	msg, _ := out["error"].(string)
	if !isErr || !strings.Contains(msg, want) {
		t.Fatalf("%s(%v): want an error containing %q, got isError=%v %v", tool, args, want, isErr, out)
	}
	t.Logf("%s: %s", tool, msg)
}

func items(v any) []map[string]any {
	l, _ := v.([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

func names(v any, key string) []string {
	var out []string
	for _, m := range items(v) {
		s, _ := m[key].(string)
		out = append(out, s)
	}
	return out
}

func callRaw(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

func textOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatal("no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

func newLocalServer(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
