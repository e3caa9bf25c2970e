package builds_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

func fixture(t *testing.T) (*gittest.Repo, map[string]string) {
	t.Helper()
	r := gittest.NewRepo(t, filepath.Join(t.TempDir(), "agent"))
	shas := map[string]string{}
	shas["first"] = r.Commit("first", gittest.Agent("agent"))
	r.Tag("v1", false)
	r.Tag("v1-annotated", true)
	shas["second"] = r.Commit("second", map[string]string{"README.md": "hello\n"})
	r.Branch("feature")
	shas["feature"] = r.Commit("feature", map[string]string{"feature.txt": "x\n"})
	r.Checkout("main")
	return r, shas
}

func TestFetchLocalRepository(t *testing.T) {
	r, shas := fixture(t)
	ctx := context.Background()
	cases := []struct {
		name, url, ref, commit string
		want, branch           string
	}{
		{"path default branch", r.Dir, "", "", shas["second"], "main"},
		{"file url branch", "file://" + r.Dir, "main", "", shas["second"], ""},
		{"other branch", r.Dir, "feature", "", shas["feature"], ""},
		{"lightweight tag", r.Dir, "refs/tags/v1", "", shas["first"], ""},
		{"annotated tag", r.Dir, "refs/tags/v1-annotated", "", shas["first"], ""},
		{"exact commit", r.Dir, "main", shas["first"], shas["first"], ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: c.url, RepoRef: c.ref, CommitSHA: c.commit, AllowLocal: true})
			if err != nil {
				t.Fatal(err)
			}
			if src.Commit.Hash.String() != c.want || src.Branch != c.branch {
				t.Fatalf("got %s %q", src.Commit.Hash, src.Branch)
			}
		})
	}
	// The archive holds the tree of the commit.
	src, _ := builds.Fetch(ctx, deployments.BuildJob{RepoURL: r.Dir, RepoRef: "refs/tags/v1", AllowLocal: true})
	var buf bytes.Buffer
	tree, err := src.WriteArchive(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if !tree["langgraph.json"] || !tree["agents/agent.py"] || tree["README.md"] {
		t.Fatalf("tree %v", tree)
	}

	bad := []struct{ name, url, ref, commit, want string }{
		{"missing branch", r.Dir, "nope", "", "ref nope not found"},
		{"missing tag", r.Dir, "refs/tags/v9", "", "ref refs/tags/v9 not found"},
		{"missing commit", r.Dir, "main", strings.Repeat("ab", 20), "not found"},
		{"not a repository", t.TempDir(), "main", "", "no git repository"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: c.url, RepoRef: c.ref, CommitSHA: c.commit, AllowLocal: true})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if errors.Is(err, workflow.ErrTransient) {
				t.Fatal("a missing ref is not transient")
			}
		})
	}
	// Without the local integration, paths are refused before any access.
	if _, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: r.Dir, AllowLocal: false}); err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("local path fetched by a hosted job: %v", err)
	}
}

func TestFetchOverSmartHTTP(t *testing.T) {
	r, shas := fixture(t)
	srv := gittest.NewServer(t)
	url := srv.Add("agent", r.Dir)
	ctx := context.Background()
	for _, c := range []struct{ ref, want string }{{"", shas["second"]}, {"feature", shas["feature"]}, {"refs/tags/v1-annotated", shas["first"]}} {
		src, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: url, RepoRef: c.ref, AllowLocal: true})
		if err != nil {
			t.Fatalf("%s: %v", c.ref, err)
		}
		if src.Commit.Hash.String() != c.want {
			t.Fatalf("%s: got %s", c.ref, src.Commit.Hash)
		}
	}
	// A missing repository and a missing branch are permanent failures.
	if _, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: srv.URL + "/nope.git", AllowLocal: true}); err == nil || errors.Is(err, workflow.ErrTransient) {
		t.Fatalf("missing repository: %v", err)
	}
	if _, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: url, RepoRef: "nope", AllowLocal: true}); err == nil || errors.Is(err, workflow.ErrTransient) {
		t.Fatalf("missing branch: %v", err)
	}
}

