// Package workflow holds the port for starting a named workflow (the revision
// build) and the shape of a workflow definition: an ordered list of Go steps.
// The local runner (sub-package local) executes the steps in-process and
// persists progress in the store; the CDK app turns the same list into a Step
// Functions state machine (one Task state per step, Retry on transient
// errors, Catch to the step's failure status); the AWS adapter (sub-package
// sfnstart) calls StartExecution, and its Dispatch runs a step in Lambda.
package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTransient marks an error worth retrying (network, throttling). Steps
// wrap it (fmt.Errorf("...: %w", workflow.ErrTransient)); the runner retries
// those with backoff, and the state machine's Retry matches its name.
var ErrTransient = errors.New("transient")

// TransientErrorName is the error name a Lambda step reports for ErrTransient,
// which the state machine's Retry clauses match.
const TransientErrorName = "Transient"

// FailedErrorName is the error name a step reports for any other error.
const FailedErrorName = "Failed"

// ErrorKey is the state key under which a failure handler (OnFailure) step
// receives the failed step's error as {"Error": name, "Cause": message}: the
// state machine's Catch uses ResultPath "$.error", and the local runner
// does the same.
const ErrorKey = "error"

// ErrUnknown reports a workflow name no definition (or state machine) has.
var ErrUnknown = errors.New("workflow: unknown workflow")

// ErrInvalid reports a start request no adapter can take: an empty or
// unusable execution id, or an input that is not JSON or is too large.
var ErrInvalid = errors.New("workflow: invalid start request")

// State is the JSON document a workflow passes from step to step.
type State = map[string]any

// StepFunc runs one step. It returns the state for the next step.
type StepFunc func(ctx context.Context, in State) (State, error)

// Step is one named step of a definition.
type Step struct {
	// Name is the state name shown in the Step Functions console.
	Name string
	// Comment describes the step in the state machine.
	Comment string
	Run     StepFunc
	// MaxAttempts is how many times a transient failure is tried (>= 1).
	MaxAttempts int
	// Backoff is the first retry interval; it doubles each attempt.
	Backoff time.Duration
	// OnFailure names the failure handler step run when this step fails for
	// good (the Catch target); "" means the workflow just fails.
	OnFailure string
	// FailureOnly marks handler steps that run only as a Catch target.
	FailureOnly bool
	// AWSService, when set, says the CDK app should use a service
	// integration instead of a Lambda invoke for this step (e.g. "codebuild").
	AWSService string
}

// Definition is a named, ordered list of steps.
type Definition struct {
	Name  string
	Steps []Step
}

// Step returns the step with that name.
func (d Definition) Step(name string) (Step, bool) {
	for _, s := range d.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// Next returns the step that follows name in normal order (failure-only
// steps are skipped); ok is false after the last step.
func (d Definition) Next(name string) (next string, ok bool) {
	seen := false
	for _, s := range d.Steps {
		if seen && !s.FailureOnly {
			return s.Name, true
		}
		if s.Name == name {
			seen = true
		}
	}
	return "", false
}

// First returns the first step run by an execution.
func (d Definition) First() (string, bool) {
	for _, s := range d.Steps {
		if !s.FailureOnly {
			return s.Name, true
		}
	}
	return "", false
}

// Validate checks a definition: a name, at least one normal step, unique
// step names, a Run for every step that is not an AWS service integration,
// and OnFailure targets that exist and are failure-only steps.
func (d Definition) Validate() error {
	if d.Name == "" {
		return errors.New("workflow: definition without a name")
	}
	if _, ok := d.First(); !ok {
		return fmt.Errorf("workflow %s: no step to run", d.Name)
	}
	names := map[string]bool{}
	for _, s := range d.Steps {
		if s.Name == "" {
			return fmt.Errorf("workflow %s: step without a name", d.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("workflow %s: step %s defined twice", d.Name, s.Name)
		}
		names[s.Name] = true
		if s.Run == nil && s.AWSService == "" {
			return fmt.Errorf("workflow %s: step %s has no Run", d.Name, s.Name)
		}
	}
	for _, s := range d.Steps {
		if s.OnFailure == "" {
			continue
		}
		h, ok := d.Step(s.OnFailure)
		if !ok || !h.FailureOnly {
			return fmt.Errorf("workflow %s: step %s: OnFailure %q is not a failure-only step", d.Name, s.Name, s.OnFailure)
		}
	}
	return nil
}

// Starter starts executions of a definition. Execution ids are idempotency
// keys: starting an id that already exists is not an error.
type Starter interface {
	Start(ctx context.Context, workflow, executionID string, input State) error
}
