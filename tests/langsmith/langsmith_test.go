// Package langsmith drives the real langsmith SDK (npm langsmith, pinned in
// package.json and package-lock.json) against the tracing API served in
// process: tracing.test.mjs traces a nested program with traceable, with
// multipart streamed and buffered, then reads everything back with the
// SDK's own calls.
package langsmith

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/tracing"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/memqueue"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const adminKey = "ap_test_langsmith_sdk_admin_key_0123456789"

// topics routes queue messages to the tracing consumers, as the
// composition does; events for other domains are consumed and dropped.
type topics struct {
	q        *memqueue.Queue
	handlers map[string]func(context.Context, json.RawMessage) error
}

type envelope struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
}

func (t *topics) Enqueue(ctx context.Context, topic string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(envelope{topic, raw})
	return t.q.Send(ctx, body)
}

func (t *topics) handle(ctx context.Context, m queue.Message) error {
	var e envelope
	if err := json.Unmarshal(m.Body, &e); err != nil {
		return err
	}
	if h := t.handlers[e.Topic]; h != nil {
		return h(ctx, e.Payload)
	}
	return nil
}

// serve starts identity and the tracing routes on 127.0.0.1, with a
// consumer draining the queue.
func serve(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	bkt, err := blobs.NewDir(filepath.Join(dir, "blobs"), filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	idn := identity.New(st)
	if _, err := idn.Bootstrap(context.Background(), adminKey); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tp := &topics{q: memqueue.New(queue.Options{Concurrency: 4, RetryDelay: 10 * time.Millisecond, Logger: log}),
		handlers: map[string]func(context.Context, json.RawMessage) error{}}
	svc, err := tracing.New(tracing.Options{Store: st, Blobs: bkt, Queue: tp, Logger: log,
		Workspace: func(ctx context.Context, id string) (tracing.WorkspaceInfo, error) {
			w, err := idn.Workspace(ctx, id)
			return tracing.WorkspaceInfo{ID: w.ID, OrganizationID: w.OrganizationID, DisplayName: w.DisplayName, CreatedAt: w.CreatedAt}, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	tp.handlers[tracing.TopicIngest] = svc.HandleIngest
	tp.handlers[tracing.TopicPurge] = svc.HandlePurge
	mux := web.NewMux()
	api.Mount(mux, tracing.Routes, tracing.NewHandler(svc), api.Edge{Auth: idn})
	srv := httptest.NewServer(web.Chain(mux, web.Observe(log)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tp.q.Consume(ctx, tp.handle) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		_ = st.Close()
	})
	return srv
}

// nodeModules reports whether `npm ci` has run here; without it the test
// cannot run: a failure in CI, a skip on a developer machine.
func nodeModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", "langsmith", "package.json")); err != nil {
		msg := "tests/langsmith/node_modules is missing: run `npm ci --prefix tests/langsmith`"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
}

// The real langsmith SDK, unmodified, against the tracing API.
func TestLangSmithSDK(t *testing.T) {
	nodeModules(t)
	srv := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "tracing.test.mjs")
	cmd.Env = append(os.Environ(),
		"AGENTPLANE_URL="+srv.URL,
		"LANGSMITH_API_KEY="+adminKey,
		"LANGSMITH_TRACING=true",
		"LANGSMITH_ENDPOINT="+srv.URL,
		"NO_COLOR=1",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test tracing.test.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
