package compose

import (
	"encoding/json"
	"fmt"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Mode says where the process runs.
type Mode string

const (
	// ModeLocal: one process, embedded store (bbolt), blobs in a folder,
	// in-process queue and workflow runner.
	ModeLocal Mode = "local"
	// ModeAWS: Lambda functions over DynamoDB, S3, SQS, Step Functions, KMS.
	ModeAWS Mode = "aws"
)

// Config is read from AGENTPLANE_* environment variables (ConfigFromEnv).
type Config struct {
	Mode Mode
	// Addr is the local listen address (AGENTPLANE_ADDR, 127.0.0.1:8000).
	Addr string
	// DataDir holds the local store, blobs and keys (AGENTPLANE_DATA_DIR, .data).
	DataDir string
	// BootstrapAPIKey is the admin key created on an empty store
	// (AGENTPLANE_BOOTSTRAP_API_KEY); generated and printed once when empty.
	BootstrapAPIKey string
	// BaseURL is the public URL of this installation, used to build
	// deployment URLs (AGENTPLANE_BASE_URL; default http://Addr locally).
	BaseURL string
	// SelfHosted turns on the self-hosted organization rules
	// (AGENTPLANE_SELF_HOSTED=true).
	SelfHosted bool
	// SelfHostedJITEnabled is SELF_HOSTED_JIT_PROVISIONING_ENABLED; false
	// disables JIT for every organization. Default true.
	SelfHostedJITEnabled bool
	// Region is the hosted region name, "us" or "eu" (AGENTPLANE_REGION_NAME).
	Region string
	// AllowLocalRepos lets the seeded local integration read file:// and
	// path repositories and loopback hosts. True in local mode unless
	// AGENTPLANE_ALLOW_LOCAL_REPOS=false; always false in AWS mode.
	AllowLocalRepos bool
	// WebhookSecret verifies X-Hub-Signature-256 on repository push
	// webhooks (AGENTPLANE_WEBHOOK_SECRET).
	WebhookSecret string
	// LogLevel is debug, info, warn or error (AGENTPLANE_LOG_LEVEL).
	LogLevel string

	// CacheTTL bounds how long a process serves an authenticated API key
	// or a deployment's thread target from memory
	// (AGENTPLANE_CACHE_TTL, a Go duration, default 5s; 0 there turns
	// the caches off). Zero here means DefaultCacheTTL and a negative
	// value off: read it with CacheFor. In one process a revoked key or a
	// changed deployment is dropped from the caches at once; other
	// processes (Lambdas) see it within this time.
	CacheTTL time.Duration

	// RateLimits is the interface's rate-limit table's configuration:
	// always on in AWS, AGENTPLANE_RATE_LIMITS=on locally.
	RateLimits ratelimits.Config

	// AWS mode.
	Table  string // AGENTPLANE_TABLE
	Bucket string // AGENTPLANE_BUCKET
	// Topics maps each queue topic this function publishes to the URL of
	// its consuming group's queue (AGENTPLANE_TOPICS, JSON; the CDK app
	// sets it).
	Topics        map[string]string
	KMSKeyID      string            // AGENTPLANE_KMS_KEY_ID
	StateMachines map[string]string // AGENTPLANE_STATE_MACHINES (JSON: workflow → ARN)
	// S3PathStyle uses path-style S3 addressing (LocalStack, emulators):
	// AGENTPLANE_S3_PATH_STYLE=true.
	S3PathStyle bool
}

// ConfigFromEnv reads the configuration and checks it.
func ConfigFromEnv() (Config, error) {
	c := Config{
		Mode:            Mode(env("AGENTPLANE_MODE", string(ModeLocal))),
		Addr:            env("AGENTPLANE_ADDR", "127.0.0.1:8000"),
		DataDir:         env("AGENTPLANE_DATA_DIR", ".data"),
		BootstrapAPIKey: os.Getenv("AGENTPLANE_BOOTSTRAP_API_KEY"),
		BaseURL:         strings.TrimRight(os.Getenv("AGENTPLANE_BASE_URL"), "/"),
		Region:          env("AGENTPLANE_REGION_NAME", "us"),
		WebhookSecret:   os.Getenv("AGENTPLANE_WEBHOOK_SECRET"),
		LogLevel:        env("AGENTPLANE_LOG_LEVEL", "info"),
		Table:           os.Getenv("AGENTPLANE_TABLE"),
		Bucket:          os.Getenv("AGENTPLANE_BUCKET"),
		KMSKeyID:        os.Getenv("AGENTPLANE_KMS_KEY_ID"),
	}
	var err error
	if c.SelfHosted, err = envBool("AGENTPLANE_SELF_HOSTED", false); err != nil {
		return c, err
	}
	if c.SelfHostedJITEnabled, err = envBool("SELF_HOSTED_JIT_PROVISIONING_ENABLED", true); err != nil {
		return c, err
	}
	if c.AllowLocalRepos, err = envBool("AGENTPLANE_ALLOW_LOCAL_REPOS", c.Mode == ModeLocal); err != nil {
		return c, err
	}
	if c.S3PathStyle, err = envBool("AGENTPLANE_S3_PATH_STYLE", false); err != nil {
		return c, err
	}
	if c.CacheTTL, err = envDuration("AGENTPLANE_CACHE_TTL", DefaultCacheTTL); err != nil {
		return c, err
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = -1 // "0" turns the caches off
	}
	if raw := os.Getenv("AGENTPLANE_TOPICS"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.Topics); err != nil {
			return c, fmt.Errorf("AGENTPLANE_TOPICS: %w", err)
		}
	}
	if raw := os.Getenv("AGENTPLANE_STATE_MACHINES"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &c.StateMachines); err != nil {
			return c, fmt.Errorf("AGENTPLANE_STATE_MACHINES: %w", err)
		}
	}
	if c.RateLimits, err = ratelimits.ConfigFromEnv(os.Getenv, c.Mode == ModeAWS); err != nil {
		return c, err
	}
	return c, c.Check()
}

