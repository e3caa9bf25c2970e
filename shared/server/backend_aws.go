package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/sqsqueue"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// openAWS opens DynamoDB, S3, SQS and Step Functions from the default AWS
// configuration chain (the Lambda role; AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> point it at LocalStack or emulators). The SQS
// queue is consumed by the build-worker Lambda's event source, not here.
func openAWS(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	be := &backend{store: dynamostore.New(dynamodb.NewFromConfig(awsCfg), cfg.Table)}
	be.closers = append(be.closers, be.store.Close)
	bucket, err := blobs.OpenS3(awsCfg, cfg.Bucket, blobs.S3Options{Endpoint: os.Getenv("AWS_ENDPOINT_URL_S3"), PathStyle: cfg.S3PathStyle})
	if err != nil {
		be.close()
		return nil, fmt.Errorf("open bucket: %w", err)
	}
	be.blobs = bucket
	be.closers = append(be.closers, bucket.Close)
	if cfg.QueueURL != "" {
		q := sqsqueue.New(sqsqueue.NewClient(awsCfg, ""), cfg.QueueURL, queue.Options{Logger: log})
		be.send = q.Send
	} else {
		be.send = func(context.Context, []byte) error {
			return errors.New("server: AGENTPLANE_QUEUE_URL is not set")
		}
	}
	machines := cfg.StateMachines
	be.starter = func([]workflow.Definition) (workflow.Starter, error) {
		return sfnstart.New(sfnstart.NewClient(awsCfg, ""), machines), nil
	}
	return be, nil
}
