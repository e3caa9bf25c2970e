package datasets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/datasets"
	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// countingStore counts the items reads return (Get and Query).
type countingStore struct {
	store.Store
	reads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	it, err := c.Store.Get(ctx, k)
	if err == nil {
		c.reads.Add(1)
	}
	return it, err
}

func (c *countingStore) Query(ctx context.Context, q store.Query) (store.Page, error) {
	p, err := c.Store.Query(ctx, q)
	c.reads.Add(int64(len(p.Items)))
	return p, err
}

type env struct {
	t   testing.TB
	srv *httptest.Server
	svc *datasets.Service
	st  *countingStore

	// ws is reached by key (User, this workspace only) and admin (org
	// admin, needs X-Tenant-Id); ws2 is another workspace of the same
	// organization (key2); viewer is a Viewer in ws; other is another
	// organization's admin.
	ws, ws2                         string
	key, admin, key2, viewer, other string

	mu       sync.Mutex
	failures []string // 5xx answers, which fail the test
}

func newEnv(t testing.TB) *env {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := &env{t: t, st: &countingStore{Store: st}}
	e.svc, err = datasets.New(datasets.Options{Store: e.st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ids := identity.New(e.st)
	ctx := context.Background()
	org, err := ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
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
	e.admin = mk(org.ID, identity.RoleAdmin)
	other, _ := ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Other"})
	_, _ = ids.CreateWorkspace(ctx, other.ID, "theirs")
	e.other = mk(other.ID, identity.RoleAdmin)

	mux := web.NewMux()
	api.Mount(mux, datasets.Routes, datasets.NewHandler(e.svc), api.Edge{Auth: ids})
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

func (r resp) list() []map[string]any {
	var l []map[string]any
	_ = json.Unmarshal(r.raw, &l)
	return l
}

func (e *env) do(key, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	req.Header.Set("X-Api-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return resp{code: res.StatusCode, raw: raw}
}

// must fails unless the answer has the status.
func (e *env) must(code int, r resp) resp {
	e.t.Helper()
	if r.code != code {
		e.t.Fatalf("status %d, want %d: %s", r.code, code, r.raw)
	}
	return r
}

func (e *env) dataset(name string) string {
	e.t.Helper()
	return e.must(200, e.do(e.key, "POST", "/datasets", map[string]any{"name": name})).obj()["id"].(string)
}

func storeQuery(pk string) store.Query { return store.Query{PK: pk} }
