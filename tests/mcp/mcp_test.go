// Package mcptests drives the official MCP TypeScript SDK client (pinned
// @modelcontextprotocol/sdk, package.json and package-lock.json) against
// the tool server, over streamable HTTP (http.test.mjs) and over stdio
// (stdio.test.mjs, starting ./stdioserver). The platform behind the tool
// server is the platformtest double holding a traced conversation, a trace,
// a dataset with versions, prompts, an experiment and billing usage.
package mcptests

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/domains/toolserver/platformtest"
)

const apiKey = "mcp-client-test-key"

// nodeModules reports whether `npm ci` has run here; without it the test
// cannot run: a failure in CI, a skip on a developer machine.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		msg := "tests/mcp/node_modules is missing: run `npm ci --prefix tests/mcp`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
}

// platform starts the double with the fixture's data and returns it with
// the FIXTURE the client suite reads.
func platform(t *testing.T) (*platformtest.Server, string) {
	t.Helper()
	const ws = "0f0f0f0f-0000-4000-8000-000000000001"
	tn := platformtest.NewTenant(ws, "Client test workspace")
	project := tn.AddProject("support-bot", "", nil)
	const turns, fill = 90, 700 // ≈ 130 KB of messages (90 runs: under the 100-run read): several pages of 20000 characters
	tn.AddThread(project, "thread-long", turns, fill)
	tn.AddThread(project, "thread-short", 2, 10)
	trace := tn.AddTrace(project, "agent-run", 40, 1500, platformtest.Base.Add(time.Hour))
	dataset := tn.AddDataset("support-qa", "kv", "Support questions", map[string]any{"team": "support"})
	v1, v2 := platformtest.Base, platformtest.Base.Add(48*time.Hour)
	example := tn.AddExample(dataset, "reset",
		platformtest.ExampleVersion{At: v1, Inputs: map[string]any{"question": "How do I reset my password?"}, Outputs: map[string]any{"answer": "Ask support."}},
		platformtest.ExampleVersion{At: v2, Inputs: map[string]any{"question": "How do I reset my password?"}, Outputs: map[string]any{"answer": "Use the 'Forgot password' link."}},
	)
	tn.AddExample(dataset, "invoices", platformtest.ExampleVersion{At: v2, Inputs: map[string]any{"question": "Where are invoices?"}, Outputs: map[string]any{"answer": "Billing > Invoices."}})
	tn.TagVersion(dataset, "v1", v1.Add(time.Hour))
	tn.AddProject("support-qa-baseline", dataset, map[string]any{"latency_p50": 0.8, "latency_p99": 2.5, "total_cost": "0.0123", "feedback_stats": map[string]any{"correct": map[string]any{"n": 2, "avg": 1}}})
	const system = "You answer support questions politely."
	tn.AddPrompt("support-answer", system, false, platformtest.Base)
	tn.AddUsage("traces", platformtest.Base.AddDate(0, 0, -3), map[string]any{ws: 4242})
	srv := platformtest.New(map[string]*platformtest.Tenant{apiKey: tn})
	t.Cleanup(srv.Close)
	fixture, _ := json.Marshal(map[string]any{
		"project": "support-bot", "thread": "thread-long", "turns": turns, "fill": fill,
		"trace_id": trace, "trace_runs": 40, "dataset": "support-qa", "dataset_id": dataset, "example_id": example,
		"version_tag": "v1", "prompt": "support-answer", "prompt_system": system, "experiment": "support-qa-baseline",
		"usage_from": "2025-08-01T00:00:00Z", "usage_to": "2025-09-01T00:00:00Z", "workspace_name": "Client test workspace",
	})
	return srv, string(fixture)
}

func runNode(t *testing.T, file string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "--test-concurrency=1", file)
	cmd.Env = append(os.Environ(), append(env, "NO_COLOR=1")...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test %s: %v\n%s", file, err, out)
	}
	t.Logf("%s", out)
}

// The official TypeScript client over streamable HTTP against the tool
// server's handler on 127.0.0.1.
func TestTypeScriptClientHTTP(t *testing.T) {
	nodeModules(t)
	p, fixture := platform(t)
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	runNode(t, "http.test.mjs", "MCP_URL="+srv.URL, "SERVICE_API_KEY="+apiKey, "FIXTURE="+fixture)
}

// The official TypeScript client over stdio, starting ./stdioserver (built
// here) as its server process.
func TestTypeScriptClientStdio(t *testing.T) {
	nodeModules(t)
	p, fixture := platform(t)
	bin := filepath.Join(t.TempDir(), "stdioserver")
	build := exec.Command("go", "build", "-o", bin, "./stdioserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./stdioserver: %v\n%s", err, out)
	}
	runNode(t, "stdio.test.mjs", "STDIO_COMMAND="+bin, "SERVICE_API_KEY="+apiKey, "SERVICE_ENDPOINT="+p.URL, "FIXTURE="+fixture)
}
