package local_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/platformgroup"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	minidyn "github.com/truora/minidyn/server"
)

// AWS mode against emulators: the same handlers over DynamoDB (minidyn in
// process, since identity uses transactions, which dynalite lacks) and S3
// (fauxqs), bootstrapped like a fresh installation.
func TestAWSModeOnEmulators(t *testing.T) {
	aws3 := os.Getenv("AGENTPLANE_TEST_AWS_ENDPOINT")
	if aws3 == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("emulator endpoints are not set: run through make test")
		}
		t.Skip("emulators not running; run `scripts/emulators.sh start`")
	}
	mini := httptest.NewServer(minidyn.NewServer())
	defer mini.Close()
	ddb := mini.URL
	ctx := context.Background()
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	c := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(ddb), Credentials: creds})
	table, bucket := "awsmode"+strings.ReplaceAll(t.Name(), "/", ""), "awsmode-bucket"
	if err := dynamostore.CreateTable(ctx, c, table); err != nil {
		t.Fatal(err)
	}
	s3c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(aws3), Credentials: creds, UsePathStyle: true})
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", ddb)
	t.Setenv("AWS_ENDPOINT_URL_S3", aws3)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	cfg := compose.Config{Mode: compose.ModeAWS, Table: table, Bucket: bucket, S3PathStyle: true, Region: "eu",
		BootstrapAPIKey: adminKey, SelfHostedJITEnabled: true, LogLevel: "error"}
	p, err := compose.Open(ctx, cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	app, err := compose.Build(ctx, p, platformgroup.Group)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := p.Identity.Bootstrap(ctx, adminKey); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	cl := client{t, srv.URL}
	if code, body := cl.do("POST", "/api/v1/workspaces", adminKey, `{"display_name":"on-dynamo"}`); code != 201 {
		t.Fatalf("%d %s", code, body)
	}
	if code, body := cl.do("GET", "/api/v1/workspaces", adminKey, ""); code != 200 || !strings.Contains(body, "on-dynamo") {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := cl.do("GET", "/api/v1/workspaces", "ap_not_a_key_00000000000000", ""); code != 401 {
		t.Fatalf("bad key: %d", code)
	}
}
