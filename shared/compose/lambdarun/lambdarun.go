// Package lambdarun runs one route group as a Lambda function. The one
// function of a group receives every kind of event its group handles:
// API Gateway proxy requests for its routes, SQS batches from its queue,
// the scheduled sweep, and state machine tasks (the build group).
package lambdarun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/kernel/lambdaproxy"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/sqsqueue"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
)

// Run is the whole main of a group's function: the process from the
// environment, on the Lambda runtime. A configuration or start-up error
// ends the process, which Lambda reports as an init failure.
func Run(g compose.Group) {
	pr, err := Start(context.Background(), g)
	if err != nil {
		log.Fatalf("%s: %v", g.Name, err)
	}
	lambda.Start(Handler(pr))
}

// Start opens the platform from the environment and builds g.
func Start(ctx context.Context, g compose.Group) (*compose.Process, error) {
	cfg, err := compose.ConfigFromEnv()
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	p, err := compose.Open(ctx, cfg, nil)
	if err != nil {
		return nil, err
	}
	pr, err := compose.Build(ctx, p, g)
	if err != nil {
		p.Close()
		return nil, err
	}
	return pr, nil
}

// kind is just enough of an event to tell its source.
type kind struct {
	Records []struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
	Source     string `json:"source"`
	HTTPMethod string `json:"httpMethod"`
	Workflow   string `json:"workflow"`
}

// ErrUnknownEvent is returned for an event of no known source.
var ErrUnknownEvent = errors.New("lambdarun: unknown event")

// Handler dispatches one invocation by the event's source.
func Handler(pr *compose.Process) func(ctx context.Context, raw json.RawMessage) (any, error) {
	proxy := lambdaproxy.Handler(pr.Handler())
	batch := sqsqueue.BatchHandler(func(ctx context.Context, m queue.Message) error { return pr.HandleMessage(ctx, m.Body) })
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var k kind
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnknownEvent, err)
		}
		switch {
		case k.HTTPMethod != "":
			var req events.APIGatewayProxyRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				return nil, err
			}
			return proxy(ctx, req)
		case len(k.Records) > 0 && k.Records[0].EventSource == "aws:sqs":
			var ev events.SQSEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, err
			}
			return batch(ctx, ev)
		case k.Source == "aws.events":
			return nil, pr.Sweep(ctx)
		case k.Workflow != "":
			out, err := pr.RunStep(ctx, raw)
			if err != nil {
				return nil, StepError(err)
			}
			return json.RawMessage(out), nil
		}
		return nil, ErrUnknownEvent
	}
}

// StepError gives a step's error the type whose name the state machine
// matches: aws-lambda-go reports the error's Go type name as errorType, so
// Retry sees "Transient" (workflow.TransientErrorName) for errors wrapping
// workflow.ErrTransient and "Failed" for the rest.
func StepError(err error) error {
	var t *sfnstart.Transient
	var f *sfnstart.Failed
	switch {
	case errors.As(err, &t):
		return t
	case errors.As(err, &f):
		return f
	case errors.Is(err, workflow.ErrTransient):
		return &sfnstart.Transient{Err: err}
	default:
		return &sfnstart.Failed{Err: err}
	}
}
