package main_test

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type proc struct {
	cmd   *exec.Cmd
	lines chan string
}

func start(t *testing.T, bin, dir, addr string, extraEnv ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "AGENTPLANE_ADDR="+addr, "AGENTPLANE_DATA_DIR="+dir, "AGENTPLANE_LOG_LEVEL=warn",
		"AGENTPLANE_MCP_ADDR=127.0.0.1:0")
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, lines: make(chan string, 100)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			p.lines <- s.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p
}

// untilListening collects stdout lines until the listening line.
func (p *proc) untilListening(t *testing.T) []string {
	t.Helper()
	var got []string
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("server exited early; output %v", got)
			}
			got = append(got, l)
			if strings.Contains(l, "listening on") {
				return got
			}
		case <-timeout:
			t.Fatalf("server did not start; output %v", got)
		}
	}
}

func get(t *testing.T, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func rssKB(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "?"
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return "?"
	}
	return string(m[1])
}

// The real binary: `agentplane serve` bootstraps, prints a generated key once, /health needs no
// auth, SIGTERM exits 0, and a restart keeps the data (no new key).
func TestBinaryLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	addr := freeAddr(t)

	p := start(t, bin, dir, addr)
	out := p.untilListening(t)
	var key string
	for _, l := range out {
		if i := strings.Index(l, "admin API key"); i >= 0 {
			key = l[strings.LastIndex(l, " ")+1:]
		}
	}
	if !strings.HasPrefix(key, "ap_") {
		t.Fatalf("no generated key printed: %v", out)
	}
	// The tool server runs beside the API on its own port.
	var mcpURL string
	for _, l := range out {
		if i := strings.Index(l, "tool server (MCP) on "); i >= 0 {
			mcpURL = strings.TrimSuffix(l[i+len("tool server (MCP) on "):], "/mcp")
		}
	}
	if mcpURL == "" {
		t.Fatalf("no tool server address printed: %v", out)
	}
	if code := get(t, mcpURL+"/health", ""); code != 200 {
		t.Fatalf("tool server /health: %d", code)
	}
	base := "http://" + addr
	if code := get(t, base+"/health", ""); code != 200 {
		t.Fatalf("health: %d", code)
	}
	if code := get(t, base+"/api/v1/workspaces", key); code != 200 {
		t.Fatalf("printed key does not work: %d", code)
	}
	time.Sleep(500 * time.Millisecond)
	t.Logf("idle RSS after start: %s kB", rssKB(p.cmd.Process.Pid))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}

	p = start(t, bin, dir, addr)
	out = p.untilListening(t)
	for _, l := range out {
		if strings.Contains(l, "admin API key") {
			t.Fatalf("key printed again on restart: %v", out)
		}
	}
	if code := get(t, base+"/api/v1/workspaces", key); code != 200 {
		t.Fatalf("key lost across restart: %d", code)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v", err)
	}
}

// AGENTPLANE_BOOTSTRAP_API_KEY is used instead of a generated key and is
// never printed.
func TestBootstrapKeyFromEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := binary(t)
	addr := freeAddr(t)
	const key = "ap_env_bootstrap_key_123456789"
	p := start(t, bin, t.TempDir(), addr, "AGENTPLANE_BOOTSTRAP_API_KEY="+key)
	for _, l := range p.untilListening(t) {
		if strings.Contains(l, key) {
			t.Fatalf("configured key printed: %s", l)
		}
	}
	if code := get(t, "http://"+addr+"/api/v1/workspaces", key); code != 200 {
		t.Fatalf("env key: %d", code)
	}
}
