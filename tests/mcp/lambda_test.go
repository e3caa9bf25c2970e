package mcptests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// buildLambda builds ./lambdamain as the Lambda bootstrap is built:
// static, stripped, without the RPC runtime.
func buildLambda(t testing.TB, goarch string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap-"+goarch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-tags", "lambda.norpc", "-o", bin, "./lambdamain")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./lambdamain (%s): %v\n%s", goarch, err, out)
	}
	return bin
}

// The tool server's Lambda binary (linux/arm64, stripped) stays under the
// interface's 15 MB.
func TestLambdaBinarySize(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles a binary")
	}
	st, err := os.Stat(buildLambda(t, "arm64"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("linux/arm64 bootstrap: %d bytes (%.1f MiB)", st.Size(), float64(st.Size())/(1<<20))
	if st.Size() > 15_000_000 {
		t.Fatalf("bootstrap of %d bytes exceeds 15 MB", st.Size())
	}
}

// runtimeAPI is the Lambda Runtime API as the bootstrap sees it: it hands
// out the queued events and records the answers.
type runtimeAPI struct {
	mu       sync.Mutex
	events   [][]byte
	answers  map[string][]byte
	firstGet chan struct{}
	once     sync.Once
	done     chan struct{}
}

func newRuntimeAPI(events ...[]byte) *runtimeAPI {
	return &runtimeAPI{events: events, answers: map[string][]byte{}, firstGet: make(chan struct{}), done: make(chan struct{})}
}

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/2018-06-01/runtime/invocation/next":
		a.once.Do(func() { close(a.firstGet) })
		a.mu.Lock()
		if len(a.events) == 0 {
			a.mu.Unlock()
			select { // no more work: hold the bootstrap until the test ends
			case <-a.done:
			case <-r.Context().Done():
			}
			return
		}
		ev := a.events[0]
		id := fmt.Sprintf("req-%d", len(a.events))
		a.events = a.events[1:]
		a.mu.Unlock()
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", id)
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(time.Minute).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:mcp")
		_, _ = w.Write(ev)
	case strings.HasPrefix(r.URL.Path, "/2018-06-01/runtime/invocation/"):
		parts := strings.Split(r.URL.Path, "/")
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.answers[parts[4]+" "+parts[5]] = body
		a.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	default: // init errors
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.answers[r.URL.Path] = body
		a.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}
}

func start(t testing.TB, bin string, api *runtimeAPI) (*exec.Cmd, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(api)
	cmd := exec.Command(bin)
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(srv.URL, "http://"), "SERVICE_ENDPOINT=https://api.example.com", "PATH=/usr/bin:/bin"}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, srv
}

func stop(cmd *exec.Cmd, srv *httptest.Server, api *runtimeAPI) {
	close(api.done)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	srv.Close()
}

// The bootstrap answers API Gateway events: the health check, and a
// tools/list over /mcp.
func TestLambdaBootstrapServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	health, _ := json.Marshal(events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/health", Resource: "/health"})
	list, _ := json.Marshal(events.APIGatewayProxyRequest{
		HTTPMethod: "POST", Path: "/mcp", Resource: "/mcp",
		Headers: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "SERVICE-API-KEY": "k"},
		Body:    `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	})
	api := newRuntimeAPI(health, list)
	cmd, srv := start(t, buildLambda(t, goarchHost()), api)
	defer stop(cmd, srv, api)
	deadline := time.Now().Add(30 * time.Second)
	for {
		api.mu.Lock()
		n := len(api.answers)
		api.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	var h, l events.APIGatewayProxyResponse
	_ = json.Unmarshal(api.answers["req-2 response"], &h)
	_ = json.Unmarshal(api.answers["req-1 response"], &l)
	if h.StatusCode != 200 || h.Body != "Tool server is running" {
		t.Fatalf("health: %+v (%v)", h, api.answers)
	}
	if l.StatusCode != 200 || strings.Count(l.Body, `"inputSchema"`) != 15 {
		t.Fatalf("tools/list: %d %.300s", l.StatusCode, l.Body)
	}
}

func goarchHost() string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		return "amd64"
	}
	return strings.TrimSpace(string(out))
}

// Cold init: from exec of the bootstrap (this machine's architecture) to
// its first request for work, i.e. process start, package initialisation
// and building the tool server with its 15 tools.
func BenchmarkLambdaColdInit(b *testing.B) {
	bin := buildLambda(b, goarchHost())
	var times []time.Duration
	b.ResetTimer()
	for b.Loop() {
		api := newRuntimeAPI()
		srv := httptest.NewServer(api)
		cmd := exec.Command(bin)
		cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(srv.URL, "http://"), "SERVICE_ENDPOINT=https://api.example.com"}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		select {
		case <-api.firstGet:
		case <-time.After(30 * time.Second):
			b.Fatal("the bootstrap never asked for work")
		}
		times = append(times, time.Since(t0))
		b.StopTimer()
		stop(cmd, srv, api)
		b.StartTimer()
	}
	slices.Sort(times)
	// The median and the fastest start: on a shared machine the mean mostly
	// measures the other processes.
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-init-ms")
	b.ReportMetric(float64(times[0].Microseconds())/1000, "min-init-ms")
}
