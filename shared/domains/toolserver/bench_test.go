package toolserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/domains/toolserver/platformtest"
)

// canned answers the platform calls from responses built in memory before
// the benchmark, so the measured time is the tool server's own: the MCP
// request, the tool, decoding the platform's answer, pagination and the
// MCP answer.
type canned map[string][]byte // "METHOD /path" → body

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
	}
	body, ok := c[r.Method+" "+r.URL.Path]
	if !ok {
		return nil, fmt.Errorf("no canned answer for %s %s", r.Method, r.URL.Path)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func benchService(b *testing.B, answers canned) http.Handler {
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: "http://platform.internal", DefaultTransport: answers})
	if err != nil {
		b.Fatal(err)
	}
	return svc.Handler()
}

func benchCall(b *testing.B, h http.Handler, tool string, args map[string]any) {
	body := mustJSON(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	run := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(toolserver.HeaderAPIKey, keyA)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	rec := run()
	if rec.Code != 200 || bytes.Contains(rec.Body.Bytes(), []byte(`"isError":true`)) {
		b.Fatalf("%s: %d %.300s", tool, rec.Code, rec.Body.String())
	}
	b.SetBytes(int64(rec.Body.Len()))
	b.ReportAllocs()
	b.ResetTimer()
	start, n := cpuTime(), 0
	for b.Loop() {
		run()
		n++
	}
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(cpu.Milliseconds())/float64(n), "cpu-ms/op")
	}
}

func benchTenant(runs int, size int) (*platformtest.Tenant, string, string) {
	t := platformtest.NewTenant(wsA, "Alpha")
	project := t.AddProject("bench", "", nil)
	trace := t.AddTrace(project, "big-trace", runs, size, platformtest.Base)
	return t, project, trace
}

// fetch_runs of 100 runs (about 2 KB of inputs and outputs each), without
// and with trace_id.
func BenchmarkFetchRuns100(b *testing.B) {
	t, project, trace := benchTenant(100, 1000)
	answers := canned{
		"GET /sessions":    mustJSON([]any{map[string]any{"id": project, "name": "bench", "tenant_id": wsA, "reference_dataset_id": nil}}),
		"POST /runs/query": mustJSON(map[string]any{"runs": t.Runs, "cursors": map[string]any{"next": nil}}),
	}
	h := benchService(b, answers)
	b.Run("batch", func(b *testing.B) {
		benchCall(b, h, "fetch_runs", map[string]any{"project_name": "bench", "limit": 100, "page_number": 1})
	})
	b.Run("trace_page", func(b *testing.B) {
		benchCall(b, h, "fetch_runs", map[string]any{"project_name": "bench", "limit": 100, "page_number": 2, "trace_id": trace})
	})
}

// A page of a thread history of 1 MB: 100 LLM runs whose messages hold
// 10 KB each.
func BenchmarkThreadHistory1MB(b *testing.B) {
	t := platformtest.NewTenant(wsA, "Alpha")
	project := t.AddProject("bench", "", nil)
	t.AddThread(project, "thread-big", 100, 5000)
	raw := mustJSON(map[string]any{"runs": t.Runs, "cursors": map[string]any{"next": nil}})
	if len(raw) < 1<<20 {
		b.Fatalf("history of %d bytes", len(raw))
	}
	answers := canned{
		"GET /sessions":    mustJSON([]any{map[string]any{"id": project, "name": "bench", "tenant_id": wsA, "reference_dataset_id": nil}}),
		"POST /runs/query": raw,
	}
	h := benchService(b, answers)
	b.Run("defaults", func(b *testing.B) {
		benchCall(b, h, "get_thread_history", map[string]any{"thread_id": "thread-big", "project_name": "bench", "page_number": 1})
	})
	b.Run("full_text_page_20", func(b *testing.B) {
		benchCall(b, h, "get_thread_history", map[string]any{"thread_id": "thread-big", "project_name": "bench", "page_number": 20, "preview_chars": 0})
	})
}

// The guard of the canned transport: every benchmark answer must be
// served from memory (a typo in a path would otherwise fail only there).
func TestCannedAnswersCoverTheBenchmarks(t *testing.T) {
	tenant, project, _ := benchTenant(3, 10)
	answers := canned{
		"GET /sessions":    mustJSON([]any{map[string]any{"id": project, "name": "bench"}}),
		"POST /runs/query": mustJSON(map[string]any{"runs": tenant.Runs, "cursors": map[string]any{"next": nil}}),
	}
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: "http://platform.internal", DefaultTransport: answers, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newLocalServer(t, svc.Handler()), map[string]string{toolserver.HeaderAPIKey: keyA})
	if n := len(items(ok(t, cs, "fetch_runs", map[string]any{"project_name": "bench", "limit": 100, "page_number": 1})["runs"])); n != 3 {
		t.Fatalf("%d runs", n)
	}
	if !strings.Contains(fmt.Sprint(answers.RoundTrip(httptest.NewRequest("GET", "/nope", nil))), "no canned answer") {
		t.Fatal("unknown paths must fail")
	}
}

// Building the service (what a Lambda's init does after the runtime's own
// start): 15 tools, their schemas resolved, the HTTP handler.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: "https://api.example.com"})
		if err != nil {
			b.Fatal(err)
		}
		_ = svc.Handler()
	}
}
