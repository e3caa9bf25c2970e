// Command build-step is the Lambda function that the build state machine's
// Task states invoke with {"workflow", "step", "state"}; it runs that step
// through App.RunStep and returns the next state.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentplane/agentplane/shared/server"
	"github.com/agentplane/agentplane/shared/workflow"
	"github.com/agentplane/agentplane/shared/workflow/sfnstart"
)

func main() {
	cfg, err := server.ConfigFromEnv()
	if err != nil {
		log.Fatalf("build-step: configuration: %v", err)
	}
	app, err := server.New(context.Background(), cfg)
	if err != nil {
		log.Fatalf("build-step: start: %v", err)
	}
	lambda.Start(func(ctx context.Context, payload json.RawMessage) (json.RawMessage, error) {
		out, err := app.RunStep(ctx, payload)
		if err != nil {
			return nil, stepError(err)
		}
		return out, nil
	})
}

// stepError gives a step's error the type whose name the state machine
// matches: aws-lambda-go reports the error's Go type name as errorType, so
// Retry sees "Transient" (workflow.TransientErrorName) for errors wrapping
// workflow.ErrTransient and "Failed" for the rest.
func stepError(err error) error {
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
