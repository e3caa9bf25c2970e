package storequeue_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	minidyn "github.com/truora/minidyn/server"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/queuetest"
	"github.com/agentplane/agentplane/shared/kernel/queue/storequeue"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
)

// The queue is written against the store port only: the same suite passes
// over the DynamoDB adapter (on minidyn, in process), where handles in
// several processes share one table.
func TestConformanceOverDynamoDB(t *testing.T) {
	t.Parallel()
	var tables atomic.Int64
	type table struct {
		c    *dynamodb.Client
		name string
	}
	var mu sync.Mutex
	where := map[queue.Queue]table{}
	queuetest.Run(t, func(t *testing.T, opts queue.Options) queue.Queue {
		// A server of its own: minidyn v0.8.2 races when a table is
		// created while another is in use.
		c := minidynClient(t)
		name := fmt.Sprintf("q%d", tables.Add(1))
		if err := dynamostore.CreateTable(context.Background(), c, name); err != nil {
			t.Fatal(err)
		}
		q := newQueue(t, dynamostore.New(c, name), "jobs", opts)
		mu.Lock()
		where[q] = table{c, name}
		mu.Unlock()
		return q
	}, queuetest.Durable(func(t *testing.T, q queue.Queue, opts queue.Options) queue.Queue {
		mu.Lock()
		defer mu.Unlock()
		tb := where[q]
		return newQueue(t, dynamostore.New(tb.c, tb.name), q.(*storequeue.Queue).Name(), opts)
	}))
}

// minidynClient serves minidyn in process on 127.0.0.1 until the test ends.
func minidynClient(t *testing.T) *dynamodb.Client {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(minidyn.NewServer())
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), Logger: logging.Nop{}})
}
