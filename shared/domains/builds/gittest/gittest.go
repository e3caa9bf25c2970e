// Package gittest makes real git repositories for tests (with go-git, in a
// directory) and serves them over git's smart HTTP protocol, with a gate
// that holds fetches so a test can stop a build in the middle of one.
package gittest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// Repo is a repository on disk with a work tree.
type Repo struct {
	t    testing.TB
	Dir  string
	Repo *git.Repository
}

// NewRepo initialises a repository in dir whose default branch is main.
func NewRepo(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{t: t, Dir: dir, Repo: r}
}

// Commit writes files (path → content; "" deletes) and commits them on the
// current branch, returning the commit hash.
func (r *Repo) Commit(msg string, files map[string]string) string {
	r.t.Helper()
	wt, err := r.Repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if content == "" {
			if _, err := wt.Remove(p); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		if _, err := wt.Add(p); err != nil {
			r.t.Fatal(err)
		}
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "Test", Email: "test@example.com", When: time.Now()}})
	if err != nil {
		r.t.Fatal(err)
	}
	return h.String()
}

// Branch creates branch name at the current HEAD and checks it out.
func (r *Repo) Branch(name string) {
	r.t.Helper()
	wt, _ := r.Repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(name), Create: true}); err != nil {
		r.t.Fatal(err)
	}
}

// Checkout switches to an existing branch.
func (r *Repo) Checkout(name string) {
	r.t.Helper()
	wt, _ := r.Repo.Worktree()
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(name)}); err != nil {
		r.t.Fatal(err)
	}
}

// Tag tags HEAD; annotated tags carry a message.
func (r *Repo) Tag(name string, annotated bool) {
	r.t.Helper()
	head, err := r.Repo.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	var opts *git.CreateTagOptions
	if annotated {
		opts = &git.CreateTagOptions{Message: "release " + name, Tagger: &object.Signature{Name: "Test", Email: "test@example.com", When: time.Now()}}
	}
	if _, err := r.Repo.CreateTag(name, head.Hash(), opts); err != nil {
		r.t.Fatal(err)
	}
}

// Agent is a minimal LangGraph-style repository: a graph configuration
// and the graph file it names.
func Agent(graphs ...string) map[string]string {
	files := map[string]string{"requirements.txt": "langgraph\n"}
	entries := []string{}
	for _, g := range graphs {
		files["agents/"+g+".py"] = "graph = None  # " + g + "\n"
		entries = append(entries, `"`+g+`": "./agents/`+g+`.py:graph"`)
	}
	files["langgraph.json"] = `{"dependencies": ["."], "graphs": {` + strings.Join(entries, ", ") + `}}` + "\n"
	return files
}

// Server serves repositories over git's smart HTTP protocol (upload-pack
// only) at /{name}.git.
type Server struct {
	*httptest.Server
	mu    sync.Mutex
	repos map[string]string
	gate  chan struct{}
	// Fetches counts upload-pack requests; Waiting those held at the gate.
	Fetches atomic.Int64
	Waiting atomic.Int64
}

// NewServer starts a server (on 127.0.0.1) and closes it when the test ends.
func NewServer(t testing.TB) *Server {
	s := &Server{repos: map[string]string{}}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Server.Close)
	return s
}

// Add serves the repository in dir as /{name}.git and returns its URL.
func (s *Server) Add(name, dir string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[name] = dir
	return s.URL + "/" + name + ".git"
}

// Hold makes fetches wait until Release.
func (s *Server) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// Release lets held and later fetches through.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

type dirLoader string

func (d dirLoader) Load(*transport.Endpoint) (storer.Storer, error) {
	r, err := git.PlainOpen(string(d))
	if err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return r.Storer, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), ".git/")
	s.mu.Lock()
	dir, known := s.repos[name]
	gate := s.gate
	s.mu.Unlock()
	if !ok || !known {
		http.NotFound(w, r)
		return
	}
	ep, _ := transport.NewEndpoint("/" + name)
	sess, err := server.NewServer(dirLoader(dir)).NewUploadPackSession(ep, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	switch {
	case r.Method == http.MethodGet && rest == "info/refs" && r.URL.Query().Get("service") == "git-upload-pack":
		ar, err := sess.AdvertisedReferencesContext(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_ = ar.Encode(w)
	case r.Method == http.MethodPost && rest == "git-upload-pack":
		s.Fetches.Add(1)
		if gate != nil {
			s.Waiting.Add(1)
			select {
			case <-gate:
				s.Waiting.Add(-1)
			case <-r.Context().Done():
				s.Waiting.Add(-1)
				return
			}
		}
		req := packp.NewUploadPackRequest()
		if err := req.Decode(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := sess.UploadPack(context.WithoutCancel(r.Context()), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		_ = resp.Encode(w)
	default:
		http.NotFound(w, r)
	}
}
