package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

// The version and commit the test binary is stamped with (-ldflags -X).
const (
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// binary builds the real binary once, as a release would: version and
// commit set with -ldflags.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "agentplane-bin-*")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "agentplane")
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion+" -X main.commit="+testCommit, "-o", binPath, ".")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			buildErr = errors.New(err.Error() + ": " + stderr.String())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type execResult struct {
	code           int
	stdout, stderr string
}

// runBin runs the binary in dir with env added to a clean environment.
func runBin(t *testing.T, dir string, env []string, args ...string) execResult {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return execResult{code, stdout.String(), stderr.String()}
}

// A bare `agentplane` no longer starts a server: it prints help, exits 2
// and creates nothing; `version` shows what -ldflags set.
func TestBinaryUsageAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	r := runBin(t, dir, nil)
	if r.code != 2 || !strings.Contains(r.stderr, "Usage:") || r.stdout != "" {
		t.Fatalf("bare agentplane: %+v", r)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("bare agentplane created %v", entries)
	}
	if r := runBin(t, dir, nil, "--help"); r.code != 0 || !strings.Contains(r.stdout, "serve") {
		t.Fatalf("--help: %+v", r)
	}
	if r := runBin(t, dir, nil, "deployments", "ls", "--nope"); r.code != 2 {
		t.Fatalf("bad flag: %+v", r)
	}
	r = runBin(t, dir, nil, "version", "--json")
	var v map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 {
		t.Fatalf("version --json: %+v %v", r, err)
	}
	if v["version"] != testVersion || v["commit"] != testCommit || !strings.HasPrefix(v["go"], "go1.") {
		t.Fatalf("version: %v", v)
	}
	mcpStdio(t, dir)
	if r := runBin(t, dir, nil, "deployments", "ls"); r.code != 4 || !strings.Contains(r.stderr, "AGENTPLANE_API_KEY") {
		t.Fatalf("no key: %+v", r)
	}
}

// The real binary end to end: `agentplane serve` in one process, the CLI in
// others, deploying a git repository with --wait (DEPLOYED, exit 0) and a
// broken one (exit 3 with the failing step's log).
func TestBinaryDeploy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const key = "ap_binary_test_key_0123456789abcdef"
	addr := freeAddr(t)
	p := start(t, binary(t), t.TempDir(), addr, "AGENTPLANE_BOOTSTRAP_API_KEY="+key)
	p.untilListening(t)
	env := []string{"AGENTPLANE_URL=http://" + addr, "AGENTPLANE_API_KEY=" + key}

	work := t.TempDir()
	good := gittest.NewRepo(t, filepath.Join(work, "good-agent"))
	good.Commit("agent", gittest.Agent("agent"))
	r := runBin(t, work, env, "deploy", "good-agent", "--wait", "--json")
	if r.code != 0 {
		t.Fatalf("deploy: %+v", r)
	}
	var out struct {
		Deployment struct{ Name, Status string }
		Revision   struct{ Status string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Deployment.Name != "good-agent" ||
		out.Deployment.Status != "READY" || out.Revision.Status != "DEPLOYED" {
		t.Fatalf("deploy --json: %+v %v\n%s", out, err, r.stdout)
	}
	if !strings.Contains(r.stderr, "status DEPLOYED") || strings.Contains(r.stdout+r.stderr, key) {
		t.Fatalf("progress (no terminal: plain lines, never the key):\n%s", r.stderr)
	}

	bad := gittest.NewRepo(t, filepath.Join(work, "bad-agent"))
	bad.Commit("broken", map[string]string{"langgraph.json": "[]"})
	r = runBin(t, filepath.Join(work, "bad-agent"), env, "deploy", "--wait")
	if r.code != 3 || !strings.Contains(r.stderr, "log of the failing step ValidateConfig") {
		t.Fatalf("failed build: %+v", r)
	}
	r = runBin(t, work, env, "deployments", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "good-agent") || !strings.Contains(r.stdout, "bad-agent") {
		t.Fatalf("ls: %+v", r)
	}
	if r := runBin(t, work, env, "deployments", "get", "missing"); r.code != 5 {
		t.Fatalf("404: %+v", r)
	}
}

// `agentplane mcp --stdio` speaks MCP on stdin and stdout: an MCP client's
// handshake, then the tool list, read line by line while stdin stays open
// (as desktop clients do).
func mcpStdio(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(binary(t), "mcp", "--stdio")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SERVICE_API_KEY=ap_not_used_by_tools_list"}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	deadline := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID != 2 {
			continue
		}
		if len(msg.Result.Tools) != 15 {
			t.Fatalf("mcp --stdio listed %d tools", len(msg.Result.Tools))
		}
		return
	}
	t.Fatal("mcp --stdio did not answer tools/list")
}
