package dynamostore_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/store"
	"github.com/agentplane/agentplane/shared/store/dynamostore"
	"github.com/agentplane/agentplane/shared/store/storetest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"
	minidyn "github.com/truora/minidyn/server"
)

var tables atomic.Int64

func client(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		// minidyn answers without the CRC32 header the SDK checks; keep
		// the warning out of test output.
		Logger: logging.Nop{},
	})
}

func opener(endpoint string) storetest.Opener {
	c := client(endpoint)
	return func(t *testing.T) (store.Store, func(func() time.Time)) {
		table := fmt.Sprintf("t%d_%d", time.Now().UnixNano(), tables.Add(1))
		if err := dynamostore.CreateTable(context.Background(), c, table); err != nil {
			t.Fatal(err)
		}
		s := dynamostore.New(c, table)
		return s, s.SetClock
	}
}

// Against dynalite (started by scripts/emulators.sh): everything but
// transactions, which dynalite does not implement.
func TestConformanceDynalite(t *testing.T) {
	ep := os.Getenv("AGENTPLANE_TEST_DYNAMODB_ENDPOINT")
	if ep == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTPLANE_TEST_DYNAMODB_ENDPOINT is not set: run through make test (scripts/emulators.sh)")
		}
		t.Skip("AGENTPLANE_TEST_DYNAMODB_ENDPOINT not set; run `scripts/emulators.sh start` or make test")
	}
	storetest.Run(t, opener(ep), storetest.Options{SkipTransactions: true})
}

// Against minidyn, in process on 127.0.0.1: the whole suite, transactions
// included.
func TestConformanceMinidyn(t *testing.T) {
	log.SetOutput(io.Discard)
	srv := httptest.NewServer(minidyn.NewServer())
	defer srv.Close()
	storetest.Run(t, opener(srv.URL), storetest.Options{})
}
