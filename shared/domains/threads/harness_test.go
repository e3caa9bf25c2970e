package threads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

// resolver is a control plane stand-in for the HTTP tests (the end-to-end
// tests use the real one).
type resolver struct {
	mu      sync.Mutex
	targets map[string]threads.Target
}

func (r *resolver) ThreadTarget(_ context.Context, id string) (threads.Target, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.targets[id]
	if !ok {
		return threads.Target{}, threads.ErrDeploymentNotFound
	}
	return t, nil
}

func (r *resolver) set(t threads.Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.targets[t.DeploymentID] = t
}

func (r *resolver) drop(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.targets, id)
}

// clock is a settable clock.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// env is a thread API served over HTTP on 127.0.0.1 with a real store,
// blob bucket and identity service.
type env struct {
	t      testing.TB
	srv    *httptest.Server
	svc    *threads.Service
	st     *recordingStore
	bucket blobs.Bucket
	res    *resolver
	clock  *clock
	ids    *identity.Service

	// dep is a deployed deployment of workspace ws reached by key (admin).
	dep, ws, key string
	// dep2 is another deployment of the same workspace.
	dep2 string
	// graphDep knows its graphs: "agent" and "other".
	graphDep string
	// viewerKey has the Viewer role in ws; otherKey belongs to another
	// organization; otherDep is that organization's deployment.
	viewerKey, otherKey, otherDep string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingStore{Store: st, keys: map[store.Key]bool{}}
	e := &env{t: t, st: rec, bucket: bucket, res: &resolver{targets: map[string]threads.Target{}}, clock: &clock{}}
	e.svc, err = threads.New(threads.Options{Store: rec, Blobs: bucket, Now: e.clock.now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	e.ids = identity.New(rec)
	ctx := context.Background()
	org, err := e.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := e.ids.CreateWorkspace(ctx, org.ID, "main")
	if err != nil {
		t.Fatal(err)
	}
	e.ws = ws.ID
	_, e.key, err = e.ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: org.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	_, e.viewerKey, err = e.ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: org.ID, OrgRole: identity.RoleViewer,
		Workspaces: []identity.Grant{{WorkspaceID: ws.ID, Role: identity.RoleViewer}}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	ows, err := e.ids.CreateWorkspace(ctx, other.ID, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	_, e.otherKey, err = e.ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: other.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	e.dep, e.dep2, e.graphDep, e.otherDep = uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	rev := uuid.NewString()
	e.res.set(threads.Target{DeploymentID: e.dep, WorkspaceID: ws.ID, Status: "READY", ActiveRevisionID: rev})
	e.res.set(threads.Target{DeploymentID: e.dep2, WorkspaceID: ws.ID, Status: "READY", ActiveRevisionID: rev})
	e.res.set(threads.Target{DeploymentID: e.graphDep, WorkspaceID: ws.ID, Status: "READY", ActiveRevisionID: rev, Graphs: []string{"agent", "other"}})
	e.res.set(threads.Target{DeploymentID: e.otherDep, WorkspaceID: ows.ID, Status: "READY", ActiveRevisionID: rev})

	mux := web.NewMux()
	api.Mount(mux, threads.Routes, threads.NewHandler(e.svc, e.res, e.ids), api.Edge{Auth: e.ids})
	e.srv = httptest.NewServer(web.Chain(mux, web.Observe(slog.New(slog.NewTextHandler(io.Discard, nil))), web.MaxBody(web.MaxBodyBytes)))
	t.Cleanup(func() {
		e.srv.Close()
		bucket.Close()
		st.Close()
	})
	return e
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Body   any
	Raw    []byte
}

func (r resp) M() map[string]any {
	m, _ := r.Body.(map[string]any)
	return m
}

func (r resp) L() []any {
	l, _ := r.Body.([]any)
	return l
}

// call sends a request to deployment dep's thread API with key.
func (e *env) call(key, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if rd != nil {
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
	out := resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out.Body); err != nil {
			e.t.Fatalf("%s %s: non-JSON body %q", method, path, raw)
		}
	}
	return out
}

// do calls deployment e.dep with the admin key.
func (e *env) do(method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	return e.call(e.key, method, "/deployments/"+e.dep+path, body, hdr...)
}

// must is do that expects a status.
func (e *env) must(status int, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	r := e.do(method, path, body, hdr...)
	if r.Status != status {
		e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

// create makes a thread and returns it.
func (e *env) create(body any) map[string]any {
	e.t.Helper()
	return e.must(200, "POST", "/threads", body).M()
}

// docsSupersteps is the documentation's example.
func docsSupersteps() []any {
	return []any{
		map[string]any{"updates": []any{map[string]any{"values": map[string]any{}, "as_node": "__input__"}}},
		map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "hello"}}}, "as_node": "__start__"}}},
		map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": []any{map[string]any{"type": "ai", "content": "Hello! How can I assist you today?"}}}, "as_node": "call_model"}}},
	}
}

func get(m any, path ...any) any {
	cur := m
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func str(m any, path ...any) string {
	s, _ := get(m, path...).(string)
	return s
}

func num(m any, path ...any) float64 {
	f, _ := get(m, path...).(float64)
	return f
}

func detail(r resp) string { return fmt.Sprint(r.M()["detail"]) }

// recordingStore remembers which keys exist, so tests can check that
// nothing is left behind (the store port has no scan, by design).
type recordingStore struct {
	store.Store
	mu   sync.Mutex
	keys map[store.Key]bool
}

func (r *recordingStore) set(k store.Key, live bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if live {
		r.keys[k] = true
	} else {
		delete(r.keys, k)
	}
}

func (r *recordingStore) Put(ctx context.Context, it store.Item, c store.Condition) (store.Item, error) {
	out, err := r.Store.Put(ctx, it, c)
	if err == nil {
		r.set(it.Key, true)
	}
	return out, err
}

func (r *recordingStore) Update(ctx context.Context, u store.Update) (store.Item, error) {
	out, err := r.Store.Update(ctx, u)
	if err == nil {
		r.set(u.Key, true)
	}
	return out, err
}

func (r *recordingStore) Delete(ctx context.Context, k store.Key, c store.Condition) error {
	err := r.Store.Delete(ctx, k, c)
	if err == nil {
		r.set(k, false)
	}
	return err
}

func (r *recordingStore) Transact(ctx context.Context, ops []store.TxOp) error {
	err := r.Store.Transact(ctx, ops)
	if err == nil {
		for _, op := range ops {
			switch op.Kind {
			case store.OpPut:
				r.set(op.Item.Key, true)
			case store.OpUpdate:
				r.set(op.Update.Key, true)
			case store.OpDelete:
				r.set(op.Key, false)
			}
		}
	}
	return err
}

// count returns how many live keys start with prefix.
func (r *recordingStore) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k := range r.keys {
		if strings.HasPrefix(k.PK, prefix) {
			n++
		}
	}
	return n
}

func (r *recordingStore) list(prefix string) []store.Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []store.Key
	for k := range r.keys {
		if strings.HasPrefix(k.PK, prefix) {
			out = append(out, k)
		}
	}
	return out
}
