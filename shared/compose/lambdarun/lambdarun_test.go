package lambdarun_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/platformgroup"
)

const adminKey = "ap_test_admin_key_0123456789abcdef"

// sweeps counts scheduled sweeps; messages records queue payloads.
type probeGroup struct {
	sweeps   int
	messages []string
	failOn   string
}

func (g *probeGroup) group() compose.Group {
	return compose.Group{Name: "probe", Consumes: []string{"probe.topic"}, Sweeps: true,
		Build: func(context.Context, *compose.Platform) (*compose.Module, error) {
			return &compose.Module{
				Consumers: map[string]compose.Consumer{"probe.topic": func(_ context.Context, raw json.RawMessage) error {
					if string(raw) == g.failOn {
						return errors.New("refused")
					}
					g.messages = append(g.messages, string(raw))
					return nil
				}},
				Sweep: func(context.Context) error { g.sweeps++; return nil },
			}, nil
		}}
}

func process(t *testing.T, groups ...compose.Group) *compose.Process {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us", LogLevel: "error"}
	p, err := compose.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := compose.Build(context.Background(), p, groups...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close() })
	if _, err := p.Identity.Bootstrap(context.Background(), adminKey); err != nil {
		t.Fatal(err)
	}
	return pr
}

// One function receives API Gateway requests, SQS batches and scheduled
// sweeps; each reaches the right part of its group.
func TestHandlerDispatchesByEventSource(t *testing.T) {
	probe := &probeGroup{failOn: `{"n":2}`}
	pr := process(t, platformgroup.Group, probe.group())
	fn := lambdarun.Handler(pr)
	ctx := context.Background()

	raw, err := os.ReadFile("testdata/get-workspaces.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"headers"} {
		ev[h].(map[string]any)["X-Api-Key"] = adminKey
	}
	ev["multiValueHeaders"].(map[string]any)["X-Api-Key"] = []string{adminKey}
	raw, _ = json.Marshal(ev)
	out, err := fn(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	resp, ok := out.(events.APIGatewayProxyResponse)
	if !ok || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"display_name"`) {
		t.Fatalf("API request: %#v", out)
	}

	env := func(n int) string {
		b, _ := json.Marshal(compose.Envelope{Topic: "probe.topic", Payload: json.RawMessage(`{"n":` + string(rune('0'+n)) + `}`)})
		return string(b)
	}
	sqs := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", EventSource: "aws:sqs", Body: env(1)},
		{MessageId: "m2", EventSource: "aws:sqs", Body: env(2)},
	}}
	raw, _ = json.Marshal(sqs)
	out, err = fn(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	batch, ok := out.(events.SQSEventResponse)
	if !ok || len(batch.BatchItemFailures) != 1 || batch.BatchItemFailures[0].ItemIdentifier != "m2" {
		t.Fatalf("SQS batch: %#v", out)
	}
	if len(probe.messages) != 1 || probe.messages[0] != `{"n":1}` {
		t.Fatalf("consumed %v", probe.messages)
	}

	if _, err := fn(ctx, json.RawMessage(`{"source":"aws.events","detail-type":"Scheduled Event","detail":{}}`)); err != nil {
		t.Fatal(err)
	}
	if probe.sweeps != 1 {
		t.Fatalf("%d sweeps", probe.sweeps)
	}

	for _, bad := range []string{`{}`, `[]`, `"x"`} {
		if _, err := fn(ctx, json.RawMessage(bad)); !errors.Is(err, lambdarun.ErrUnknownEvent) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
