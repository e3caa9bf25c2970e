// Command build-step runs workflow steps. As the Lambda function that the
// state machines' Task states invoke with {"workflow", "step", "state"}, it
// runs that step through App.RunStep and returns the next state.
//
// Run as `bootstrap run-step FILE` (in the CodeBuild project of a step with
// AWSService "codebuild", whose source is this function's zip), it runs the
// step named by AGENTPLANE_WORKFLOW and AGENTPLANE_STEP once on the state
// in AGENTPLANE_STATE, retrying transient errors as the definition says,
// and writes the next state to FILE; a failure exits non-zero, which fails
// the build and so the state.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentplane/agentplane/shared/server"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
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
	if len(os.Args) == 3 && os.Args[1] == "run-step" {
		err := runStepToFile(context.Background(), app, os.Getenv("AGENTPLANE_WORKFLOW"), os.Getenv("AGENTPLANE_STEP"),
			os.Getenv("AGENTPLANE_STATE"), os.Args[2])
		_ = app.Close()
		if err != nil {
			log.Fatalf("build-step: %v", err)
		}
		return
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