// Check validates a configuration and fills derived defaults.
func (c *Config) Check() error {
	switch c.Mode {
	case ModeLocal:
		if c.DataDir == "" {
			return fmt.Errorf("AGENTPLANE_DATA_DIR must not be empty")
		}
		abs, err := filepath.Abs(c.DataDir)
		if err != nil {
			return err
		}
		c.DataDir = abs
		if _, _, err := net.SplitHostPort(c.Addr); err != nil {
			return fmt.Errorf("AGENTPLANE_ADDR %q: %w", c.Addr, err)
		}
		if c.BaseURL == "" {
			c.BaseURL = "http://" + c.Addr
		}
	case ModeAWS:
		c.AllowLocalRepos = false
		for name, v := range map[string]string{"AGENTPLANE_TABLE": c.Table, "AGENTPLANE_BUCKET": c.Bucket} {
			if v == "" {
				return fmt.Errorf("%s is required in aws mode", name)
			}
		}
	default:
		return fmt.Errorf("AGENTPLANE_MODE must be local or aws, not %q", c.Mode)
	}
	if c.Region != "us" && c.Region != "eu" {
		return fmt.Errorf("AGENTPLANE_REGION_NAME must be us or eu, not %q", c.Region)
	}
	// One region setting: the rate limits use its column of the table.
	c.RateLimits.Region = ratelimits.Region(c.Region)
	return nil
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envBool(name string, def bool) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false, not %q", name, v)
	}
	return b, nil
}

// DefaultCacheTTL is Config.CacheTTL when AGENTPLANE_CACHE_TTL is unset.
const DefaultCacheTTL = 5 * time.Second

// CacheFor is the effective cache TTL: 0 when the caches are off.
func (c Config) CacheFor() time.Duration {
	switch {
	case c.CacheTTL < 0:
		return 0
	case c.CacheTTL == 0:
		return DefaultCacheTTL
	}
	return c.CacheTTL
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s must be a duration such as 5s (0 turns the caches off), not %q", name, v)
	}
	return d, nil
}