// A hosted job never connects to a non-public address, whatever the name
// resolves to; the refusal is permanent and nothing reaches the server.
func TestHostedFetchRefusesNonPublicAddresses(t *testing.T) {
	r, _ := fixture(t)
	srv := gittest.NewServer(t)
	url := srv.Add("agent", r.Dir)
	port := url[strings.LastIndex(url, ":")+1:]
	port = port[:strings.Index(port, "/")]
	ctx := context.Background()
	for _, u := range []string{
		"https://localhost:" + port + "/agent.git", // static check: localhost names
		"https://127.0.0.1:" + port + "/agent.git", // static check: IP literal
		"http://example.com/agent.git",             // static check: https only
	} {
		_, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: u, AllowLocal: false})
		if err == nil || errors.Is(err, workflow.ErrTransient) {
			t.Fatalf("%s: %v", u, err)
		}
	}
	// A name that resolves to loopback passes the static check and is
	// refused at connect time (DNS is checked by the dialer).
	_, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: "https://localtest.localdomain.invalid:" + port + "/agent.git", AllowLocal: false})
	if err == nil {
		t.Fatal("unresolvable name fetched")
	}
	if srv.Fetches.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "140.82.112.3": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::1": false,
		"fe80::1": false, "fc00::1": false, "::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false,
		"224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false,
	} {
		if got := deployments.PublicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %v", addr, got)
		}
	}
}

// The zero-argument Definition is the full shape the CDK app reads.
func TestDefinitionShape(t *testing.T) {
	d := builds.Definition()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range d.Steps {
		names = append(names, s.Name)
		if s.Comment == "" || s.MaxAttempts < 1 {
			t.Errorf("step %s lacks a comment or attempts", s.Name)
		}
		if !s.FailureOnly && s.OnFailure == "" {
			t.Errorf("step %s has no failure handler", s.Name)
		}
	}
	want := "Queue FetchSource ValidateConfig Build Deploy MarkCreateFailed MarkBuildFailed MarkDeployFailed"
	if strings.Join(names, " ") != want {
		t.Fatalf("steps %v", names)
	}
	if b, _ := d.Step("Build"); b.AWSService != "codebuild" || b.OnFailure != "MarkBuildFailed" {
		t.Fatalf("build step %+v", b)
	}
	if dep, _ := d.Step("Deploy"); dep.OnFailure != "MarkDeployFailed" {
		t.Fatal("deploy failure handler")
	}
	// Unbound steps refuse to run rather than pretend.
	q, _ := d.Step("Queue")
	if _, err := q.Run(context.Background(), builds.Input("d", "r")); err == nil {
		t.Fatal("unbound step ran")
	}
}

// secretPage is what an internal server might answer: nothing of it may
// reach a revision's status message or build log.
const secretPage = `<html><body><h1>Internal error</h1><p>db password: hunter2-SECRET-7f3a</p></body></html>`

// A clone of a URL whose server answers an error page reports the status
// and a short reason, never the page.
func TestCloneErrorsDoNotEchoTheServer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		status    int
		ctype     string
		want      string
		transient bool
	}{
		{500, "text/html", "HTTP 500 Internal Server Error", true},
		{502, "text/html", "HTTP 502 Bad Gateway", true},
		{404, "text/html", "not found or not readable (HTTP 404 Not Found)", false},
		{401, "text/html", "not found or not readable (HTTP 401 Unauthorized)", false},
		{403, "text/plain", "not found or not readable (HTTP 403 Forbidden)", false},
		{418, "text/html", "HTTP 418", false},
		{200, "text/html", "is not a git repository (content type text/html)", false},
		{200, "application/x-git-upload-pack-advertisement", "not a git repository", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", c.ctype)
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, secretPage+strings.Repeat(" SECRET-7f3a", 500))
		}))
		_, err := builds.Fetch(ctx, deployments.BuildJob{RepoURL: srv.URL + "/internal.git", AllowLocal: true})
		srv.Close()
		if err == nil {
			t.Fatalf("%d: fetched", c.status)
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "<html") {
			t.Errorf("%d: the server's page is in the error: %.300s", c.status, err)
		}
		if !strings.Contains(err.Error(), c.want) || errors.Is(err, workflow.ErrTransient) != c.transient {
			t.Errorf("%d %s: %v (transient %v)", c.status, c.ctype, err, errors.Is(err, workflow.ErrTransient))
		}
	}
	// Not HTTP at all: the server's first line is not quoted either.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "220 mail.internal ESMTP SECRET-7f3a ready\r\n")
			c.Close()
		}
	}()
	_, err = builds.Fetch(ctx, deployments.BuildJob{RepoURL: "http://" + ln.Addr().String() + "/x.git", AllowLocal: true})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("not an HTTP server: %v", err)
	}
}
