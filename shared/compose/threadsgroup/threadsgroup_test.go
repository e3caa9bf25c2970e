package threadsgroup_test

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
	"github.com/agentplane/agentplane/shared/compose/threadsgroup"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const adminKey = "ap_threadsgroup_test_admin_key_0123456789"

type server struct {
	t *testing.T
	h http.Handler
}

func (s server) do(method, path, key, body string) (int, []byte) {
	s.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

func (s server) must(method, path, key, body string, want int, out any) {
	s.t.Helper()
	code, b := s.do(method, path, key, body)
	if code != want {
		s.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			s.t.Fatal(err)
		}
	}
}

// The caches of the request path stay correct. In one process (the local
// server: control plane and thread API over one Platform) a deleted
// deployment's threads are 404 and a revoked key 401 on the very next
// request. A second process over the same store (another Lambda, with its
// own caches and no in-process notice) sees both within the cache TTL.
func TestCachesFollowWritesWithinOneProcessAndTheTTLAcross(t *testing.T) {
	ctx := context.Background()
	const ttl = time.Second
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us",
		BootstrapAPIKey: adminKey, AllowLocalRepos: true, SelfHostedJITEnabled: true, LogLevel: "error", CacheTTL: ttl}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	pr, err := local.New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = pr.RunBackground(bg) }()
	t.Cleanup(func() { cancel(); <-done; pr.Close() })
	boot, err := pr.P.Identity.Bootstrap(ctx, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	one := server{t, pr.Handler()}

	// The other process: the threads group alone over the same store,
	// with its own identity service (own key cache) and no notices.
	p2 := *pr.P
	p2.Changes = &compose.Changes{}
	p2.Identity = identity.New(p2.Store)
	p2.Identity.SetKeyCacheTTL(ttl)
	m, err := threadsgroup.Group.Build(ctx, &p2)
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	m.Mount(mux, api.Edge{Auth: p2.Identity})
	two := server{t, compose.Middleware(mux, log)}

	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "repo"))
	repo.Commit("agent", gittest.Agent("agent"))
	var d struct {
		ID  string `json:"id"`
		Rev string `json:"latest_revision_id"`
	}
	one.must("POST", "/v2/deployments", adminKey, `{"name":"cached","source":"repo_host","source_config":{"repo_url":"`+repo.Dir+
		`","deployment_type":"dev","build_on_push":false},"source_revision_config":{"repo_ref":"main","graph_config_path":"langgraph.json"},"secrets":[]}`, 201, &d)
	for deadline := time.Now().Add(time.Minute); ; {
		var r struct{ Status string }
		one.must("GET", "/v2/deployments/"+d.ID+"/revisions/"+d.Rev, adminKey, "", 200, &r)
		if r.Status == "DEPLOYED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("revision %s", r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A user key of the default workspace, for the revocation.
	k, userKey, err := pr.P.Identity.CreateAPIKey(ctx, identity.NewKey{OrganizationID: boot.Organization.ID,
		Workspaces: []identity.Grant{{WorkspaceID: boot.Workspace.ID, Role: identity.RoleUser}}})
	if err != nil {
		t.Fatal(err)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	base := "/deployments/" + d.ID + "/threads"
	one.must("POST", base, userKey, `{"metadata":{"graph_id":"agent"}}`, 200, &th)
	get := base + "/" + th.ThreadID
	// Both processes have now cached the key and the target.
	for _, s := range []server{one, two} {
		s.must("GET", get, userKey, "", 200, nil)
		s.must("GET", get, adminKey, "", 200, nil)
	}

	if err := pr.P.Identity.RevokeAPIKey(ctx, boot.Organization.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	one.must("GET", get, userKey, "", 401, nil)
	one.must("DELETE", "/v2/deployments/"+d.ID, adminKey, "", 204, nil)
	deleted := time.Now()
	one.must("GET", get, adminKey, "", 404, nil)
	one.must("POST", base+"/search", adminKey, `{}`, 404, nil)

	waitFor(t, two, get, userKey, 401, revoked.Add(ttl))
	waitFor(t, two, get, adminKey, 404, deleted.Add(ttl))
}

// waitFor polls until path answers want, failing if it still does not
// shortly after by (the bound the caches promise).
func waitFor(t *testing.T, s server, path, key string, want int, by time.Time) {
	t.Helper()
	for {
		code, b := s.do("GET", path, key, "")
		if code == want {
			return
		}
		if time.Now().After(by.Add(500 * time.Millisecond)) {
			t.Fatalf("GET %s: still %d %s after the cache TTL", path, code, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
