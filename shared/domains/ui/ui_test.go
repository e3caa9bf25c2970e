package ui_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/ui"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

var opts = ui.Options{Workflows: []workflow.Definition{builds.Definition()}}

func server(t testing.TB) http.Handler {
	t.Helper()
	h, err := ui.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	api.Mount(mux, ui.Routes, h, api.Edge{})
	return mux
}

func get(h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestPage(t *testing.T) {
	h := server(t)
	rec := get(h, "/")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
	csp := rec.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if !strings.Contains(rec.Body.String(), `<script type="module" src="ui/app.js">`) {
		t.Errorf("page: %s", rec.Body)
	}
	// The page is served at / only.
	for _, p := range []string{"/index.html", "/ui/index.html", "/ui/", "/ui/nope.js", "/ui/workflows/nope.json"} {
		if rec := get(h, p); rec.Code != 404 || !strings.Contains(rec.Body.String(), `"detail"`) {
			t.Errorf("%s: %d %s", p, rec.Code, rec.Body)
		}
	}
}

func TestAssets(t *testing.T) {
	h := server(t)
	types := map[string]string{
		"/ui/app.js":               "text/javascript; charset=utf-8",
		"/ui/style.css":            "text/css; charset=utf-8",
		"/ui/config.json":          "application/json",
		"/ui/icon.svg":             "image/svg+xml",
		"/ui/workflows/build.json": "application/json",
	}
	for p, ct := range types {
		rec := get(h, p)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ct || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v", p, rec.Code, rec.Header())
		}
		if rec.Header().Get("Cache-Control") != "no-cache" || rec.Header().Get("ETag") == "" {
			t.Errorf("%s: caching headers %v", p, rec.Header())
		}
	}
	plain := get(h, "/ui/app.js")
	zipped := get(h, "/ui/app.js", "Accept-Encoding", "br, gzip;q=0.8")
	if zipped.Header().Get("Content-Encoding") != "gzip" || zipped.Body.Len() >= plain.Body.Len() || zipped.Header().Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip: %v, %d of %d bytes", zipped.Header(), zipped.Body.Len(), plain.Body.Len())
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if !bytes.Equal(unzipped, plain.Body.Bytes()) {
		t.Error("the gzip form differs from the file")
	}
	if rec := get(h, "/ui/app.js", "Accept-Encoding", "gzip;q=0"); rec.Header().Get("Content-Encoding") != "" {
		t.Error("gzip;q=0 refuses gzip")
	}
	// Revalidation: each form has its own ETag.
	if rec := get(h, "/ui/app.js", "If-None-Match", plain.Header().Get("ETag")); rec.Code != 304 || rec.Body.Len() != 0 {
		t.Errorf("304: %d", rec.Code)
	}
	if rec := get(h, "/ui/app.js", "If-None-Match", zipped.Header().Get("ETag")); rec.Code != 200 {
		t.Errorf("the gzip ETag matched the plain form: %d", rec.Code)
	}
	if rec := get(h, "/ui/app.js", "Accept-Encoding", "gzip", "If-None-Match", `"x", `+zipped.Header().Get("ETag")); rec.Code != 304 {
		t.Errorf("304 gzip: %d", rec.Code)
	}
	req := httptest.NewRequest("HEAD", "/ui/style.css", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d %d bytes", rec.Code, rec.Body.Len())
	}
}

