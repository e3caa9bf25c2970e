package toolserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two tenants call through one process at the same time; each sees only
// its own data, and every platform call carries the caller's own key.
func TestTwoTenantsConcurrently(t *testing.T) {
	w := newWorld(t)
	type expect struct {
		key, workspace, datasetDesc, prompt string
		messages                            int
	}
	tenants := []expect{
		{keyA, wsA, "Questions and answers", "You answer support questions in {language}.", 80},
		{keyB, wsB, "Tenant B's dataset", "Tenant B prompt.", 6},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 8; i++ {
		for _, e := range tenants {
			wg.Add(1)
			go func(e expect, i int) {
				defer wg.Done()
				headers := map[string]string{toolserver.HeaderAPIKey: e.key}
				if i%2 == 0 {
					headers[toolserver.HeaderWorkspaceID] = e.workspace
				}
				cs := connect(t, w.srv.URL, headers)
				for round := 0; round < 3; round++ {
					h, isErr := call(t, cs, "get_thread_history", map[string]any{"thread_id": "thread-a", "project_name": "chat-app", "page_number": 1, "max_chars_per_page": 30000, "preview_chars": 10})
					if isErr || len(items(h["result"])) != e.messages {
						errs <- fmt.Errorf("%s: thread of %d messages, want %d (%v)", e.key, len(items(h["result"])), e.messages, h["error"])
					}
					d, _ := call(t, cs, "read_dataset", map[string]any{"dataset_name": "qa-pairs"})
					if ds, _ := d["dataset"].(map[string]any); ds["description"] != e.datasetDesc {
						errs <- fmt.Errorf("%s: dataset %v", e.key, d)
					}
					p, _ := call(t, cs, "get_prompt_by_name", map[string]any{"prompt_name": "support-answer"})
					msgs := items(p["messages"])
					if len(msgs) == 0 || msgs[0]["prompt"].(map[string]any)["template"] != e.prompt {
						errs <- fmt.Errorf("%s: prompt %v", e.key, p)
					}
					u, _ := call(t, cs, "get_billing_usage", map[string]any{"starting_on": "2025-08-01T00:00:00Z", "ending_before": "2025-09-01T00:00:00Z"})
					for _, m := range items(u["usage"]) {
						for ws := range m["groups"].(map[string]any) {
							if (e.key == keyA) != (ws != wsB) {
								errs <- fmt.Errorf("%s: usage of workspace %s", e.key, ws)
							}
						}
					}
				}
			}(e, i)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, r := range w.platform.Requests() {
		if r.APIKey != keyA && r.APIKey != keyB {
			t.Fatalf("a platform call with key %q", r.APIKey)
		}
		if r.Workspace != "" && ((r.APIKey == keyA) != (r.Workspace == wsA)) {
			t.Fatalf("key %s sent with workspace %s", r.APIKey, r.Workspace)
		}
	}
}

// switchable lets a test change a session's credentials between requests.
type switchable struct {
	mu  sync.Mutex
	key string
}

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set(toolserver.HeaderAPIKey, key)
	return http.DefaultTransport.RoundTrip(r)
}

// The key of every request is used, never one remembered from an earlier
// request of the same client (the original server cached the first).
func TestCredentialsAreReadPerRequest(t *testing.T) {
	w := newWorld(t)
	sw := &switchable{key: keyA}
	client := mcp.NewClient(&mcp.Implementation{Name: "switch", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: w.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: sw}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	desc := func() any {
		d := ok(t, cs, "read_dataset", map[string]any{"dataset_name": "qa-pairs"})
		return d["dataset"].(map[string]any)["description"]
	}
	if got := desc(); got != "Questions and answers" {
		t.Fatalf("A: %v", got)
	}
	sw.mu.Lock()
	sw.key = keyB
	sw.mu.Unlock()
	if got := desc(); got != "Tenant B's dataset" {
		t.Fatalf("after switching to B: %v", got)
	}
	sw.mu.Lock()
	sw.key = "unknown-key"
	sw.mu.Unlock()
	fails(t, cs, "read_dataset", map[string]any{"dataset_name": "qa-pairs"}, "refused the API key")
}

// Tool failures are tool errors (isError) with a clear message; the
// process keeps serving.
func TestToolErrors(t *testing.T) {
	w := newWorld(t, func(o *toolserver.Options) {
		o.AllowLocalEndpoints = true
		o.CallTimeout = 300 * time.Millisecond
		o.MaxResponseBytes = 64 << 10
	})
	cs := w.session(t, keyA)
	args := map[string]any{"dataset_name": "qa-pairs"}
	for name, c := range map[string]struct {
		fault func(w http.ResponseWriter, r *http.Request) bool
		want  string
	}{
		"server error": {func(w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, `{"detail":"database unavailable"}`, http.StatusServiceUnavailable)
			return true
		}, "503 for GET /datasets: database unavailable"},
		"slow": {func(w http.ResponseWriter, r *http.Request) bool {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return true
		}, "did not answer GET /datasets in time"},
		"not JSON": {func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = io.WriteString(w, "<html>hello</html>")
			return true
		}, "not the expected JSON"},
		"wrong shape": {func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = io.WriteString(w, `{"datasets": []}`)
			return true
		}, "found an object where an array was expected"},
		"too large": {func(w http.ResponseWriter, r *http.Request) bool {
			_, _ = io.WriteString(w, `[{"name":"`+strings.Repeat("x", 100<<10)+`"}]`)
			return true
		}, "exceeded 65536 bytes"},
		"redirect": {func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, "https://elsewhere.example/datasets", http.StatusFound)
			return true
		}, `redirected GET /datasets (302) to "https://elsewhere.example/datasets"`},
	} {
		w.platform.SetFault(c.fault)
		start := time.Now()
		fails(t, cs, "read_dataset", args, c.want)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: took %v", name, d)
		}
	}
	w.platform.SetFault(nil)
	// Credentials the platform refuses.
	fails(t, connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: "wrong"}), "read_dataset", args, "the platform refused the API key: 401")
	fails(t, connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: keyA, toolserver.HeaderWorkspaceID: wsB}), "read_dataset", args, "denied access: 403")
	// Endpoints that cannot be called.
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "http://" + closed.Addr().String()
	closed.Close()
	for endpoint, want := range map[string]string{
		"not a url":                   "not an http(s) URL",
		"ftp://files.example":         "not an http(s) URL",
		"https://k:s@api.example.com": "credentials",
		deadURL:                       "cannot reach the platform",
		"http://no-such-host.invalid": "cannot resolve the platform host",
	} {
		fails(t, connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: keyA, toolserver.HeaderEndpoint: endpoint}), "read_dataset", args, want)
	}
	// Still serving.
	ok(t, cs, "read_dataset", args)
}

