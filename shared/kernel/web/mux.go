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
	mux      *http.ServeMux
	patterns map[string]bool
	paths    map[string][]string // path pattern → methods, for 405 Allow
}

// NewMux returns an empty Mux.
func NewMux() *Mux {
	return &Mux{mux: http.NewServeMux(), patterns: map[string]bool{}, paths: map[string][]string{}}
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
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
