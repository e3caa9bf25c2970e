package compose

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
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
	// MCPAddr is where the local server also serves the tool server
	// (/mcp, /health): AGENTPLANE_MCP_ADDR, default 127.0.0.1:8001 for
	// `agentplane serve`; "off" or empty serves none.
	MCPAddr string
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

	// Regions are the hosted regions: both regions' published addresses
	// (AGENTPLANE_{US,EU}_{APP,API,BEACON}_URL,
	// AGENTPLANE_{US,EU}_{EGRESS,INGRESS}_IPS; the interface's tables by
	// default) and the link to the other region (AGENTPLANE_PEER_URL,
	// AGENTPLANE_REGION_LINK_TOKEN). Its Region is Region. See
	// docs/regions.md.
	Regions regions.Config
	// OperatorTokenHash is the SHA-256 of the platform operator's token,
	// which creates organizations (POST /api/v1/organizations):
	// AGENTPLANE_OPERATOR_TOKEN (hashed at start; at least 32 characters)
	// or AGENTPLANE_OPERATOR_TOKEN_SHA256 (its hex digest, so the token
	// itself need not be in the environment). Empty: sign-up is off.
	OperatorTokenHash []byte
	// BillingQueueURL and BillingQueueRegion (AWS mode, in a region that
	// is not the billing home) are the billing home's billing queue and
	// its AWS region: usage events are forwarded there
	// (AGENTPLANE_BILLING_QUEUE_URL, AGENTPLANE_BILLING_QUEUE_REGION).
	BillingQueueURL    string
	BillingQueueRegion string

	// CacheTTL bounds how long a process serves an authenticated API key
	// or a deployment's thread target from memory
	// (AGENTPLANE_CACHE_TTL, a Go duration, default 5s; 0 there turns
	// the caches off). Zero here means DefaultCacheTTL and a negative
	// value off: read it with CacheFor. In one process a revoked key or a
	// changed deployment is dropped from the caches at once; other
	// processes (Lambdas) see it within this time.
	CacheTTL time.Duration

	// StoreCacheMB is the size in MiB of the local store's read cache of
	// records (AGENTPLANE_STORE_CACHE_MB, default 32; 0 there turns it
	// off). Zero here means the default and a negative value off. The
	// cache is exact: a write drops what it holds before committing.
	StoreCacheMB int

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
		MCPAddr:         env("AGENTPLANE_MCP_ADDR", "127.0.0.1:8001"),
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
	if c.StoreCacheMB, err = envMiB("AGENTPLANE_STORE_CACHE_MB", DefaultStoreCacheMB); err != nil {
		return c, err
	}
	if c.StoreCacheMB == 0 {
		c.StoreCacheMB = -1 // "0" turns the cache off
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
	if c.Regions, err = regions.ConfigFromEnv(os.Getenv, regions.Name(c.Region)); err != nil {
		return c, err
	}
	if c.OperatorTokenHash, err = operatorTokenHash(os.Getenv("AGENTPLANE_OPERATOR_TOKEN"), os.Getenv("AGENTPLANE_OPERATOR_TOKEN_SHA256")); err != nil {
		return c, err
	}
	c.BillingQueueURL = os.Getenv("AGENTPLANE_BILLING_QUEUE_URL")
	c.BillingQueueRegion = os.Getenv("AGENTPLANE_BILLING_QUEUE_REGION")
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
		if c.Table == "" {
			return fmt.Errorf("AGENTPLANE_TABLE is required in aws mode")
		}
	default:
		return fmt.Errorf("AGENTPLANE_MODE must be local or aws, not %q", c.Mode)
	}
	if c.Region != "us" && c.Region != "eu" {
		return fmt.Errorf("AGENTPLANE_REGION_NAME must be us or eu, not %q", c.Region)
	}
	// One region setting: the rate limits use its column of the table,
	// the regions their addresses and link.
	c.RateLimits.Region = ratelimits.Region(c.Region)
	c.Regions.Region = regions.Name(c.Region)
	if err := c.Regions.Check(c.BaseURL, c.Mode == ModeLocal); err != nil {
		return err
	}
	if c.OperatorTokenHash != nil && len(c.OperatorTokenHash) != sha256.Size {
		return fmt.Errorf("the operator token hash must be %d bytes", sha256.Size)
	}
	return nil
}

// MinOperatorTokenLen is the shortest accepted operator token.
const MinOperatorTokenLen = 32

// operatorTokenHash reads the operator token (raw, or its hex SHA-256):
// only the digest is kept.
func operatorTokenHash(raw, hexDigest string) ([]byte, error) {
	switch {
	case raw != "" && hexDigest != "":
		return nil, fmt.Errorf("set AGENTPLANE_OPERATOR_TOKEN or AGENTPLANE_OPERATOR_TOKEN_SHA256, not both")
	case raw != "":
		if len(raw) < MinOperatorTokenLen {
			return nil, fmt.Errorf("AGENTPLANE_OPERATOR_TOKEN must be at least %d characters", MinOperatorTokenLen)
		}
		h := sha256.Sum256([]byte(raw))
		return h[:], nil
	case hexDigest != "":
		h, err := hex.DecodeString(strings.TrimSpace(hexDigest))
		if err != nil || len(h) != sha256.Size {
			return nil, fmt.Errorf("AGENTPLANE_OPERATOR_TOKEN_SHA256 must be the 64 hex digits of a SHA-256")
		}
		return h, nil
	}
	return nil, nil
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

// DefaultStoreCacheMB is Config.StoreCacheMB when
// AGENTPLANE_STORE_CACHE_MB is unset.
const DefaultStoreCacheMB = boltstore.DefaultCacheBytes >> 20

func envMiB(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("%s must be a whole number of MiB from 0 (off) to %d, not %q", name, 1<<20, v)
	}
	return n, nil
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
