package web

import (
	"net/http"
	"sort"
	"strings"
)

// Mux is a net/http ServeMux that remembers the routes registered on it (so
// tests can compare them with shared/routes) and answers unknown paths and
// methods in the interface's JSON shape instead of plain text.
type Mux struct {
	// fast holds the routes and a catch-all: a request that matches a
	// route is matched once. Asking mux first whether a route matched and
	// then letting it serve matched every request twice (5% of a GET's
	// time in the handler stack).
	fast *http.ServeMux
	// mux holds the routes alone; the catch-all asks it what ServeMux
	// would have done (redirect, 404 or 405).
	mux      *http.ServeMux
	patterns map[string]bool
	paths    map[string][]string // path pattern → methods, for 405 Allow
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	m := &Mux{fast: http.NewServeMux(), mux: http.NewServeMux(), patterns: map[string]bool{}, paths: map[string][]string{}}
	m.fast.HandleFunc("/", m.unmatched)
	return m
}

// Handle registers h for method and path ("GET", "/v2/deployments/{id}").
func (m *Mux) Handle(method, path string, h http.Handler) {
	p := method + " " + path
	if m.patterns[p] {
		panic("web: duplicate route " + p)
	}
	m.patterns[p] = true
	m.paths[path] = append(m.paths[path], method)
	m.mux.Handle(p, h)
	m.fast.Handle(p, h)
}

// HandleFunc registers an error-returning handler.
func (m *Mux) HandleFunc(method, path string, h HandlerFunc) { m.Handle(method, path, h) }

// Patterns returns the registered "METHOD /path" patterns, sorted.
func (m *Mux) Patterns() []string {
	out := make([]string, 0, len(m.patterns))
	for p := range m.patterns {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP dispatches, answering unmatched requests with a JSON 404 or 405.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.fast.ServeHTTP(w, r) }

// unmatched serves what no route matched in fast, as mux would: a
// redirect to the clean path or the subtree ("/ui" to "/ui/"), else a
// JSON 405 or 404.
func (m *Mux) unmatched(w http.ResponseWriter, r *http.Request) {
	_, pattern := m.mux.Handler(r)
	if pattern != "" {
		m.mux.ServeHTTP(w, r)
		return
	}
	// ServeMux reports 405 through an empty pattern too; tell them apart by
	// probing the other registered methods.
	methods := map[string]bool{}
	for _, ms := range m.paths {
		for _, meth := range ms {
			methods[meth] = true
		}
	}
	var allowed []string
	for meth := range methods {
		probe := r.Clone(r.Context())
		probe.Method = meth
		if _, p := m.mux.Handler(probe); p != "" && strings.HasPrefix(p, meth+" ") {
			allowed = append(allowed, meth)
		}
	}
	if len(allowed) > 0 {
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(dedupe(allowed), ", "))
		WriteJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
		return
	}
	WriteJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
