package server

// WIP (lead): the AWS backend (DynamoDB, S3, SQS, Step Functions) is wired
// once the DynamoDB store adapter lands; until then aws mode refuses to
// start rather than pretending to work.

import (
	"context"
	"errors"
	"log/slog"
)

var errNotWired = errors.New("server: aws mode is not available yet (the DynamoDB adapter is not wired)")

func openAWS(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	return nil, errNotWired
}
