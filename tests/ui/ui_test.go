// Package ui drives the web UI in Debian's chromium with Playwright
// (playwright-core and @axe-core/playwright, pinned in package.json and
// package-lock.json) against the real local server, started here on
// 127.0.0.1 as `make run` starts it. The specs are the *.test.mjs files;
// screenshots and the accessibility and page-weight reports go to
// artifacts/ (ignored by git).
package ui

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/compose/uigroup"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/ui"
)

const (
	adminKey = "ap_test_ui_admin_key_0123456789abcdef"
	chromium = "/usr/bin/chromium"
)

// prerequisites skips (or, under CI=true, fails) without what the browser
// tests need: npm ci in this folder, node, and Debian's chromium.
func prerequisites(t *testing.T) {
	t.Helper()
	missing := ""
	switch {
	case !exists(filepath.Join("node_modules", "playwright-core", "package.json")) || !exists(filepath.Join("node_modules", "@axe-core", "playwright", "package.json")):
		missing = "tests/ui/node_modules is missing: run `npm ci --prefix tests/ui` (scripts/test.sh does)"
	case !exists(chromium):
		missing = chromium + " is missing: `apt-get install chromium` (scripts/test.sh does)"
	default:
		if _, err := exec.LookPath("node"); err != nil {
			missing = "node is not installed"
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(missing)
	}
	t.Skip(missing)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// serve starts the all-in-one server on 127.0.0.1 the way `make run`
// does (local.Serve: bootstrap, every route group, background work).
func serve(t *testing.T) string {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = ln.Addr().String()
	cfg.BaseURL = "http://" + cfg.Addr
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
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
	base := "http://" + cfg.Addr
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := http.Get(base + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crossOrigin serves the UI's files from another origin, as S3 and
// CloudFront would, with ui/config.json naming the API through a proxy
// that answers CORS as the API's gateway is configured to.
func crossOrigin(t *testing.T, api string) (static, proxied string) {
	t.Helper()
	target, _ := url.Parse(api)
	rp := httputil.NewSingleHostReverseProxy(target)
	var staticURL string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin == staticURL {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Headers", "X-Api-Key, X-Tenant-Id, Content-Type, Authorization, Prefer")
			h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, PUT, DELETE")
			h.Set("Access-Control-Expose-Headers", "X-Pagination-Total, X-Pagination-Next, Retry-After")
			h.Set("Access-Control-Max-Age", "600")
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	site, err := ui.Site(uigroup.Options)
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]string{"api_base_url": proxy.URL})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/")
		if p == "" {
			p = "index.html"
		}
		if p == ui.ConfigPath {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(config)
			return
		}
		data, err := fs.ReadFile(site, p)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		switch filepath.Ext(p) {
		case ".html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' "+proxy.URL)
		case ".js":
			w.Header().Set("Content-Type", "text/javascript")
		case ".css":
			w.Header().Set("Content-Type", "text/css")
		case ".json":
			w.Header().Set("Content-Type", "application/json")
		case ".svg":
			w.Header().Set("Content-Type", "image/svg+xml")
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	staticURL = srv.URL
	return srv.URL, proxy.URL
}

// repos makes the git repositories the specs deploy: a good one, one whose
// langgraph.json is broken, and one served over HTTP whose fetches the
// specs can hold (to watch a build while it runs).
func repos(t *testing.T) (good, bad, held string, control string) {
	t.Helper()
	g := gittest.NewRepo(t, filepath.Join(t.TempDir(), "good"))
	g.Commit("agent", gittest.Agent("agent", "other"))
	b := gittest.NewRepo(t, filepath.Join(t.TempDir(), "bad"))
	files := gittest.Agent("agent")
	files["langgraph.json"] = `{"dependencies": ["."], "graphs": {"agent": ` + "\n" // cut short: not JSON
	b.Commit("broken graph configuration", files)
	gs := gittest.NewServer(t)
	hr := gittest.NewRepo(t, filepath.Join(t.TempDir(), "held"))
	hr.Commit("agent", gittest.Agent("agent"))
	heldURL := gs.Add("held", hr.Dir)
	ctl := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold":
			gs.Hold()
		case "/release":
			gs.Release()
		case "/waiting":
			_, _ = w.Write([]byte(strconv.FormatInt(gs.Waiting.Load(), 10)))
			return
		default:
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() { gs.Release(); ctl.Close() })
	return g.Dir, b.Dir, heldURL, ctl.URL
}

func TestUI(t *testing.T) {
	prerequisites(t)
	base := serve(t)
	good, bad, held, control := repos(t)
	static, proxied := crossOrigin(t, base)
	artifacts, err := filepath.Abs("artifacts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// UI_SPECS narrows the run to some spec files (a glob), for development.
	pattern := "*.test.mjs"
	if p := os.Getenv("UI_SPECS"); p != "" {
		pattern = p
	}
	specs, err := filepath.Glob(pattern)
	if err != nil || len(specs) == 0 {
		t.Fatalf("no specs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, specs...)
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(),
		"AGENTPLANE_URL="+base,
		"AGENTPLANE_API_KEY="+adminKey,
		"UI_GOOD_REPO="+good,
		"UI_BAD_REPO="+bad,
		"UI_HELD_REPO="+held,
		"UI_CONTROL_URL="+control,
		"UI_STATIC_URL="+static,
		"UI_PROXY_URL="+proxied,
		"UI_ARTIFACTS="+artifacts,
		"UI_CHROMIUM="+chromium,
	)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser specs failed: %v (screenshots and reports in %s)", err, artifacts)
	}
}
