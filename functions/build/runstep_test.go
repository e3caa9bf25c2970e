package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// fakeApp runs a one-step workflow whose step fails transiently a given
// number of times, then echoes the state with a counter.
type fakeApp struct {
	failures  int
	permanent bool
	calls     int
	payloads  []map[string]any
}

func (f *fakeApp) Workflows() []workflow.Definition {
	return []workflow.Definition{{Name: "build", Steps: []workflow.Step{
		{Name: "Build", MaxAttempts: 3, Backoff: time.Millisecond, AWSService: "codebuild"},
	}}}
}

func (f *fakeApp) RunStep(_ context.Context, payload []byte) ([]byte, error) {
	f.calls++
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, err
	}
	f.payloads = append(f.payloads, p)
	if f.permanent {
		return nil, errors.New("bad source")
	}
	if f.calls <= f.failures {
		return nil, fmt.Errorf("blob store: %w", workflow.ErrTransient)
	}
	st := p["state"].(map[string]any)
	st["built"] = true
	return json.Marshal(st)
}

func TestRunStepToFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "state.json")
	app := &fakeApp{failures: 2}
	if err := runStepToFile(context.Background(), app, "build", "Build", `{"revision_id":"r1"}`, out); err != nil {
		t.Fatal(err)
	}
	if app.calls != 3 {
		t.Errorf("%d calls, want 3 (two transient failures, then success)", app.calls)
	}
	if p := app.payloads[0]; p["workflow"] != "build" || p["step"] != "Build" || p["state"].(map[string]any)["revision_id"] != "r1" {
		t.Errorf("payload %v", p)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil || st["built"] != true || st["revision_id"] != "r1" {
		t.Errorf("state file %s (%v)", raw, err)
	}
}

func TestRunStepToFileFailures(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name      string
		app       *fakeApp
		wf, state string
		calls     int
	}{
		{"transient beyond MaxAttempts", &fakeApp{failures: 5}, "build", "{}", 3},
		{"permanent", &fakeApp{permanent: true}, "build", "{}", 1},
		{"state not an object", &fakeApp{}, "build", "[1]", 0},
		{"no workflow", &fakeApp{}, "", "{}", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".json")
			if err := runStepToFile(context.Background(), tc.app, tc.wf, "Build", tc.state, out); err == nil {
				t.Fatal("no error")
			}
			if tc.app.calls != tc.calls {
				t.Errorf("%d calls, want %d", tc.app.calls, tc.calls)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Error("a failed step wrote a state file")
			}
		})
	}
}
