package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/tracing"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/memqueue"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

const adminKey = "ap_test_tracing_admin_key_0123456789abcdef"

// bus is the composition's routing of topics, in process: every message
// goes through a memqueue (so delivery is asynchronous and at least once)
// and the consumer dispatches by topic. Events for other domains are kept
// for assertions.
type bus struct {
	q        *memqueue.Queue
	mu       sync.Mutex
	events   map[string][]json.RawMessage
	handlers map[string]func(context.Context, json.RawMessage) error
	// drop, when set, loses the messages of a topic (a crash between the
	// blob write and the consumer).
	drop map[string]bool
}

type envelope struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
}

func (b *bus) Enqueue(ctx context.Context, topic string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.events[topic] = append(b.events[topic], raw)
	dropped := b.drop[topic]
	b.mu.Unlock()
	if dropped {
		return nil
	}
	body, _ := json.Marshal(envelope{topic, raw})
	return b.q.Send(ctx, body)
}

func (b *bus) handle(ctx context.Context, m queue.Message) error {
	var e envelope
	if err := json.Unmarshal(m.Body, &e); err != nil {
		return err
	}
	if h := b.handlers[e.Topic]; h != nil {
		return h(ctx, e.Payload)
	}
	return nil
}

func (b *bus) eventsOf(topic string) []json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]json.RawMessage(nil), b.events[topic]...)
}

type env struct {
	t     *testing.T
	st    store.Store
	bkt   *blobs.DirBucket
	svc   *tracing.Service
	id    *identity.Service
	srv   *httptest.Server
	bus   *bus
	org   string
	ws    string
	key   string
	clock *fakeClock
}

type fakeClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

type envOptions struct {
	flags     map[string]bool
	consumers int
	dir       string
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	e, cleanup, err := buildEnv(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	return e
}

// buildEnv starts a store, identity, the tracing service and its routes
// on an httptest server, and a consumer of the bus, in dir.
func buildEnv(o envOptions) (*env, func(), error) {
	dir := o.dir
	st, err := boltstore.Open(filepath.Join(dir, "db"))
	if err != nil {
		return nil, nil, err
	}
	bkt, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "blobs-tmp"))
	if err != nil {
		return nil, nil, err
	}
	idn := identity.New(st)
	boot, err := idn.Bootstrap(context.Background(), adminKey)
	if err != nil {
		return nil, nil, err
	}
	b := &bus{q: memqueue.New(queue.Options{Concurrency: max(o.consumers, 4), RetryDelay: 5 * time.Millisecond,
		MaxReceives: 50, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}),
		events: map[string][]json.RawMessage{}, handlers: map[string]func(context.Context, json.RawMessage) error{}, drop: map[string]bool{}}
	clock := &fakeClock{}
	svc, err := tracing.New(tracing.Options{Store: st, Blobs: bkt, Queue: b, InstanceFlags: o.flags,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.now,
		Workspace: func(ctx context.Context, id string) (tracing.WorkspaceInfo, error) {
			w, err := idn.Workspace(ctx, id)
			if err != nil {
				return tracing.WorkspaceInfo{}, err
			}
			return tracing.WorkspaceInfo{ID: w.ID, OrganizationID: w.OrganizationID, DisplayName: w.DisplayName, CreatedAt: w.CreatedAt, Handle: "handle-" + w.ID}, nil
		}})
	if err != nil {
		return nil, nil, err
	}
	b.handlers[tracing.TopicIngest] = svc.HandleIngest
	b.handlers[tracing.TopicPurge] = svc.HandlePurge
	b.handlers[tracing.TopicProjectEnsure] = svc.HandleProjectEnsure
	mux := web.NewMux()
	api.Mount(mux, tracing.Routes, tracing.NewHandler(svc), api.Edge{Auth: idn})
	srv := httptest.NewServer(mux)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.q.Consume(ctx, b.handle) }()
	cleanup := func() {
		srv.Close()
		cancel()
		<-done
		_ = st.Close()
	}
	e := &env{st: st, bkt: bkt, svc: svc, id: idn, srv: srv, bus: b, org: boot.Organization.ID, ws: boot.Workspace.ID, key: adminKey, clock: clock}
	return e, cleanup, nil
}

// drain waits until the queue is empty (every message handled).
func (e *env) drain() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.bus.q.Len() > 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("the queue did not drain: %d messages left", e.bus.q.Len())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type resp struct {
	code int
	raw  []byte
	hdr  http.Header
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

// do sends a request with the admin key; body is JSON-encoded unless it is
// a []byte.
func (e *env) do(method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	return e.doKey(e.key, method, path, body, hdr...)
}

func (e *env) doKey(key, method, path string, body any, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = bytes.NewReader([]byte(b))
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
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 500 {
		e.t.Errorf("%s %s: server error %d %s", method, path, res.StatusCode, raw)
	}
	return resp{code: res.StatusCode, raw: raw, hdr: res.Header}
}

func (e *env) must(code int, r resp) resp {
	e.t.Helper()
	if r.code != code {
		e.t.Fatalf("want %d, got %d: %s", code, r.code, r.raw)
	}
	return r
}

// part is one multipart part.
type part struct {
	name, contentType string
	data              []byte
}

func jsonPart(name string, v any) part {
	raw, _ := json.Marshal(v)
	return part{name, "application/json", raw}
}

func multipartBody(parts []part) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"`, p.name))
		ct := p.contentType
		if ct == "" {
			ct = "application/json"
		}
		h.Set("Content-Type", fmt.Sprintf("%s; length=%d", ct, len(p.data)))
		pw, _ := w.CreatePart(h)
		_, _ = pw.Write(p.data)
	}
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

func (e *env) multipart(parts []part) resp {
	e.t.Helper()
	body, ct := multipartBody(parts)
	return e.do("POST", "/runs/multipart", body, "Content-Type", ct)
}

// dotted builds a dotted order segment.
func seg(t time.Time, id string) string {
	return t.UTC().Format("20060102T150405") + fmt.Sprintf("%06d", t.Nanosecond()/1000) + "Z" + id
}

func newID() string { return uuid.NewString() }

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

// query posts /runs/query and returns the runs.
func (e *env) query(body map[string]any) ([]map[string]any, map[string]any) {
	e.t.Helper()
	r := e.must(200, e.do("POST", "/runs/query", body))
	var out struct {
		Runs    []map[string]any `json:"runs"`
		Cursors map[string]any   `json:"cursors"`
	}
	if err := json.Unmarshal(r.raw, &out); err != nil {
		e.t.Fatal(err)
	}
	return out.Runs, out.Cursors
}

func ids(runs []map[string]any) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i], _ = r["id"].(string)
	}
	return out
}

// project returns the project of that name.
func (e *env) project(name string) map[string]any {
	e.t.Helper()
	l := e.must(200, e.do("GET", "/sessions?include_stats=true&name="+name, nil)).list()
	if len(l) != 1 {
		e.t.Fatalf("project %q: %d found", name, len(l))
	}
	return l[0]
}

// atExit runs after every test and benchmark (shared benchmark data).
var atExit []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range atExit {
		f()
	}
	os.Exit(code)
}
