package sqsqueue_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/queuetest"
	"github.com/agentplane/agentplane/shared/kernel/queue/sqsqueue"
)

func endpoint(t *testing.T) string {
	e := os.Getenv("AGENTPLANE_TEST_AWS_ENDPOINT")
	if e == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTPLANE_TEST_AWS_ENDPOINT is not set: the SQS adapter must be tested in CI (scripts/emulators.sh starts fauxqs)")
		}
		t.Skip("AGENTPLANE_TEST_AWS_ENDPOINT is not set: start the emulators (scripts/emulators.sh) to test SQS")
	}
	return e
}

func TestConformance(t *testing.T) {
	client := sqsqueue.NewClient(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, endpoint(t))
	var mu sync.Mutex
	urls := map[queue.Queue]string{}
	queuetest.Run(t, func(t *testing.T, opts queue.Options) queue.Queue {
		ctx := context.Background()
		name := "agentplane-test-" + rand.Text()[:12]
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("create queue: %v", err)
		}
		t.Cleanup(func() {
			if _, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
				t.Errorf("delete queue: %v", err)
			}
		})
		q := sqsqueue.New(client, aws.ToString(out.QueueUrl), opts)
		mu.Lock()
		urls[q] = aws.ToString(out.QueueUrl)
		mu.Unlock()
		return q
	}, queuetest.Durable(func(t *testing.T, q queue.Queue, opts queue.Options) queue.Queue {
		mu.Lock()
		defer mu.Unlock()
		return sqsqueue.New(client, urls[q], opts)
	}))
}

func TestMissingQueue(t *testing.T) {
	client := sqsqueue.NewClient(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, endpoint(t))
	q := sqsqueue.New(client, "http://sqs.us-east-1.localhost:4566/000000000000/agentplane-no-such-queue", queue.Options{})
	err := q.Consume(t.Context(), func(context.Context, queue.Message) error { return nil })
	if err == nil {
		t.Fatal("Consume of a missing queue returned nil")
	}
}

func TestBatchHandler(t *testing.T) {
	var seen []string
	h := sqsqueue.BatchHandler(func(ctx context.Context, m queue.Message) error {
		seen = append(seen, fmt.Sprintf("%s:%s:%d", m.ID, m.Body, m.Receives))
		switch string(m.Body) {
		case "fail":
			return errors.New("no")
		case "panic":
			panic("bad")
		}
		return nil
	})
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "ok", Attributes: map[string]string{"ApproximateReceiveCount": "3"}},
		{MessageId: "m2", Body: "fail"},
		{MessageId: "m3", Body: "panic"},
		{MessageId: "m4", Body: "ok"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[m1:ok:3 m2:fail:1 m3:panic:1 m4:ok:1]" {
		t.Errorf("handled %v", seen)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if fmt.Sprint(failed) != "[m2 m3]" {
		t.Errorf("batch item failures %v, want [m2 m3]", failed)
	}
}
