package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/google/uuid"
)

// The tool calls a client makes most, end to end: the Go SDK's client over
// streamable HTTP, the tool server, the platform API in process, the
// embedded store and the run blobs on disk. The thread holds 100 model runs
// of 10 KB each (a 1 MB history, the most get_thread_history reads), in a
// project of 201 runs.
func BenchmarkEndToEnd(b *testing.B) {
	s := start(b)
	tn := newTenant(b, s, "Bench", "BENCH", 0)
	base := time.Now().Add(-time.Hour).UTC()
	var posts []any
	for i := 0; i < 100; i++ {
		root, child := uuid.NewString(), uuid.NewString()
		at := base.Add(time.Duration(i) * time.Second)
		d := dotted(at, root)
		text := func(role string) map[string]any {
			return map[string]any{"role": role, "content": fmt.Sprintf("%s %d ", role, i) + strings.Repeat("lorem ipsum ", 420)}
		}
		meta := map[string]any{"metadata": map[string]any{"thread_id": threadID}}
		posts = append(posts,
			map[string]any{"id": root, "trace_id": root, "dotted_order": d, "name": "turn", "run_type": "chain", "session_name": projectName,
				"start_time": at.Format(time.RFC3339Nano), "end_time": at.Add(time.Second).Format(time.RFC3339Nano), "extra": meta},
			map[string]any{"id": child, "trace_id": root, "parent_run_id": root, "dotted_order": d + "." + dotted(at.Add(time.Millisecond), child),
				"name": "model", "run_type": "llm", "session_name": projectName, "extra": meta,
				"start_time": at.Add(time.Millisecond).Format(time.RFC3339Nano), "end_time": at.Add(time.Second).Format(time.RFC3339Nano),
				"inputs": map[string]any{"messages": []any{text("user")}}, "outputs": map[string]any{"choices": []any{map[string]any{"message": text("assistant")}}}})
	}
	api(b, s.API, tn.Key, "POST", "/runs/batch", map[string]any{"post": posts}, 202, nil)
	cs := session(b, s.MCP, map[string]string{toolserver.HeaderAPIKey: tn.Key})
	waitFor(b, "the runs", func() bool {
		r := callTool(b, cs, "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1, "run_type": "llm"})
		return !r.err && len(r.value["runs"].([]any)) == 100
	})
	for _, bc := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"get_thread_history/1MB/page", "get_thread_history", map[string]any{"thread_id": threadID, "project_name": projectName, "page_number": 3}},
		{"get_thread_history/1MB/page_whole_values", "get_thread_history", map[string]any{"thread_id": threadID, "project_name": projectName, "page_number": 3, "preview_chars": 0}},
		{"fetch_runs/100", "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1}},
		{"fetch_runs/100/whole_values", "fetch_runs", map[string]any{"project_name": projectName, "limit": 100, "page_number": 1, "preview_chars": 0}},
		{"list_projects", "list_projects", map[string]any{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := callTool(b, cs, bc.tool, bc.args); r.err {
					b.Fatal(r.text)
				}
			}
		})
	}
}