// resolver maps test names to addresses (DNS the test controls).
type resolver map[string]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// In hosted mode a caller's SERVICE-ENDPOINT never reaches loopback,
// private or link-local addresses: refused by form (http, IP literals,
// localhost) and, for names, at connect time; nothing reaches the
// platform double on 127.0.0.1.
func TestHostedEndpointGuard(t *testing.T) {
	w := newWorld(t, func(o *toolserver.Options) {
		o.Resolver = resolver{"platform.rebind.test": "127.0.0.1", "metadata.test": "169.254.169.254", "v6.test": "fd00::1"}
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(w.platform.URL, "http://"))
	before := len(w.platform.Requests())
	for endpoint, want := range map[string]string{
		w.platform.URL + "/api/v1":               "only https",
		"https://127.0.0.1:" + port:              "not a public address",
		"https://localhost:" + port:              "not a public address",
		"https://app.localhost:" + port:          "not a public address",
		"https://[::1]:" + port:                  "not a public address",
		"https://[::ffff:127.0.0.1]:" + port:     "not a public address",
		"https://169.254.169.254/latest":         "not a public address",
		"https://10.0.0.8":                       "not a public address",
		"https://platform.rebind.test:" + port:   "resolves to a non-public address",
		"https://metadata.test":                  "resolves to a non-public address",
		"https://v6.test":                        "resolves to a non-public address",
		"https://user:pass@platform.example.com": "credentials",
	} {
		cs := connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: keyA, toolserver.HeaderEndpoint: endpoint})
		fails(t, cs, "list_datasets", nil, want)
	}
	if n := len(w.platform.Requests()) - before; n != 0 {
		t.Fatalf("%d requests reached the loopback platform", n)
	}
	// The operator's default endpoint is trusted, whatever its address.
	ok(t, w.session(t, keyA), "list_datasets", nil)
	ok(t, connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: keyA, toolserver.HeaderEndpoint: w.platform.URL + "/"}), "list_datasets", nil)

	// An allow-list confines callers to the hosted regions.
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: "https://api.us.example.com", AllowedEndpoints: []string{"https://api.eu.example.com/"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectHandler(t, svc, map[string]string{toolserver.HeaderAPIKey: keyA, toolserver.HeaderEndpoint: "https://self-hosted.example.com"})
	fails(t, cs, "list_datasets", nil, "serves only https://api.eu.example.com")
}

