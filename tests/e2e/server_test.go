// Package e2e drives real clients against the real local server, end to
// end: the pinned langsmith SDK seeds it (seed.test.mjs), the pinned MCP
// TypeScript SDK reads everything back through the tool server over
// streamable HTTP and over stdio (mcp_http.test.mjs, mcp_stdio.test.mjs,
// the stdio server being the real `agentplane mcp --stdio` binary), and
// the MCP Go SDK calls every tool against data made through the
// platform's HTTP API, for two tenants at once (tools_test.go).
//
// The server is the one `agentplane serve` runs (local.New, then
// local.ServeWith: bootstrap, the platform API, the tool server on its own
// port, the queue consumers and sweeps), started in this process on
// 127.0.0.1 listeners: the race detector and the test's failure output
// then cover the server too, and no binary has to be built for it. Only
// the stdio form, which must be a separate process, is built and run.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
)

const adminKey = "ap_test_e2e_admin_key_0123456789abcdef"

// server is a running local server: API is the platform API's base URL,
// MCP the tool server's.
type server struct {
	API, MCP string
	Dir      string // the data directory
	logs     *logWatch
	stop     func() // stops the server (once), as SIGTERM stops agentplane serve
}

// logWatch keeps the server's JSON log lines and flags what no client
// request may cause: a 5xx answer, a panic or an error-level record.
type logWatch struct {
	mu    sync.Mutex
	buf   []byte
	bad   []string
	lines int
}

func (l *logWatch) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			break
		}
		line := l.buf[:i]
		l.buf = l.buf[i+1:]
		l.lines++
		var rec struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Status int    `json:"status"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rec.Status >= 500 || rec.Level == "ERROR" || rec.Msg == "panic" {
			l.bad = append(l.bad, string(line))
		}
	}
	return len(p), nil
}

// check fails t with every flagged log line.
func (l *logWatch) check(t testing.TB) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Errorf("server log: %s", b)
	}
}

// freeAddr reserves a free 127.0.0.1 port and releases it for the server
// to bind: the tool server listens on an address, not on a listener.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// start runs the local server as `agentplane serve` does, with a fresh
// data directory and adminKey as its bootstrap key, until the test ends.
func start(t testing.TB) *server {
	t.Helper()
	return startIn(t, t.TempDir())
}

// startIn runs the local server on the data directory dir, on new ports.
func startIn(t testing.TB, dir string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: dir, Addr: ln.Addr().String(), MCPAddr: freeAddr(t),
		Region: "us", BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "info"}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	logs := &logWatch{}
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &lockedBuffer{}
	go func() { done <- local.ServeWith(ctx, pr, ln, out, local.DefaultLimits()) }()
	s := &server{API: cfg.BaseURL, MCP: "http://" + cfg.MCPAddr, Dir: dir, logs: logs}
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("server: %v", err)
			}
			logs.check(t)
		})
	}
	t.Cleanup(s.stop)
	for _, u := range []string{s.API + "/info", s.MCP + "/health"} {
		waitUp(t, u, done, out)
	}
	if strings.Contains(out.String(), adminKey) {
		t.Errorf("the bootstrap key given in the configuration was printed")
	}
	return s
}

func waitUp(t testing.TB, url string, done chan error, out *lockedBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the server stopped: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not up: %v\n%s", url, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// nodeModules skips (or, under CI, fails) when `npm ci` has not run here
// or node is missing.
func nodeModules(t *testing.T) {
	t.Helper()
	for _, pkg := range []string{"langsmith", filepath.Join("@modelcontextprotocol", "sdk")} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			msg := "tests/e2e/node_modules is missing: run `npm ci --prefix tests/e2e` (scripts/test.sh does)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
}

// runNode runs `node --test file` with env added, logs its report (one
// line per SDK step) and fails t when a test failed.
func runNode(t *testing.T, timeout time.Duration, file string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "--test-concurrency=1", file)
	cmd.Env = append(os.Environ(), append(env, "NO_COLOR=1", "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")...)
	started := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s (%s):\n%s", file, time.Since(started).Round(time.Millisecond), out)
	if err != nil {
		t.Fatalf("node --test %s: %v", file, err)
	}
}

// binDir holds the binaries the tests build; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentplane-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAgentplane builds the real command (cmd/agentplane) once per run.
var buildAgentplane = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "agentplane")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/agentplane")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agentplane: %v\n%s", err, out)
	}
	return bin, nil
})
