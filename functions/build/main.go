// Command build runs the steps of the revision build workflow
// (shared/compose/buildgroup). As the Lambda function that the state
// machine's Task states invoke with {"workflow", "step", "state"}, it runs
// that step and returns the next state.
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
	"log"
	"os"

	"github.com/agentplane/agentplane/shared/compose/buildgroup"
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "run-step" {
		lambdarun.Run(buildgroup.Group)
		return
	}
	pr, err := lambdarun.Start(context.Background(), buildgroup.Group)
	if err != nil {
		log.Fatalf("build: %v", err)
	}
	err = runStepToFile(context.Background(), pr, os.Getenv("AGENTPLANE_WORKFLOW"), os.Getenv("AGENTPLANE_STEP"),
		os.Getenv("AGENTPLANE_STATE"), os.Args[2])
	_ = pr.Close()
	if err != nil {
		log.Fatalf("build: %v", err)
	}
}