// The served graph is the build workflow's definition, with the state
// machine's transitions.
func TestWorkflowGraph(t *testing.T) {
	rec := get(server(t), "/ui/workflows/build.json")
	var g ui.Graph
	if err := json.Unmarshal(rec.Body.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	def := builds.Definition()
	first, _ := def.First()
	if g.Name != def.Name || g.StartAt != first || len(g.States) != len(def.Steps)+2 {
		t.Fatalf("%+v", g)
	}
	for i, s := range def.Steps {
		st := g.States[i]
		next, ok := def.Next(s.Name)
		switch {
		case s.FailureOnly:
			next = def.Name + " failed"
		case !ok:
			next = def.Name + " succeeded"
		}
		if st.Name != s.Name || st.Comment != s.Comment || st.Next != next || st.Catch != s.OnFailure ||
			st.FailureOnly != s.FailureOnly || st.MaxAttempts != s.MaxAttempts || st.BackoffSeconds != s.Backoff.Seconds() {
			t.Errorf("state %d: %+v for %+v", i, st, s)
		}
	}
	if g.States[3].Service != "codebuild" || g.States[0].Service != "lambda" {
		t.Errorf("services: %+v", g.States)
	}
	if end := g.States[len(g.States)-1]; end.Type != "Fail" || end.Name != "build failed" {
		t.Errorf("end: %+v", end)
	}
}

func TestGraphOfRejectsBrokenDefinitions(t *testing.T) {
	run := func(context.Context, workflow.State) (workflow.State, error) { return nil, nil }
	for _, def := range []workflow.Definition{
		{},
		{Name: "x"},
		{Name: "x", Steps: []workflow.Step{{Name: "A", Run: run, OnFailure: "B"}, {Name: "B", Run: run}}},
		{Name: "x", Steps: []workflow.Step{{Name: "A", Run: run, OnFailure: "missing"}}},
	} {
		if _, err := ui.GraphOf(def); err == nil {
			t.Errorf("%+v accepted", def)
		}
		if _, err := ui.New(ui.Options{Workflows: []workflow.Definition{def}}); err == nil {
			t.Errorf("New accepted %+v", def)
		}
	}
}

var (
	externalURL = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	jsImport    = regexp.MustCompile(`(?:from|import)\s*\(?\s*'(\./[^']+)'`)
	htmlRef     = regexp.MustCompile(`(?:src|href)="(ui/[^"]+)"`)
)

// Nothing is fetched from another site, and every file a page or module
// refers to is in the site.
func TestSiteIsSelfContained(t *testing.T) {
	site, err := ui.Site(opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = fs.WalkDir(site, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		data, _ := fs.ReadFile(site, p)
		text := strings.ReplaceAll(string(data), "http://www.w3.org/2000/svg", "")
		if p != ui.WorkflowPath("build") {
			if m := externalURL.FindString(text); m != "" {
				t.Errorf("%s refers to %s", p, m)
			}
		}
		refs := [][]string{}
		switch path.Ext(p) {
		case ".js":
			refs = jsImport.FindAllStringSubmatch(text, -1)
		case ".html":
			refs = htmlRef.FindAllStringSubmatch(text, -1)
		}
		for _, m := range refs {
			target := path.Join(path.Dir(p), m[1])
			if _, err := fs.Stat(site, target); err != nil {
				t.Errorf("%s refers to %s, which is not in the site", p, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"index.html", ui.ConfigPath, ui.WorkflowPath("build"), "ui/app.js"} {
		if _, err := fs.Stat(site, p); err != nil {
			t.Errorf("%s missing", p)
		}
	}
	var cfg map[string]string
	data, _ := fs.ReadFile(site, ui.ConfigPath)
	if err := json.Unmarshal(data, &cfg); err != nil || cfg["api_base_url"] != "" {
		t.Errorf("config.json: %s", data)
	}
	if n < 10 {
		t.Errorf("only %d files", n)
	}
}

// No path reaches anything but a 200, 304 or 404 (never a 500 or panic).
func FuzzPaths(f *testing.F) {
	h := server(f)
	for _, s := range []string{"/", "/ui/app.js", "/ui/../ui/app.js", "/ui/%2e%2e/secret", "/ui/workflows/build.json", "/ui/\x00", "/ui//app.js"} {
		f.Add(s, "gzip")
	}
	f.Fuzz(func(t *testing.T, p, enc string) {
		u := "/" + strings.TrimLeft(p, "/")
		req, err := http.NewRequest("GET", "http://x"+u, nil)
		if err != nil {
			return
		}
		req.Header.Set("Accept-Encoding", enc)
		req.Header.Set("If-None-Match", enc)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: %d", u, rec.Code)
		}
	})
}

func BenchmarkAsset(b *testing.B) {
	h := server(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if rec := get(h, "/ui/threads.js", "Accept-Encoding", "gzip"); rec.Code != 200 {
				b.Fatal(rec.Code)
			}
		}
	})
}
