// Package ui serves the web UI: one HTML page, a style sheet and native ES
// modules, embedded in the binary (no build step, nothing fetched from the
// internet), plus the graph of each workflow definition as JSON, generated
// here from the definition itself (the one the Step Functions state machine
// is generated from). The UI is a client of the JSON API like any other: it
// holds no handler that reads the store.
//
// The same files can be hosted anywhere (an S3 bucket behind CloudFront):
// Site returns them, and ui/config.json says where the API is.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

//go:embed site
var embedded embed.FS

// ConfigPath is the site file that tells the UI where the API is
// ({"api_base_url": ""} means the origin that serves the page).
const ConfigPath = "ui/config.json"

// WorkflowPath is the site path of a workflow's graph.
func WorkflowPath(name string) string { return "ui/workflows/" + name + ".json" }

// Options are what the UI is built from.
type Options struct {
	// Workflows are the definitions whose graphs the UI draws
	// (builds.Definition() for the revision build).
	Workflows []workflow.Definition
}

// Site returns every file of the UI, by path: index.html, ui/* (the
// embedded assets and ui/config.json) and the generated ui/workflows/*.json.
// A static host (S3) serves exactly these files, with ui/config.json
// replaced by one that names the API's URL.
func Site(o Options) (fs.FS, error) {
	out := fstest.MapFS{}
	err := fs.WalkDir(embedded, "site", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, "site/")] = &fstest.MapFile{Data: data, Mode: 0o644}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, def := range o.Workflows {
		g, err := GraphOf(def)
		if err != nil {
			return nil, err
		}
		data, err := json.MarshalIndent(g, "", "  ")
		if err != nil {
			return nil, err
		}
		out[WorkflowPath(def.Name)] = &fstest.MapFile{Data: append(data, '\n'), Mode: 0o644}
	}
	return out, nil
}

// Graph is a workflow definition as the UI draws it: the states of the
// state machine generated from it, with their transitions.
type Graph struct {
	Name    string  `json:"name"`
	StartAt string  `json:"start_at"`
	States  []State `json:"states"`
}

// State is one state of a Graph.
type State struct {
	Name string `json:"name"`
	// Type is "Task", "Succeed" or "Fail" (the Step Functions types).
	Type    string `json:"type"`
	Comment string `json:"comment,omitempty"`
	// Next is the state that follows on success.
	Next string `json:"next,omitempty"`
	// Catch is the failure handler that runs when the step fails for good.
	Catch string `json:"catch,omitempty"`
	// FailureOnly marks handlers that run only as a Catch target.
	FailureOnly bool `json:"failure_only,omitempty"`
	// MaxAttempts and BackoffSeconds are the retry policy of transient errors.
	MaxAttempts    int     `json:"max_attempts,omitempty"`
	BackoffSeconds float64 `json:"backoff_seconds,omitempty"`
	// Service is where the step runs: "lambda", or an AWS service
	// integration ("codebuild").
	Service string `json:"service,omitempty"`
}

// GraphOf turns a definition into its graph, with the transitions the CDK
// app gives the state machine: steps in definition order (failure-only
// steps skipped) ending in "<name> succeeded"; a step's failure goes to its
// OnFailure handler, and a handler ends in "<name> failed".
func GraphOf(def workflow.Definition) (Graph, error) {
	first, ok := def.First()
	if def.Name == "" || !ok {
		return Graph{}, fmt.Errorf("ui: workflow %q has no step to draw", def.Name)
	}
	succeeded, failed := def.Name+" succeeded", def.Name+" failed"
	g := Graph{Name: def.Name, StartAt: first}
	for _, s := range def.Steps {
		st := State{Name: s.Name, Type: "Task", Comment: s.Comment, FailureOnly: s.FailureOnly,
			MaxAttempts: s.MaxAttempts, BackoffSeconds: s.Backoff.Seconds(), Service: "lambda"}
		if s.AWSService != "" {
			st.Service = s.AWSService
		}
		switch {
		case s.FailureOnly:
			st.Next = failed
		default:
			st.Next = succeeded
			if next, ok := def.Next(s.Name); ok {
				st.Next = next
			}
			if s.OnFailure != "" {
				if h, ok := def.Step(s.OnFailure); !ok || !h.FailureOnly {
					return Graph{}, fmt.Errorf("ui: workflow %s: step %s: OnFailure %q is not a failure-only step", def.Name, s.Name, s.OnFailure)
				}
				st.Catch = s.OnFailure
			}
		}
		g.States = append(g.States, st)
	}
	g.States = append(g.States, State{Name: succeeded, Type: "Succeed"}, State{Name: failed, Type: "Fail"})
	return g, nil
}

