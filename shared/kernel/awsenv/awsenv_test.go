package awsenv_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/awsenv"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestStaticCredentialsAndEndpoints(t *testing.T) {
	cfg, err := awsenv.Load(env(map[string]string{
		"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN": "tok", "AWS_ENDPOINT_URL": "http://127.0.0.1:4566", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" || cfg.BaseEndpoint == nil || *cfg.BaseEndpoint != "http://127.0.0.1:4566" {
		t.Fatalf("region %q, endpoint %v", cfg.Region, cfg.BaseEndpoint)
	}
	c, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "AKID" || c.SecretAccessKey != "secret" || c.SessionToken != "tok" {
		t.Fatalf("credentials %+v %v", c, err)
	}
	if e := awsenv.Endpoint(env(map[string]string{"AWS_ENDPOINT_URL_S3": "http://x"}), "s3"); e != "http://x" {
		t.Fatalf("endpoint %q", e)
	}
}

// CodeBuild (and ECS) serve the task role's credentials at an endpoint,
// with an authorization token.
func TestContainerCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "secret-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"AccessKeyId":"ASIA","SecretAccessKey":"s","Token":"t","Expiration":"2100-01-01T00:00:00Z"}`))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := awsenv.Load(env(map[string]string{"AWS_REGION": "us-east-1",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": srv.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "ASIA" || c.SessionToken != "t" {
		t.Fatalf("credentials %+v %v", c, err)
	}
}

func TestMissingSettings(t *testing.T) {
	if _, err := awsenv.Load(env(map[string]string{"AWS_ACCESS_KEY_ID": "x"})); err == nil {
		t.Error("no region accepted")
	}
	if _, err := awsenv.Load(env(map[string]string{"AWS_REGION": "us-east-1"})); !errors.Is(err, awsenv.ErrNoCredentials) {
		t.Errorf("no credentials: %v", err)
	}
}
