package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/cmd/agentplane/internal/cli"
	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
)

const adminKey = "ap_cli_test_admin_key_0123456789abcdef"

// server is the local all-in-one server on 127.0.0.1, run as `agentplane
// serve` runs it (local.Serve: bootstrap, routes, background work).
type server struct {
	url string
	key string
}

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: ln.Addr().String(), Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- local.Serve(ctx, pr, ln, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	s := &server{url: "http://" + ln.Addr().String(), key: adminKey}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(s.url + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not answer /health: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testLog shows the server's error log with the test's output.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Logf("server: %s", bytes.TrimSpace(p))
	return len(p), nil
}

// result is one run of the command line.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return "exit " + itoa(r.code) + "\n--- stdout\n" + r.stdout + "--- stderr\n" + r.stderr
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// runOpts varies one run.
type runOpts struct {
	env   map[string]string // overrides; "" unsets
	stdin string
	tty   bool
	ctx   context.Context
	tools cli.ToolServerFactory
}

// syncBuffer is a buffer written by the progress display's goroutine and
// read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run runs the command line in process, with AGENTPLANE_URL and
// AGENTPLANE_API_KEY pointing at s. It fails the test if the admin key
// shows up in any output.
func (s *server) run(t *testing.T, args ...string) result {
	t.Helper()
	return s.runWith(t, runOpts{}, args...)
}

func (s *server) runWith(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	env := map[string]string{}
	if s != nil {
		env["AGENTPLANE_URL"] = s.url
		env["AGENTPLANE_API_KEY"] = s.key
	}
	for k, v := range o.env {
		env[k] = v
	}
	var stdout, stderr syncBuffer
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	code := cli.Main(ctx, cli.Env{
		Args: args, Stdin: strings.NewReader(o.stdin), Stdout: &stdout, Stderr: &stderr,
		Getenv:     func(k string) string { return env[k] },
		IsTerminal: func(io.Writer) bool { return o.tty },
	}, cli.Options{
		Build:        cli.Build{Version: "v0.0.0-test", Commit: "testcommit"},
		PollInterval: 20 * time.Millisecond,
		ToolServer:   o.tools,
	})
	r := result{code: code, stdout: stdout.String(), stderr: stderr.String()}
	if strings.Contains(r.stdout+r.stderr, adminKey) {
		t.Fatalf("agentplane %s printed the API key:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// ok runs and requires exit 0.
func (s *server) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := s.run(t, args...)
	if r.code != 0 {
		t.Fatalf("agentplane %s:\n%s", strings.Join(args, " "), r)
	}
	return r
}

// fails runs and requires the exit code and a fragment of stderr.
func (s *server) fails(t *testing.T, code int, want string, args ...string) result {
	t.Helper()
	r := s.run(t, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("agentplane %s: want exit %d and stderr containing %q, got\n%s", strings.Join(args, " "), code, want, r)
	}
	return r
}

// jsonOf decodes a run's stdout.
func jsonOf[T any](t *testing.T, r result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the JSON expected (%v):\n%s", err, r)
	}
	return v
}

// api calls the HTTP API directly, to set up what the CLI has no command
// for (threads) and to check what it did.
func (s *server) api(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("X-Api-Key", s.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}
