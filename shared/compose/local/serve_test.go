package local_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
)

// syncBuffer is the server's stdout.
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

// served is the real local server (local.ServeWith on a TCP listener)
// over a data directory.
type served struct {
	t    *testing.T
	url  string
	addr string
	out  *syncBuffer
	stop func() error
}

// serve starts the server on dir with the bootstrap key key ("" to
// generate one) and limits lim. ServeWith's error, if it fails to start,
// is returned by stop.
func serve(t *testing.T, dir, key string, lim local.Limits) *served {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: dir, Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: key, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	app, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), out: &syncBuffer{}}
	done := make(chan error, 1)
	go func() { done <- local.ServeWith(ctx, app, ln, s.out, lim) }()
	var once sync.Once
	var result error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			result = <-done
			http.DefaultClient.CloseIdleConnections()
		})
		return result
	}
	t.Cleanup(func() { _ = s.stop() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.out.String(), "listening on") {
		select {
		case err := <-done:
			done <- err
			return s
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", s.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

func (s *served) do(method, path, key, body string) (int, string) {
	s.t.Helper()
	return client{s.t, s.url}.do(method, path, key, body)
}

var printedKey = regexp.MustCompile(`(ap_[A-Za-z0-9_-]+)\s*$`)

// A bootstrap key that was revoked does not come back when the server
// restarts with the same AGENTPLANE_BOOTSTRAP_API_KEY: the key is created
// only on an empty store.
func TestRevokedBootstrapKeyStaysRevokedAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	const key = "ap_bootstrap_key_from_the_environment_0123"
	s := serve(t, dir, key, local.DefaultLimits())
	if code, body := s.do("GET", "/api/v1/workspaces", key, ""); code != 200 {
		t.Fatalf("bootstrap key: %d %s", code, body)
	}
	code, body := s.do("POST", "/api/v1/api-key", key, `{"description":"second admin","org_role":"Admin"}`)
	if code != 201 {
		t.Fatalf("create admin key: %d %s", code, body)
	}
	var second struct{ Key string }
	_ = json.Unmarshal([]byte(body), &second)
	_, body = s.do("GET", "/api/v1/api-key", second.Key, "")
	var keys []struct{ ID, Description string }
	_ = json.Unmarshal([]byte(body), &keys)
	var bootID string
	for _, k := range keys {
		if k.Description == "bootstrap admin key" {
			bootID = k.ID
		}
	}
	if bootID == "" {
		t.Fatalf("no bootstrap key listed: %s", body)
	}
	if code, body := s.do("DELETE", "/api/v1/api-key/"+bootID, second.Key, ""); code != 204 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, _ := s.do("GET", "/api/v1/workspaces", key, ""); code != 401 {
		t.Fatalf("revoked key still works: %d", code)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	for restart := 1; restart <= 2; restart++ {
		s = serve(t, dir, key, local.DefaultLimits())
		if code, _ := s.do("GET", "/api/v1/workspaces", key, ""); code != 401 {
			t.Fatalf("restart %d: the revoked bootstrap key is back: %d", restart, code)
		}
		if code, _ := s.do("GET", "/api/v1/api-key", second.Key, ""); code != 200 {
			t.Fatalf("restart %d: the other admin key: %d", restart, code)
		}
		if strings.Contains(s.out.String(), "admin API key") {
			t.Fatalf("restart %d printed a key: %s", restart, s.out.String())
		}
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// A lost admin key is recovered by whoever can write into the data
// directory: the recovery file makes the next start print one new admin
// key, once.
func TestRecoverLostAdminKey(t *testing.T) {
	dir := t.TempDir()
	s := serve(t, dir, "", local.DefaultLimits())
	m := printedKey.FindStringSubmatch(strings.Split(s.out.String(), "\n")[1])
	if m == nil {
		t.Fatalf("no generated key: %s", s.out.String())
	}
	lost := m[1]
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	// A symlink is refused (it could point anywhere), and nothing is made.
	link := filepath.Join(dir, local.RecoveryFile)
	if err := os.Symlink(filepath.Join(dir, "agentplane.db"), link); err != nil {
		t.Fatal(err)
	}
	s = serve(t, dir, "", local.DefaultLimits())
	if err := s.stop(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("symlink recovery file: %v", err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, local.RecoveryFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s = serve(t, dir, "", local.DefaultLimits())
	var recovered string
	for _, l := range strings.Split(s.out.String(), "\n") {
		if strings.Contains(l, "recovery: new organization admin API key") {
			if m := printedKey.FindStringSubmatch(l); m != nil {
				recovered = m[1]
			}
		}
	}
	if recovered == "" || recovered == lost {
		t.Fatalf("no recovered key printed: %s", s.out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, local.RecoveryFile)); !os.IsNotExist(err) {
		t.Fatalf("recovery file left behind: %v", err)
	}
	// The new key is an organization admin: it lists the keys and can
	// revoke the lost one.
	code, body := s.do("GET", "/api/v1/api-key", recovered, "")
	if code != 200 {
		t.Fatalf("recovered key: %d %s", code, body)
	}
	var keys []struct{ ID, Description, OrgRole string }
	_ = json.Unmarshal([]byte(body), &keys)
	var lostID string
	for _, k := range keys {
		if k.Description == "bootstrap admin key" {
			lostID = k.ID
		}
	}
	if code, _ := s.do("DELETE", "/api/v1/api-key/"+lostID, recovered, ""); code != 204 {
		t.Fatalf("revoke the lost key: %d", code)
	}
	if code, _ := s.do("GET", "/api/v1/workspaces", lost, ""); code != 401 {
		t.Fatalf("lost key after revocation: %d", code)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	// One file, one key: the next start makes none.
	s = serve(t, dir, "", local.DefaultLimits())
	if strings.Contains(s.out.String(), "API key") {
		t.Fatalf("a start without the file printed a key: %s", s.out.String())
	}
	if code, _ := s.do("GET", "/api/v1/api-key", recovered, ""); code != 200 {
		t.Fatalf("recovered key after restart: %d", code)
	}
}

// rawConn is a client that writes bytes as it pleases.
type rawConn struct {
	t *testing.T
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, Conn: c, r: bufio.NewReader(c)}
}

// response reads one response within d; ok is false when none came (the
// connection stayed open without an answer, or closed without one).
func (c *rawConn) response(d time.Duration) (*http.Response, string, bool) {
	c.t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return nil, err.Error(), false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), true
}

// closed reports whether the server closed the connection within d.
func (c *rawConn) closed(d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := c.r.ReadByte()
	return err == io.EOF
}

const slowKey = "ap_slow_client_tests_key_0123456789"

func postHead(path string, length int) string {
	return "POST " + path + " HTTP/1.1\r\nHost: test\r\nX-Api-Key: " + slowKey +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(length) + "\r\n\r\n"
}

func shortLimits() local.Limits {
	l := local.DefaultLimits()
	l.HeaderTimeout = 500 * time.Millisecond
	l.BodyIdleTimeout = 400 * time.Millisecond
	l.BodyMinRate = 0
	return l
}

// A client that sends part of a body and stalls is answered 408 and cut
// off after the idle timeout; before, it held its connection and a
// goroutine for as long as it liked.
func TestStalledBodyIsCutOff(t *testing.T) {
	s := serve(t, t.TempDir(), slowKey, shortLimits())
	c := dial(t, s.addr)
	start := time.Now()
	if _, err := io.WriteString(c, postHead("/api/v1/workspaces", 100)+`{"display_`); err != nil {
		t.Fatal(err)
	}
	resp, body, ok := c.response(5 * time.Second)
	if !ok {
		t.Fatalf("no answer to a stalled body within 5s: %s", body)
	}
	took := time.Since(start)
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/json" || !hasDetail(body) {
		t.Fatalf("stalled body: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("cut after %s, want about the 400ms idle timeout", took)
	}
	if !c.closed(2 * time.Second) {
		t.Fatal("the connection stays open after the timeout")
	}
	// Nothing was created.
	_, list := s.do("GET", "/api/v1/workspaces", slowKey, "")
	if strings.Count(list, `"id"`) != 1 {
		t.Fatalf("workspaces after a cut body: %s", list)
	}

	// A request answered without reading its body (here: no API key)
	// makes net/http read the rest of the body before it answers; that
	// wait is bounded too.
	c = dial(t, s.addr)
	_, _ = io.WriteString(c, "POST /api/v1/workspaces HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"display_")
	resp, body, ok = c.response(5 * time.Second)
	if !ok || resp.StatusCode != http.StatusUnauthorized || !hasDetail(body) {
		t.Fatalf("stalled body of a refused request: %v %s", resp, body)
	}
	if !c.closed(2 * time.Second) {
		t.Fatal("the connection of a refused stalled body stays open")
	}

	// A request line and headers that stall are cut after the header
	// timeout (net/http closes without an answer).
	c = dial(t, s.addr)
	_, _ = io.WriteString(c, "POST /api/v1/workspaces HTTP/1.1\r\nHost: te")
	if !c.closed(3 * time.Second) {
		t.Fatal("a stalled header is not cut off")
	}
}

// A body that keeps arriving, slower than the idle timeout in total but
// with every gap shorter, is read to its end.
func TestSlowButSteadyBodySucceeds(t *testing.T) {
	lim := shortLimits()
	lim.BodyMinRate = 8 // bytes per second, after the 400ms grace
	s := serve(t, t.TempDir(), slowKey, lim)
	body := `{"display_name": "uploaded slowly, but steadily, in small pieces"}`
	c := dial(t, s.addr)
	start := time.Now()
	if _, err := io.WriteString(c, postHead("/api/v1/workspaces", len(body))); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(body); i += 8 {
		time.Sleep(150 * time.Millisecond)
		if _, err := io.WriteString(c, body[i:min(i+8, len(body))]); err != nil {
			t.Fatal(err)
		}
	}
	resp, got, ok := c.response(5 * time.Second)
	if !ok || resp.StatusCode != 201 {
		t.Fatalf("slow but steady body: %v %s", resp, got)
	}
	if took := time.Since(start); took < 3*lim.BodyIdleTimeout {
		t.Fatalf("the upload took %s, not longer than the idle timeout: the test proves nothing", took)
	}
}

// A body that trickles (each gap under the idle timeout, but far below the
// minimum rate) is cut once its waiting exceeds grace + bytes/rate.
func TestTricklingBodyIsCutOff(t *testing.T) {
	lim := shortLimits()
	lim.BodyIdleTimeout = time.Second
	lim.BodyMinRate = 1000
	s := serve(t, t.TempDir(), slowKey, lim)
	c := dial(t, s.addr)
	if _, err := io.WriteString(c, postHead("/api/v1/workspaces", 100)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < 100; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	resp, body, ok := c.response(10 * time.Second)
	if !ok || resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "bytes per second") {
		t.Fatalf("trickling body: %v %s", resp, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cut after %s", took)
	}
}

// One client may hold at most MaxConnsPerClient connections; the next is
// answered 429 in JSON and closed, and a slot frees when a connection
// closes.
func TestConnectionsPerClientAreLimited(t *testing.T) {
	lim := local.DefaultLimits()
	lim.MaxConnsPerClient = 3
	s := serve(t, t.TempDir(), slowKey, lim)
	var held []*rawConn
	for i := 0; i < 3; i++ {
		c := dial(t, s.addr)
		// A request each, so the connection is surely accepted.
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
		if resp, body, ok := c.response(5 * time.Second); !ok || resp.StatusCode != 200 {
			t.Fatalf("connection %d: %v %s", i, resp, body)
		}
		held = append(held, c)
	}
	over := dial(t, s.addr)
	_, _ = io.WriteString(over, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
	resp, body, ok := over.response(5 * time.Second)
	if !ok || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != "application/json" || !hasDetail(body) {
		t.Fatalf("connection over the limit: %v %s", resp, body)
	}
	if !over.closed(3 * time.Second) {
		t.Fatal("the refused connection stays open")
	}
	held[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dial(t, s.addr)
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
		resp, _, ok := c.response(5 * time.Second)
		if ok && resp.StatusCode == 200 {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no slot after closing a connection: %v", resp)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Errors net/http answers by itself, before any handler, are JSON too: a
// 2 MB header is a 431, a malformed request a 400.
func TestServerOwnErrorsAreJSON(t *testing.T) {
	s := serve(t, t.TempDir(), slowKey, local.DefaultLimits())
	c := dial(t, s.addr)
	go func() {
		_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: test\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
	}()
	resp, body, ok := c.response(10 * time.Second)
	if !ok || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" || !hasDetail(body) {
		t.Fatalf("2 MB header: %v %q", resp, body)
	}
	for _, raw := range []string{
		"GARBAGE\r\n\r\n",
		"GET /health HTTP/1.1\r\n\r\n", // no Host
		"POST /health HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	} {
		c := dial(t, s.addr)
		_, _ = io.WriteString(c, raw)
		resp, body, ok := c.response(5 * time.Second)
		if !ok || resp.StatusCode < 400 || resp.Header.Get("Content-Type") != "application/json" || !hasDetail(body) {
			t.Errorf("%q: %v %q", raw, resp, body)
		}
	}
}
