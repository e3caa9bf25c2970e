package prompts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/prompts"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

type env struct {
	t                        *testing.T
	srv                      *httptest.Server
	svc                      *prompts.Service
	ws, ws2                  string
	key, key2, viewer, other string
	mu                       sync.Mutex
	failures                 []string
}

func newEnv(t *testing.T) *env {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t}
	e.svc, _ = prompts.New(prompts.Options{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ids := identity.New(st)
	ctx := context.Background()
	org, _ := ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Acme"})
	w1, _ := ids.CreateWorkspace(ctx, org.ID, "one")
	w2, _ := ids.CreateWorkspace(ctx, org.ID, "two")
	e.ws, e.ws2 = w1.ID, w2.ID
	mk := func(org string, role identity.Role, grants ...identity.Grant) string {
		_, raw, err := ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: org, OrgRole: role, Workspaces: grants})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	e.key = mk(org.ID, identity.RoleViewer, identity.Grant{WorkspaceID: w1.ID, Role: identity.RoleUser})
	e.key2 = mk(org.ID, identity.RoleViewer, identity.Grant{WorkspaceID: w2.ID, Role: identity.RoleUser})
	e.viewer = mk(org.ID, identity.RoleViewer, identity.Grant{WorkspaceID: w1.ID, Role: identity.RoleViewer})
	other, _ := ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Other"})
	_, _ = ids.CreateWorkspace(ctx, other.ID, "theirs")
	e.other = mk(other.ID, identity.RoleAdmin)
	mux := web.NewMux()
	api.Mount(mux, prompts.Routes, prompts.NewHandler(e.svc), api.Edge{Auth: ids})
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, r)
		if rec.Code >= 500 {
			e.mu.Lock()
			e.failures = append(e.failures, r.Method+" "+r.URL.String()+": "+rec.Body.String())
			e.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() {
		e.srv.Close()
		for _, f := range e.failures {
			t.Errorf("server error: %s", f)
		}
	})
	return e
}

type resp struct {
	code int
	raw  []byte
}

func (r resp) obj() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.raw, &m)
	return m
}

