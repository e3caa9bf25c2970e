// Package sfnstart is the AWS side of the workflow port: Starter starts a
// Step Functions execution of the state machine built from a definition,
// and Dispatch runs one step inside the Lambda function that the state
// machine's Task states invoke.
//
// The state machine invokes the step function with the payload
// {"step": "<step name>", "state": <the whole state>} (Parameters
// {"step": "<name>", "state.$": "$"}, OutputPath "$.Payload"), so a step's
// returned state becomes the next state. A step error wrapping
// workflow.ErrTransient is returned as a *Transient, any other as a *Failed:
// aws-lambda-go reports the Go type name of a returned error (without
// package or pointer) as the invocation's errorType, so the state machine
// sees the error names workflow.TransientErrorName ("Transient") and
// workflow.FailedErrorName ("Failed"), and Retry clauses match "Transient".
package sfnstart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// MaxInputSize is Step Functions' limit on an execution's input, in bytes.
const MaxInputSize = 256 * 1024

// API is the part of the Step Functions client Starter uses (*sfn.Client).
type API interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

// NewClient builds a Step Functions client; endpoint overrides AWS's
// (LocalStack) when not empty.
func NewClient(cfg aws.Config, endpoint string) *sfn.Client {
	return sfn.NewFromConfig(cfg, func(o *sfn.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// Starter starts executions of state machines named by workflow.
type Starter struct {
	api  API
	arns map[string]string
}

var _ workflow.Starter = (*Starter)(nil)

// New returns a Starter; stateMachines maps a workflow name to its state
// machine's ARN (AGENTPLANE_STATE_MACHINES).
func New(api API, stateMachines map[string]string) *Starter {
	arns := make(map[string]string, len(stateMachines))
	for k, v := range stateMachines {
		arns[k] = v
	}
	return &Starter{api: api, arns: arns}
}

// Start implements workflow.Starter. The execution is named
// ExecutionName(executionID); an execution of that name that exists
// already counts as started.
func (s *Starter) Start(ctx context.Context, wf, executionID string, input workflow.State) error {
	arn, ok := s.arns[wf]
	if !ok || arn == "" {
		return fmt.Errorf("%w: no state machine for %q", workflow.ErrUnknown, wf)
	}
	name, err := ExecutionName(executionID)
	if err != nil {
		return err
	}
	if input == nil {
		input = workflow.State{}
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return fmt.Errorf("%w: input: %v", workflow.ErrInvalid, err)
	}
	if len(raw) > MaxInputSize {
		return fmt.Errorf("%w: input is %d bytes, the limit is %d", workflow.ErrInvalid, len(raw), MaxInputSize)
	}
	_, err = s.api.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(arn),
		Name:            aws.String(name),
		Input:           aws.String(string(raw)),
	})
	var exists *types.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sfnstart: start %s execution %s: %w", wf, name, err)
	}
	return nil
}

// maxName is Step Functions' limit on an execution name.
const maxName = 80

// ExecutionName maps an execution id to a Step Functions execution name
// (1 to 80 characters of A-Z a-z 0-9 - _). A valid id is used unchanged;
// any other id becomes a readable prefix plus a hash of the whole id, so
// distinct ids keep distinct names and the mapping is stable (idempotent).
func ExecutionName(id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty execution id", workflow.ErrInvalid)
	}
	valid := len(id) <= maxName
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			valid = false
			b.WriteByte('_')
		}
	}
	if valid {
		return id, nil
	}
	sum := sha256.Sum256([]byte(id))
	suffix := "-" + hex.EncodeToString(sum[:10])
	prefix := b.String()
	if len(prefix) > maxName-len(suffix) {
		prefix = prefix[:maxName-len(suffix)]
	}
	return prefix + suffix, nil
}

// Transient is the error Dispatch returns for a step error that wraps
// workflow.ErrTransient; its type name is the error name Retry matches.
type Transient struct{ Err error }

func (e *Transient) Error() string { return e.Err.Error() }
func (e *Transient) Unwrap() error { return e.Err }

// Failed is the error Dispatch returns for every other failure.
type Failed struct{ Err error }

func (e *Failed) Error() string { return e.Err.Error() }
func (e *Failed) Unwrap() error { return e.Err }

// Payload is what the state machine sends to the step function.
type Payload struct {
	// Workflow is optional; when set it must be the definition's name.
	Workflow string          `json:"workflow,omitempty"`
	Step     string          `json:"step"`
	State    json.RawMessage `json:"state"`
}

// Dispatch runs the step named in payload with its state and returns the
// new state as JSON.
func Dispatch(ctx context.Context, def workflow.Definition, payload []byte) ([]byte, error) {
	var p Payload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, &Failed{fmt.Errorf("sfnstart: step payload: %w", err)}
	}
	if p.Workflow != "" && p.Workflow != def.Name {
		return nil, &Failed{fmt.Errorf("sfnstart: payload for workflow %q sent to %q", p.Workflow, def.Name)}
	}
	step, ok := def.Step(p.Step)
	if !ok || step.Run == nil {
		return nil, &Failed{fmt.Errorf("sfnstart: workflow %s has no step %q", def.Name, p.Step)}
	}
	state := workflow.State{}
	if len(p.State) > 0 && string(p.State) != "null" {
		if err := json.Unmarshal(p.State, &state); err != nil {
			return nil, &Failed{fmt.Errorf("sfnstart: step %s: state is not a JSON object: %w", p.Step, err)}
		}
	}
	out, err := run(ctx, step, state)
	if err != nil {
		if errors.Is(err, workflow.ErrTransient) {
			return nil, &Transient{err}
		}
		return nil, &Failed{err}
	}
	if out == nil {
		out = workflow.State{}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, &Failed{fmt.Errorf("sfnstart: step %s returned a state that is not JSON: %w", p.Step, err)}
	}
	if len(raw) > MaxInputSize {
		return nil, &Failed{fmt.Errorf("sfnstart: step %s returned %d bytes of state, the limit is %d", p.Step, len(raw), MaxInputSize)}
	}
	return raw, nil
}

// run turns a panicking step into a permanent failure, so the state
// machine's Catch handles it like any other.
func run(ctx context.Context, step workflow.Step, in workflow.State) (out workflow.State, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("step %s panicked: %v", step.Name, p)
		}
	}()
	return step.Run(ctx, in)
}
