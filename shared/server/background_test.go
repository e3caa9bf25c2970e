package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/server"
)

// A module without routes that exercises the local queue and workflow
// runner: a "ping" message starts a two-step workflow whose last step
// writes a store item.
func init() {
	server.RegisterModule("zz-background-test", func(d *server.Deps) (*server.Module, error) {
		def := workflow.Definition{Name: "bgtest", Steps: []workflow.Step{
			{Name: "First", MaxAttempts: 1, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				in["first"] = true
				return in, nil
			}},
			{Name: "Second", MaxAttempts: 1, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				b, _ := json.Marshal(in)
				_, err := d.Store.Put(ctx, store.Item{Key: store.Key{PK: "bgtest", SK: in["id"].(string)}, Data: b}, store.Condition{})
				return in, err
			}},
		}}
		return &server.Module{
			Workflows: []workflow.Definition{def},
			Consumers: map[string]func(context.Context, json.RawMessage) error{
				"bgtest.ping": func(ctx context.Context, p json.RawMessage) error {
					var msg struct{ ID string }
					if err := json.Unmarshal(p, &msg); err != nil {
						return err
					}
					return d.Workflows.Start(ctx, "bgtest", msg.ID, workflow.State{"id": msg.ID})
				},
			},
		}, nil
	})
}

func TestQueueStartsWorkflow(t *testing.T) {
	app := newApp(t, t.TempDir())
	defer app.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = app.RunBackground(ctx) }()
	defer func() { cancel(); <-done }()

	if err := app.Deps().Queue.Enqueue(ctx, "bgtest.ping", map[string]string{"id": "exec-1"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		it, err := app.Deps().Store.Get(ctx, store.Key{PK: "bgtest", SK: "exec-1"})
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
func TestHandleQueueMessageDropsGarbage(t *testing.T) {
	app := newApp(t, t.TempDir())
	defer app.Close()
	for _, body := range []string{"not json", `{"topic":"nobody.listens","payload":{}}`, `{}`} {
		if err := app.HandleQueueMessage(context.Background(), []byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	if _, err := app.RunStep(context.Background(), []byte(`{"workflow":"bgtest","step":"Nope","state":{}}`)); err == nil {
		t.Error("unknown step should fail")
	}
	out, err := app.RunStep(context.Background(), []byte(`{"workflow":"bgtest","step":"First","state":{"id":"x"}}`))
	if err != nil || string(out) != `{"first":true,"id":"x"}` {
		t.Errorf("RunStep: %s %v", out, err)
	}
}
