// Package awsenv builds the AWS SDK configuration from what the runtime
// puts in the environment: a Lambda function's region and role
// credentials, a CodeBuild container's credentials endpoint, and the
// AWS_ENDPOINT_URL[_<SERVICE>] overrides that point clients at LocalStack
// or emulators. It replaces the SDK's config.LoadDefaultConfig, which
// links the SSO, SSO-OIDC, STS and IMDS clients and shared-config parsing
// into every function (about 2 MB of each binary) for sources a Lambda
// function never uses.
package awsenv

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
)

// containerHost is where ECS and CodeBuild serve a task's credentials
// (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI is relative to it).
const containerHost = "http://169.254.170.2"

// ErrNoCredentials: the environment names no credentials.
var ErrNoCredentials = errors.New("awsenv: no AWS credentials in the environment (AWS_ACCESS_KEY_ID, or a container credentials endpoint)")

// Load returns the configuration the environment describes.
func Load(getenv func(string) string) (aws.Config, error) {
	cfg := aws.Config{Region: getenv("AWS_REGION")}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("awsenv: AWS_REGION is not set")
	}
	if e := getenv("AWS_ENDPOINT_URL"); e != "" {
		cfg.BaseEndpoint = aws.String(e)
	}
	switch full, rel := getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"), getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); {
	case full != "" || rel != "":
		endpoint := full
		if endpoint == "" {
			endpoint = containerHost + rel
		}
		if _, err := url.Parse(endpoint); err != nil {
			return aws.Config{}, fmt.Errorf("awsenv: container credentials endpoint: %w", err)
		}
		token, err := containerToken(getenv)
		if err != nil {
			return aws.Config{}, err
		}
		cfg.Credentials = aws.NewCredentialsCache(endpointcreds.New(endpoint, func(o *endpointcreds.Options) {
			o.AuthorizationToken = token
		}))
	case getenv("AWS_ACCESS_KEY_ID") != "":
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
			getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY"), getenv("AWS_SESSION_TOKEN")))
	default:
		return aws.Config{}, ErrNoCredentials
	}
	return cfg, nil
}

// containerToken is the authorization token of the credentials endpoint,
// given directly or in a file.
func containerToken(getenv func(string) string) (string, error) {
	if t := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN"); t != "" {
		return t, nil
	}
	if f := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("awsenv: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

// Endpoint returns the endpoint override of one service
// (AWS_ENDPOINT_URL_<SERVICE>, e.g. DYNAMODB, S3, SQS, SFN, KMS), or "".
// The service-wide AWS_ENDPOINT_URL is already the configuration's
// BaseEndpoint.
func Endpoint(getenv func(string) string, service string) string {
	return getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(service))
}