func (e *env) do(key, method, path string, body any) resp {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	req.Header.Set("X-Api-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, raw}
}

func (e *env) must(code int, r resp) resp {
	e.t.Helper()
	if r.code != code {
		e.t.Fatalf("status %d, want %d: %s", r.code, code, r.raw)
	}
	return r
}

var manifest = map[string]any{"lc": 1, "type": "constructor", "id": []string{"langchain", "prompts", "chat", "ChatPromptTemplate"},
	"kwargs": map[string]any{"input_variables": []string{"q"}}}

func TestReposAndCommits(t *testing.T) {
	e := newEnv(t)
	repo := e.must(200, e.do(e.key, "POST", "/repos/", map[string]any{"repo_handle": "greeter", "description": "says hi", "tags": []string{"a"}, "is_public": false})).obj()["repo"].(map[string]any)
	for _, f := range []string{"repo_handle", "id", "tenant_id", "created_at", "updated_at", "is_public", "is_archived", "tags",
		"owner", "full_name", "num_likes", "num_downloads", "num_views", "num_commits", "last_commit_hash", "description"} {
		if _, ok := repo[f]; !ok {
			t.Errorf("Prompt lacks %s", f)
		}
	}
	if repo["owner"] != prompts.Handle(e.ws) || repo["full_name"] != e.ws+"/greeter" || repo["num_commits"] != float64(0) {
		t.Fatalf("repo %v", repo)
	}
	e.must(409, e.do(e.key, "POST", "/repos", map[string]any{"repo_handle": "greeter"}))
	// Owner "-" and the workspace handle name the same repository, at /
	// and under /api/v1.
	e.must(200, e.do(e.key, "GET", "/repos/-/greeter", nil))
	e.must(200, e.do(e.key, "GET", "/api/v1/repos/"+e.ws+"/greeter", nil))
	e.must(404, e.do(e.key, "GET", "/repos/someone/greeter", nil))
	e.must(404, e.do(e.key, "GET", "/commits/-/greeter/latest", nil))

	c1 := e.must(200, e.do(e.key, "POST", "/commits/-/greeter", map[string]any{"manifest": manifest})).obj()["commit"].(map[string]any)
	h1 := c1["commit_hash"].(string)
	if want, _ := prompts.HashCommit("", mustRaw(manifest)); h1 != want {
		t.Fatalf("hash %s, want %s", h1, want)
	}
	// A stale parent (none, or not the latest) is a conflict.
	e.must(409, e.do(e.key, "POST", "/commits/-/greeter", map[string]any{"manifest": manifest}))
	e.must(409, e.do(e.key, "POST", "/commits/-/greeter", map[string]any{"manifest": manifest, "parent_commit": "deadbeefdeadbeef"}))
	m2 := map[string]any{"lc": 1, "kwargs": map[string]any{"template": "v2"}}
	c2 := e.must(200, e.do(e.key, "POST", "/commits/-/greeter", map[string]any{"manifest": m2, "parent_commit": h1[:8]})).obj()["commit"].(map[string]any)
	h2 := c2["commit_hash"].(string)
	if c2["parent_commit_hash"] != h1 || c2["parent_id"] != c1["id"] {
		t.Fatalf("parent: %v", c2)
	}
	r := e.must(200, e.do(e.key, "GET", "/repos/-/greeter", nil)).obj()["repo"].(map[string]any)
	if r["num_commits"] != float64(2) || r["last_commit_hash"] != h2 {
		t.Fatalf("repo after commits %v", r)
	}
	list := e.must(200, e.do(e.key, "GET", "/commits/-/greeter/", nil)).obj()
	cs := list["commits"].([]any)
	if list["total"] != float64(2) || len(cs) != 2 || cs[0].(map[string]any)["commit_hash"] != h2 {
		t.Fatalf("commits %v", list)
	}
	if l := e.must(200, e.do(e.key, "GET", "/commits/-/greeter?limit=1&offset=1", nil)).obj(); l["commits"].([]any)[0].(map[string]any)["commit_hash"] != h1 {
		t.Fatalf("page 2 %v", l)
	}
	for ref, want := range map[string]string{"latest": h2, h1: h1, h1[:8]: h1, h2[:12]: h2} {
		got := e.must(200, e.do(e.key, "GET", "/commits/-/greeter/"+ref, nil)).obj()
		if got["commit_hash"] != want || got["manifest"] == nil || got["examples"] == nil {
			t.Errorf("%s: %v", ref, got)
		}
	}
	// Tags name commits by id.
	e.must(200, e.do(e.key, "POST", "/repos/-/greeter/tags", map[string]any{"tag_name": "prod", "commit_id": c1["id"]}))
	e.must(409, e.do(e.key, "POST", "/repos/-/greeter/tags", map[string]any{"tag_name": "prod", "commit_id": c2["id"]}))
	if got := e.must(200, e.do(e.key, "GET", "/commits/-/greeter/prod", nil)).obj(); got["commit_hash"] != h1 {
		t.Fatalf("prod %v", got)
	}

	// Listing: filters, sort and total.
	e.must(200, e.do(e.key, "POST", "/repos", map[string]any{"repo_handle": "archived-one", "is_public": true}))
	e.must(200, e.do(e.key, "PATCH", "/repos/-/archived-one", map[string]any{"is_archived": true, "description": "old greeter"}))
	count := func(q string) (int, float64) {
		l := e.must(200, e.do(e.key, "GET", "/repos?"+q, nil)).obj()
		return len(l["repos"].([]any)), l["total"].(float64)
	}
	for q, want := range map[string]int{"": 2, "is_archived=false": 1, "is_public=true": 1, "query=greet": 2,
		"query=arch&match_prefix=true": 1, "query=greet&match_prefix=true": 1, "limit=1": 1} {
		if n, total := count(q); n != want && !(q == "limit=1" && total == 2) {
			t.Errorf("%s: %d", q, n)
		}
	}
	l := e.must(200, e.do(e.key, "GET", "/repos/?sort_field=num_commits&sort_direction=desc", nil)).obj()
	if l["repos"].([]any)[0].(map[string]any)["repo_handle"] != "greeter" {
		t.Fatalf("sort: %v", l)
	}
	e.must(200, e.do(e.key, "DELETE", "/repos/-/greeter", nil))
	e.must(404, e.do(e.key, "GET", "/repos/-/greeter", nil))
	e.must(404, e.do(e.key, "GET", "/commits/-/greeter/latest", nil))
	// A new prompt with the same handle starts empty.
	e.must(200, e.do(e.key, "POST", "/repos/", map[string]any{"repo_handle": "greeter"}))
	e.must(404, e.do(e.key, "GET", "/commits/-/greeter/"+h1, nil))
	if err := e.svc.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustRaw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

// Of concurrent commits on one parent, exactly one wins; the others are
// 409 and nothing is lost or duplicated.
func TestConcurrentCommitsOneWinsPerParent(t *testing.T) {
	e := newEnv(t)
	e.must(200, e.do(e.key, "POST", "/repos/", map[string]any{"repo_handle": "race"}))
	parent := ""
	for round := range 5 {
		var wg sync.WaitGroup
		codes := make([]int, 8)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := map[string]any{"manifest": map[string]any{"round": round, "writer": i}}
				if parent != "" {
					body["parent_commit"] = parent
				}
				codes[i] = e.do(e.key, "POST", "/commits/-/race", body).code
			}()
		}
		wg.Wait()
		wins := 0
		for _, c := range codes {
			switch c {
			case 200:
				wins++
			case 409:
			default:
				t.Fatalf("status %d", c)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners (%v)", round, wins, codes)
		}
		r := e.must(200, e.do(e.key, "GET", "/repos/-/race", nil)).obj()["repo"].(map[string]any)
		if r["num_commits"] != float64(round+1) {
			t.Fatalf("num_commits %v after round %d", r["num_commits"], round)
		}
		parent = r["last_commit_hash"].(string)
	}
}

func TestPromptIsolationAndBadInput(t *testing.T) {
	e := newEnv(t)
	e.must(200, e.do(e.key, "POST", "/repos/", map[string]any{"repo_handle": "mine"}))
	c := e.must(200, e.do(e.key, "POST", "/commits/-/mine", map[string]any{"manifest": manifest})).obj()["commit"].(map[string]any)
	for _, key := range []string{e.key2, e.other} {
		for _, owner := range []string{"-", e.ws} {
			for _, r := range []struct {
				method, path string
				body         any
			}{
				{"GET", "/repos/" + owner + "/mine", nil},
				{"PATCH", "/repos/" + owner + "/mine", map[string]any{"description": "x"}},
				{"DELETE", "/repos/" + owner + "/mine", nil},
				{"POST", "/repos/" + owner + "/mine/tags", map[string]any{"tag_name": "t", "commit_id": c["id"]}},
				{"GET", "/commits/" + owner + "/mine/", nil},
				{"GET", "/commits/" + owner + "/mine/latest", nil},
				{"POST", "/commits/" + owner + "/mine", map[string]any{"manifest": manifest, "parent_commit": c["commit_hash"]}},
			} {
				e.must(404, e.do(key, r.method, r.path, r.body))
			}
		}
		if l := e.must(200, e.do(key, "GET", "/repos", nil)).obj(); l["total"] != float64(0) {
			t.Fatalf("another workspace's prompts listed: %v", l)
		}
	}
	e.must(403, e.do(e.viewer, "POST", "/repos", map[string]any{"repo_handle": "v"}))
	e.must(200, e.do(e.viewer, "GET", "/repos/-/mine", nil))
	bodies := []any{nil, "", "{", "[]", "null", `{"x": 1}`, map[string]any{"repo_handle": "bad handle!"},
		map[string]any{"repo_handle": strings.Repeat("a", 200)}, map[string]any{"manifest": "s"}, map[string]any{"manifest": nil},
		map[string]any{"manifest": map[string]any{"big": strings.Repeat("x", 300_000)}, "parent_commit": c["commit_hash"]},
		map[string]any{"tag_name": "", "commit_id": "x"}, map[string]any{"tag_name": "latest", "commit_id": c["id"]},
		map[string]any{"tags": []string{""}}, map[string]any{"tag_name": "t", "commit_id": "00000000-0000-0000-0000-000000000000"}}
	paths := []struct{ method, path string }{
		{"GET", "/repos?limit=0"}, {"GET", "/repos?sort_field=nope"}, {"GET", "/repos?sort_direction=up"}, {"GET", "/repos?is_public=maybe"},
		{"POST", "/repos/"}, {"GET", "/repos/-/bad%20name"}, {"PATCH", "/repos/-/mine"}, {"DELETE", "/repos/-/nope"},
		{"POST", "/repos/-/mine/tags"}, {"GET", "/commits/-/mine/?limit=1000"}, {"GET", "/commits/-/mine/zz"}, {"GET", "/commits/-/mine/abc"},
		{"GET", "/commits/-/mine/latest?include_model=perhaps"}, {"POST", "/commits/-/mine"}, {"POST", "/commits/-/nope"},
	}
	for _, p := range paths {
		for _, b := range bodies {
			r := e.do(e.key, p.method, p.path, b)
			if r.code >= 500 {
				t.Errorf("%s %s %v: %d %s", p.method, p.path, b, r.code, r.raw)
			}
			if r.code >= 400 {
				if _, ok := r.obj()["detail"]; !ok {
					t.Errorf("%s %s: no detail: %s", p.method, p.path, r.raw)
				}
			}
		}
	}
}
