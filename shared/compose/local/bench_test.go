package local_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
)

// deployed is a running local process with one DEPLOYED deployment and
// one thread in it, for benchmarks of the request path as a client sees
// it: the edge (authentication), the deployment lookup, the handler, JSON
// encoding and the access log (JSON, as in production, to io.Discard).
type deployed struct {
	h      http.Handler
	dep    string
	thread string
}

func deploy(b *testing.B) deployed {
	b.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: b.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "info"}
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pr.RunBackground(ctx) }()
	b.Cleanup(func() { cancel(); <-done; pr.Close() })
	if _, err := pr.P.Identity.Bootstrap(ctx, adminKey); err != nil {
		b.Fatal(err)
	}
	h := pr.Handler()
	repo := gittest.NewRepo(b, filepath.Join(b.TempDir(), "repo"))
	repo.Commit("agent", gittest.Agent("agent"))
	body := `{"name":"bench","source":"repo_host","source_config":{"repo_url":"` + repo.Dir + `","deployment_type":"dev","build_on_push":false},` +
		`"source_revision_config":{"repo_ref":"main","graph_config_path":"langgraph.json"},"secrets":[]}`
	var d struct {
		ID  string `json:"id"`
		Rev string `json:"latest_revision_id"`
	}
	call(b, h, "POST", "/v2/deployments", body, 201, &d)
	for deadline := time.Now().Add(time.Minute); ; {
		var r struct{ Status string }
		call(b, h, "GET", "/v2/deployments/"+d.ID+"/revisions/"+d.Rev, "", 200, &r)
		if r.Status == "DEPLOYED" {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("revision %s", r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	call(b, h, "POST", "/deployments/"+d.ID+"/threads", `{"metadata":{"graph_id":"agent"},"supersteps":[`+
		`{"updates":[{"values":{},"as_node":"__input__"}]},`+
		`{"updates":[{"values":{"messages":[{"type":"human","content":"hi"}]},"as_node":"__start__"}]}]}`, 200, &th)
	return deployed{h: h, dep: d.ID, thread: th.ThreadID}
}

func call(b *testing.B, h http.Handler, method, path, body string, want int, out any) {
	b.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", adminKey)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRequest(b *testing.B, h http.Handler, method, path, body string) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("X-Api-Key", adminKey)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Errorf("%d %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// The hot reads of the thread API through the whole handler stack.
func BenchmarkThreadGet(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "GET", "/deployments/"+d.dep+"/threads/"+d.thread, "")
}

func BenchmarkThreadState(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "GET", "/deployments/"+d.dep+"/threads/"+d.thread+"/state", "")
}

func BenchmarkThreadCreate(b *testing.B) {
	d := deploy(b)
	benchRequest(b, d.h, "POST", "/deployments/"+d.dep+"/threads", `{"metadata":{"graph_id":"agent"}}`)
}
