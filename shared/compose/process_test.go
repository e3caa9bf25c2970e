package compose_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// bgGroup has no routes: a "ping" message starts a two-step workflow whose
// last step writes a store item, exercising the local queue and runner.
var bgGroup = compose.Group{
	Name:     "bgtest",
	Consumes: []string{"bgtest.ping"},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		def := workflow.Definition{Name: "bgtest", Steps: []workflow.Step{
			{Name: "First", MaxAttempts: 1, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				in["first"] = true
				return in, nil
			}},
			{Name: "Second", MaxAttempts: 1, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				b, _ := json.Marshal(in)
				_, err := p.Store.Put(ctx, store.Item{Key: store.Key{PK: "bgtest", SK: in["id"].(string)}, Data: b}, store.Condition{})
				return in, err
			}},
		}}
		return &compose.Module{
			Workflows: []workflow.Definition{def},
			Consumers: map[string]compose.Consumer{
				"bgtest.ping": func(ctx context.Context, raw json.RawMessage) error {
					var msg struct{ ID string }
					if err := json.Unmarshal(raw, &msg); err != nil {
						return err
					}
					return p.Workflows.Start(ctx, "bgtest", msg.ID, workflow.State{"id": msg.ID})
				},
			},
		}, nil
	},
}

func open(t *testing.T) *compose.Platform {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us", LogLevel: "error"}
	p, err := compose.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newProcess(t *testing.T, groups ...compose.Group) *compose.Process {
	t.Helper()
	pr, err := compose.Build(context.Background(), open(t), groups...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	return pr
}

func TestQueueStartsWorkflow(t *testing.T) {
	pr := newProcess(t, bgGroup)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = pr.RunBackground(ctx) }()
	defer func() { cancel(); <-done }()

	if err := pr.P.Queue.Enqueue(ctx, "bgtest.ping", map[string]string{"id": "exec-1"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		it, err := pr.P.Store.Get(ctx, store.Key{PK: "bgtest", SK: "exec-1"})
		if err == nil {
			var st map[string]any
			_ = json.Unmarshal(it.Data, &st)
			if st["first"] != true {
				t.Fatalf("first step output lost: %v", st)
			}
			return
		}
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("workflow did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Unknown topics and malformed messages are dropped, not retried forever.
func TestHandleMessageDropsGarbage(t *testing.T) {
	pr := newProcess(t, bgGroup)
	for _, body := range []string{"not json", `{"topic":"nobody.listens","payload":{}}`, `{}`} {
		if err := pr.HandleMessage(context.Background(), []byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	if _, err := pr.RunStep(context.Background(), []byte(`{"workflow":"bgtest","step":"Nope","state":{}}`)); err == nil {
		t.Error("unknown step should fail")
	}
	out, err := pr.RunStep(context.Background(), []byte(`{"workflow":"bgtest","step":"First","state":{"id":"x"}}`))
	if err != nil || string(out) != `{"first":true,"id":"x"}` {
		t.Errorf("RunStep: %s %v", out, err)
	}
}

// Two groups may not consume one topic: the publisher could not route it.
func TestTwoConsumersOfATopicAreRefused(t *testing.T) {
	p := open(t)
	defer p.Close()
	other := bgGroup
	other.Name = "bgtest2"
	if _, err := compose.Build(context.Background(), p, bgGroup, other); err == nil {
		t.Fatal("two consumers of bgtest.ping were accepted")
	}
}
