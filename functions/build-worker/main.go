// Command build-worker is the Lambda function subscribed to the build
// queue. Each SQS record goes to App.HandleQueueMessage; failed records are
// reported as partial batch failures (the event source mapping enables
// ReportBatchItemFailures), so only they return to the queue and, after the
// redrive policy's receive count, to its dead-letter queue.
package main

import (
	"context"
	"log"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/sqsqueue"
	"github.com/agentplane/agentplane/shared/server"
)

func main() {
	cfg, err := server.ConfigFromEnv()
	if err != nil {
		log.Fatalf("build-worker: configuration: %v", err)
	}
	app, err := server.New(context.Background(), cfg)
	if err != nil {
		log.Fatalf("build-worker: start: %v", err)
	}
	lambda.Start(sqsqueue.BatchHandler(func(ctx context.Context, m queue.Message) error {
		return app.HandleQueueMessage(ctx, m.Body)
	}))
}
