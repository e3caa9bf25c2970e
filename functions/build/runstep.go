package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// stepRunner is the part of *compose.Process a step run needs.
type stepRunner interface {
	RunStep(ctx context.Context, payload []byte) ([]byte, error)
	Workflows() []workflow.Definition
}

// runStepToFile runs one step outside Lambda and writes its next state to
// path. Transient errors are retried here, MaxAttempts tries in all from
// Backoff, doubling, as the local runner and the Lambda Retry do; the
// state machine cannot tell a failed build's causes apart.
func runStepToFile(ctx context.Context, app stepRunner, wf, step, state, path string) error {
	if wf == "" || step == "" {
		return errors.New("run-step needs AGENTPLANE_WORKFLOW and AGENTPLANE_STEP")
	}
	if state == "" {
		state = "{}"
	}
	var st workflow.State
	if err := json.Unmarshal([]byte(state), &st); err != nil {
		return fmt.Errorf("AGENTPLANE_STATE is not a JSON object: %w", err)
	}
	attempts, backoff := 1, time.Second
	for _, d := range app.Workflows() {
		if s, ok := d.Step(step); ok && d.Name == wf {
			attempts, backoff = max(s.MaxAttempts, 1), max(s.Backoff, time.Millisecond)
		}
	}
	payload, err := json.Marshal(map[string]any{"workflow": wf, "step": step, "state": st})
	if err != nil {
		return err
	}
	for try := 1; ; try++ {
		out, err := app.RunStep(ctx, payload)
		if err == nil {
			return os.WriteFile(path, out, 0o600)
		}
		if !errors.Is(err, workflow.ErrTransient) || try >= attempts {
			return fmt.Errorf("workflow %s, step %s, attempt %d of %d: %w", wf, step, try, attempts, err)
		}
		t := time.NewTimer(backoff << (try - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
