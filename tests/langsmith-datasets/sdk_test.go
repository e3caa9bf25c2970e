// Package langsmithdatasets drives the real langsmith JS SDK (pinned in
// package.json and package-lock.json) against the datasets and prompts
// route groups served in process on 127.0.0.1.
package langsmithdatasets

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/prompts"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const adminKey = "ap_test_langsmith_datasets_admin_key_0123456789"

// nodeModules skips (or, under CI, fails) without `npm ci` here.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "langsmith", "package.json")); err != nil {
		msg := "tests/langsmith-datasets/node_modules is missing: run `npm ci --prefix tests/langsmith-datasets`"
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

func TestLangSmithSDK(t *testing.T) {
	nodeModules(t)
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := identity.New(st)
	boot, err := ids.Bootstrap(ctx, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dsvc, err := datasets.New(datasets.Options{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	psvc, err := prompts.New(prompts.Options{Store: st, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	edge := api.Edge{Auth: ids}
	api.Mount(mux, datasets.Routes, datasets.NewHandler(dsvc), edge)
	api.Mount(mux, prompts.Routes, prompts.NewHandler(psvc), edge)
	// /info and /settings belong to the tracing domain; these stand-ins
	// answer what the composition will: the multipart examples flag on,
	// and the workspace's handle by the prompts rule.
	for _, prefix := range []string{"", "/api/v1"} {
		mux.HandleFunc("GET", prefix+"/info", func(w http.ResponseWriter, r *http.Request) error {
			web.WriteJSON(w, 200, map[string]any{"version": "0.0.0-test", "instance_flags": map[string]any{"dataset_examples_multipart_enabled": true},
				"batch_ingest_config": map[string]any{"use_multipart_endpoint": true, "size_limit": 100, "size_limit_bytes": 5 << 20}})
			return nil
		})
		mux.HandleFunc("GET", prefix+"/settings", func(w http.ResponseWriter, r *http.Request) error {
			web.WriteJSON(w, 200, map[string]any{"id": boot.Workspace.ID, "display_name": boot.Workspace.DisplayName,
				"created_at": boot.Workspace.CreatedAt, "tenant_handle": prompts.Handle(boot.Workspace.ID)})
			return nil
		})
	}
	var mu sync.Mutex
	var failures []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			mu.Lock()
			failures = append(failures, r.Method+" "+r.URL.String()+": "+rec.Body.String())
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	defer srv.Close()

	runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "node", "--test", "--test-reporter=spec", "datasets.test.mjs")
	cmd.Env = append(os.Environ(), "AGENTPLANE_URL="+srv.URL, "AGENTPLANE_API_KEY="+adminKey, "NO_COLOR=1",
		"LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	out, err := cmd.CombinedOutput()
	for _, f := range failures {
		t.Errorf("server error: %s", f)
	}
	if err != nil {
		t.Fatalf("node --test datasets.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