// Local mode: a caller may point the server at another platform for one
// request; credentials and endpoint travel together.
func TestEndpointPerRequest(t *testing.T) {
	w := newWorld(t, func(o *toolserver.Options) { o.AllowLocalEndpoints = true })
	other := newWorld(t)
	cs := connect(t, w.srv.URL, map[string]string{toolserver.HeaderAPIKey: keyB, toolserver.HeaderEndpoint: other.platform.URL})
	ok(t, cs, "list_datasets", nil)
	if len(other.platform.Requests()) == 0 {
		t.Fatal("the named endpoint was not called")
	}
	for _, r := range w.platform.Requests() {
		if r.APIKey == keyB {
			t.Fatal("the default platform got the call")
		}
	}
}

func connectHandler(t *testing.T, svc *toolserver.Service, headers map[string]string) *mcp.ClientSession {
	t.Helper()
	srv := newLocalServer(t, svc.Handler())
	return connect(t, srv, headers)
}

// The stdio form: credentials from the environment, the same tools.
func TestServeStdio(t *testing.T) {
	w := newWorld(t)
	env := map[string]string{toolserver.EnvAPIKey: keyA, toolserver.EnvWorkspaceID: wsA}
	run := func(env map[string]string) (*mcp.ClientSession, func()) {
		cIn, sOut := io.Pipe()
		sIn, cOut := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.svc.ServeStdio(ctx, sIn, sOut, func(k string) string { return env[k] }) }()
		client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: cIn, Writer: cOut}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs, func() {
			_ = cs.Close()
			cancel()
			if err := <-done; err != nil && !errors.Is(err, io.ErrClosedPipe) {
				t.Errorf("ServeStdio: %v", err)
			}
		}
	}
	cs, stop := run(env)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 15 {
		t.Fatalf("tools: %v", err)
	}
	h := ok(t, cs, "get_thread_history", map[string]any{"thread_id": "thread-a", "project_name": "chat-app", "page_number": 1})
	if h["total_pages"] == 0.0 {
		t.Fatalf("history: %v", h)
	}
	if r := w.platform.Requests(); r[len(r)-1].APIKey != keyA || r[len(r)-1].Workspace != wsA {
		t.Fatalf("stdio credentials: %+v", r[len(r)-1])
	}
	stop()
	cs, stop = run(map[string]string{})
	defer stop()
	fails(t, cs, "list_datasets", nil, "SERVICE_API_KEY")
	if res := callRaw(t, cs, "push_prompt", nil); res.IsError {
		t.Fatal("documentation tools need no key")
	}
}
