// Command sweeper is the Lambda function an EventBridge schedule invokes to
// run the periodic maintenance of every module once (App.Sweep: expired
// records, pending deletions).
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentplane/agentplane/shared/server"
)

func main() {
	cfg, err := server.ConfigFromEnv()
	if err != nil {
		log.Fatalf("sweeper: configuration: %v", err)
	}
	app, err := server.New(context.Background(), cfg)
	if err != nil {
		log.Fatalf("sweeper: start: %v", err)
	}
	lambda.Start(func(ctx context.Context, _ events.EventBridgeEvent) error {
		return app.Sweep(ctx)
	})
}