// Handler serves the site.
type Handler struct {
	files map[string]*asset
}

type asset struct {
	body        []byte
	ctype, etag string
	// gz is the gzip form, made on the first request that accepts it (nil
	// when it would not be smaller): compressing every file at start cost
	// the ui function 35 ms of its cold init.
	gzOnce sync.Once
	gz     []byte
}

// gzipped returns the file's gzip form, or nil when it is not smaller.
func (a *asset) gzipped() []byte {
	a.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.body)
		_ = zw.Close()
		if buf.Len() < len(a.body) {
			a.gz = buf.Bytes()
		}
	})
	return a.gz
}

// New prepares the site's files once: their type and ETag.
func New(o Options) (*Handler, error) {
	site, err := Site(o)
	if err != nil {
		return nil, err
	}
	h := &Handler{files: map[string]*asset{}}
	err = fs.WalkDir(site, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(site, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		h.files[p] = &asset{body: data, ctype: contentType(p), etag: hex.EncodeToString(sum[:12])}
		return nil
	})
	return h, err
}

// Paths lists the served files (sorted), for tests and the docs.
func (h *Handler) Paths() []string {
	out := make([]string, 0, len(h.files))
	for p := range h.files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".json":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Routes is the "ui" route group: the page at / and its files under /ui/.
var Routes = api.Group[*Handler]{
	Name:        "ui",
	Description: "the web UI: its page, style sheet, ES modules and the build workflow's graph (generated from the workflow definition)",
	Routes: []api.Route[*Handler]{
		{Method: "GET", Path: "/{$}", Summary: "The web UI's page", Auth: api.Public, Handle: (*Handler).index},
		{Method: "GET", Path: "/ui/{file...}", Summary: "A file of the web UI (style sheet, ES module, ui/config.json, ui/workflows/{name}.json)", Auth: api.Public, Handle: (*Handler).file},
	},
}

// csp keeps the page to its own files: no inline script or style, no other
// origin (the API is this origin when the Go server serves the page; a
// static host sets its own policy naming the API's origin).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (h *Handler) index(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Security-Policy", csp)
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	return h.serve(w, r, "index.html")
}

func (h *Handler) file(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, "ui/"+r.PathValue("file"))
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, p string) error {
	a, ok := h.files[p]
	if !ok || p == "index.html" && r.URL.Path != "/" {
		return web.NotFound("No UI file %s", r.URL.Path)
	}
	body, etag := a.body, `"`+a.etag+`"`
	hd := w.Header()
	hd.Set("Vary", "Accept-Encoding")
	if acceptsGzip(r) {
		if gz := a.gzipped(); gz != nil {
			body, etag = gz, `"`+a.etag+`-gz"`
			hd.Set("Content-Encoding", "gzip")
		}
	}
	hd.Set("Content-Type", a.ctype)
	hd.Set("X-Content-Type-Options", "nosniff")
	// The files are not named by their content, so browsers revalidate
	// every time (a 304 without a body): an upgrade is seen at once.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", etag)
	if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	return nil
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			return strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0"
		}
	}
	return false
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}
