// Package clients drives real client libraries against the local server:
// the pinned @langchain/langgraph-sdk (package.json, package-lock.json)
// runs langgraph.test.mjs against a deployment URL served in process.
package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
)

const adminKey = "ap_test_clients_admin_key_0123456789"

// app is the all-in-one server on 127.0.0.1 with its background work
// (queue consumer, workflow runner) running, as `agentplane serve` runs it.
type app struct {
	t   *testing.T
	srv *httptest.Server
}

func start(t *testing.T) *app {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	a, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.P.Identity.Bootstrap(context.Background(), a.P.Config.BootstrapAPIKey); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.RunBackground(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		if err := a.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &app{t: t, srv: srv}
}

func (a *app) call(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, a.srv.URL+path, rd)
	req.Header.Set("X-Api-Key", adminKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m
}

// deploy creates a deployment from a git repository made here (graphs
// "agent" and "other") and waits until its first revision is DEPLOYED.
func (a *app) deploy(name string) string {
	a.t.Helper()
	repo := gittest.NewRepo(a.t, filepath.Join(a.t.TempDir(), name))
	repo.Commit("agent", gittest.Agent("agent", "other"))
	code, dep := a.call("POST", "/v2/deployments", map[string]any{
		"name": name, "source": "repo_host",
		"source_config":          map[string]any{"repo_url": repo.Dir, "deployment_type": "dev", "build_on_push": false},
		"source_revision_config": map[string]any{"repo_ref": "main", "graph_config_path": "langgraph.json"},
		"secrets":                []any{},
	})
	if code != 201 {
		a.t.Fatalf("create deployment: %d %v", code, dep)
	}
	id, _ := dep["id"].(string)
	rev, _ := dep["latest_revision_id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, r := a.call("GET", "/v2/deployments/"+id+"/revisions/"+rev, nil)
		if code != 200 {
			a.t.Fatalf("revision: %d %v", code, r)
		}
		st, _ := r["status"].(string)
		if st == "DEPLOYED" {
			return id
		}
		if deployments.RevisionStatus(st).Terminal() {
			a.t.Fatalf("revision ended %s: %v", st, r["status_message"])
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("revision still %v", r["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeModules reports whether `npm ci` has run in this directory; without
// it the test cannot run: a failure in CI, a skip on a developer machine.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "@langchain", "langgraph-sdk", "package.json")); err != nil {
		msg := "tests/clients/node_modules is missing: run `npm ci --prefix tests/clients` (scripts/test.sh does)"
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

// The real @langchain/langgraph-sdk, unmodified, against a deployment URL.
func TestLangGraphSDK(t *testing.T) {
	nodeModules(t)
	a := start(t)
	dep := a.deploy("sdk-agent")
	other := a.deploy("sdk-other")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "langgraph.test.mjs")
	cmd.Env = append(os.Environ(),
		"AGENTPLANE_URL="+a.srv.URL+"/deployments/"+dep,
		"AGENTPLANE_OTHER_URL="+a.srv.URL+"/deployments/"+other,
		"AGENTPLANE_API_KEY="+adminKey,
		"NO_COLOR=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test langgraph.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
