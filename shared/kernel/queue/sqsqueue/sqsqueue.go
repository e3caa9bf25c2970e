// Package sqsqueue is the SQS adapter of the queue port (aws-sdk-go-v2). A
// long-running process consumes with Queue.Consume; a Lambda function
// subscribed to the queue uses BatchHandler instead, and the queue's redrive
// policy does the dead-lettering there.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentplane/agentplane/shared/kernel/queue"
)

// API is the part of the SQS client the adapter uses (*sqs.Client).
type API interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// NewClient builds an SQS client; endpoint overrides AWS's (LocalStack, an
// emulator) when not empty.
func NewClient(cfg aws.Config, endpoint string) *sqs.Client {
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
}

// Queue is one SQS queue.
type Queue struct {
	api  API
	url  string
	opts queue.Options
}

var _ queue.Queue = (*Queue)(nil)

// New returns the queue at queueURL; its consumers use opts.
func New(api API, queueURL string, opts queue.Options) *Queue {
	return &Queue{api: api, url: queueURL, opts: opts.WithDefaults()}
}

// Send implements queue.Sender.
func (q *Queue) Send(ctx context.Context, body []byte) error {
	if err := queue.Validate(body); err != nil {
		return err
	}
	_, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(string(body))})
	if err != nil {
		return fmt.Errorf("sqsqueue: send: %w", err)
	}
	return nil
}

// pollWait is the long-poll wait, in seconds. A poll is never cancelled
// mid-flight: SQS (and emulators) may hand messages to a poll whose client
// has gone, hiding them for a whole visibility timeout. So stopping waits for
// the current poll to end, and pollWait bounds that wait.
const pollWait = 5

// Consume implements queue.Consumer.
func (q *Queue) Consume(ctx context.Context, h queue.Handler) error {
	slots := make(chan struct{}, q.opts.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	backoff := 500 * time.Millisecond
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		// Take every free slot, up to SQS's batch size of 10.
		free := 1
	fill:
		for free < 10 {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), (pollWait+15)*time.Second)
		out, err := q.api.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(q.url),
			MaxNumberOfMessages:         int32(free),
			WaitTimeSeconds:             pollWait,
			VisibilityTimeout:           seconds(q.opts.VisibilityTimeout),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err == nil && ctx.Err() != nil {
			// Stopped during the poll: hand what it brought back at once.
			for _, msg := range out.Messages {
				q.hide(rctx, msg, 0, q.opts.Logger)
			}
		}
		cancel()
		if err != nil || ctx.Err() != nil {
			for ; free > 0; free-- {
				<-slots
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var missing *types.QueueDoesNotExist
			if errors.As(err, &missing) {
				return fmt.Errorf("sqsqueue: receive from %s: %w", q.url, err)
			}
			q.opts.Logger.Error("sqsqueue: receive failed; retrying", "queue", q.url, "error", err.Error(), "backoff", backoff.String())
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = 500 * time.Millisecond
		for _, msg := range out.Messages {
			free--
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				q.handle(ctx, h, msg)
			}()
		}
		for ; free > 0; free-- {
			<-slots
		}
	}
}

func (q *Queue) handle(ctx context.Context, h queue.Handler, msg types.Message) {
	m := queue.Message{
		ID:       aws.ToString(msg.MessageId),
		Body:     []byte(aws.ToString(msg.Body)),
		Receives: receiveCount(msg.Attributes),
	}
	err := queue.Run(ctx, h, m)
	// Settle the message even when ctx was cancelled meanwhile.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	log := q.opts.Logger.With("queue", q.url, "message_id", m.ID, "receives", m.Receives)
	switch {
	case err == nil:
		q.delete(sctx, msg, log)
	case ctx.Err() != nil:
		// Stopping is not the message's fault: hand it back at once.
		q.hide(sctx, msg, 0, log)
	case m.Receives >= q.opts.MaxReceives:
		log = log.With("error", err.Error())
		if q.opts.DeadLetter == nil {
			log.Error("sqsqueue: message failed for good and there is no dead-letter queue; dropped")
		} else if derr := q.opts.DeadLetter.Send(sctx, m.Body); derr != nil {
			log.Error("sqsqueue: dead-lettering failed; will retry", "dead_letter_error", derr.Error())
			q.hide(sctx, msg, q.opts.RetryDelay, log)
			return
		} else {
			log.Warn("sqsqueue: message dead-lettered")
		}
		q.delete(sctx, msg, log)
	default:
		log.Warn("sqsqueue: handler failed; will retry", "error", err.Error())
		q.hide(sctx, msg, q.opts.RetryDelay, log)
	}
}

func (q *Queue) delete(ctx context.Context, msg types.Message, log *slog.Logger) {
	_, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: msg.ReceiptHandle})
	if err != nil {
		log.Error("sqsqueue: delete failed; the message will be delivered again", "error", err.Error())
	}
}

func (q *Queue) hide(ctx context.Context, msg types.Message, d time.Duration, log *slog.Logger) {
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: msg.ReceiptHandle, VisibilityTimeout: seconds(d),
	})
	if err != nil {
		// The visibility timeout still brings it back.
		log.Error("sqsqueue: change visibility failed", "error", err.Error())
	}
}

// seconds rounds d up to whole seconds within SQS's 0…12h range.
func seconds(d time.Duration) int32 {
	s := math.Ceil(d.Seconds())
	return int32(max(0, min(s, 43200)))
}

func receiveCount(attrs map[string]string) int {
	n, err := strconv.Atoi(attrs[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// BatchHandler adapts h to a Lambda SQS event handler that reports partial
// batch failures: failed messages return to the queue (visible again after
// the queue's visibility timeout) while the others are deleted. The event
// source mapping must enable ReportBatchItemFailures, and the queue's
// redrive policy dead-letters messages after maxReceiveCount receives.
func BatchHandler(h queue.Handler) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, r := range ev.Records {
			m := queue.Message{ID: r.MessageId, Body: []byte(r.Body), Receives: receiveCount(r.Attributes)}
			if err := queue.Run(ctx, h, m); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
			}
		}
		return resp, nil
	}
}
