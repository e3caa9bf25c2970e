package compose_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/regions"
)

// clearEnv unsets the variables ConfigFromEnv reads for regions, so the
// machine's environment does not leak into a case.
func clearEnv(t *testing.T) {
	for _, k := range []string{"AGENTPLANE_MODE", "AGENTPLANE_REGION_NAME", "AGENTPLANE_BASE_URL", "AGENTPLANE_ADDR",
		"AGENTPLANE_PEER_URL", "AGENTPLANE_REGION_LINK_TOKEN", "AGENTPLANE_OPERATOR_TOKEN", "AGENTPLANE_OPERATOR_TOKEN_SHA256",
		"AGENTPLANE_US_API_URL", "AGENTPLANE_EU_API_URL", "AGENTPLANE_EU_EGRESS_IPS", "AGENTPLANE_SELF_HOSTED",
		"AGENTPLANE_BILLING_QUEUE_URL", "AGENTPLANE_BILLING_QUEUE_REGION", "AGENTPLANE_RATE_LIMITS"} {
		t.Setenv(k, "")
	}
	t.Setenv("AGENTPLANE_DATA_DIR", t.TempDir())
}

func TestRegionConfigFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("AGENTPLANE_REGION_NAME", "eu")
	t.Setenv("AGENTPLANE_ADDR", "127.0.0.1:8100")
	t.Setenv("AGENTPLANE_US_API_URL", "http://127.0.0.1:8000/")
	t.Setenv("AGENTPLANE_REGION_LINK_TOKEN", strings.Repeat("l", 32))
	t.Setenv("AGENTPLANE_OPERATOR_TOKEN", strings.Repeat("o", 32))
	t.Setenv("AGENTPLANE_BILLING_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/1/billing")
	t.Setenv("AGENTPLANE_BILLING_QUEUE_REGION", "us-east-1")
	c, err := compose.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	r := c.Regions
	if r.Region != regions.EU || r.PeerURL != "http://127.0.0.1:8000" || r.Hosted.EU.APIURL != "http://127.0.0.1:8100" || r.Hosted.US.APIURL != "http://127.0.0.1:8000" {
		t.Errorf("regions %+v", r)
	}
	want := sha256.Sum256([]byte(strings.Repeat("o", 32)))
	if string(c.OperatorTokenHash) != string(want[:]) {
		t.Error("operator token hash")
	}
	if c.BillingQueueURL == "" || c.BillingQueueRegion != "us-east-1" {
		t.Error("billing queue")
	}
	// The digest form keeps the token out of the environment.
	t.Setenv("AGENTPLANE_OPERATOR_TOKEN", "")
	t.Setenv("AGENTPLANE_OPERATOR_TOKEN_SHA256", hex.EncodeToString(want[:]))
	if c, err := compose.ConfigFromEnv(); err != nil || string(c.OperatorTokenHash) != string(want[:]) {
		t.Errorf("digest form: %v", err)
	}
}

func TestBadRegionConfig(t *testing.T) {
	cases := map[string]struct {
		vars map[string]string
		want string
	}{
		"region":             {map[string]string{"AGENTPLANE_REGION_NAME": "ap"}, "AGENTPLANE_REGION_NAME"},
		"api url":            {map[string]string{"AGENTPLANE_EU_API_URL": "eu.example.com"}, "AGENTPLANE_EU_API_URL"},
		"egress":             {map[string]string{"AGENTPLANE_EU_EGRESS_IPS": "1.2.3"}, "AGENTPLANE_EU_EGRESS_IPS"},
		"peer without token": {map[string]string{"AGENTPLANE_PEER_URL": "http://127.0.0.1:8100"}, "AGENTPLANE_REGION_LINK_TOKEN"},
		"peer is self":       {map[string]string{"AGENTPLANE_PEER_URL": "http://127.0.0.1:8000", "AGENTPLANE_REGION_LINK_TOKEN": strings.Repeat("l", 32)}, "own API URL"},
		"short operator":     {map[string]string{"AGENTPLANE_OPERATOR_TOKEN": "short"}, "AGENTPLANE_OPERATOR_TOKEN"},
		"both operator":      {map[string]string{"AGENTPLANE_OPERATOR_TOKEN": strings.Repeat("o", 32), "AGENTPLANE_OPERATOR_TOKEN_SHA256": strings.Repeat("0", 64)}, "not both"},
		"bad digest":         {map[string]string{"AGENTPLANE_OPERATOR_TOKEN_SHA256": "xyz"}, "AGENTPLANE_OPERATOR_TOKEN_SHA256"},
		"short digest":       {map[string]string{"AGENTPLANE_OPERATOR_TOKEN_SHA256": strings.Repeat("0", 62)}, "AGENTPLANE_OPERATOR_TOKEN_SHA256"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("AGENTPLANE_ADDR", "127.0.0.1:8000")
			for k, v := range c.vars {
				t.Setenv(k, v)
			}
			if _, err := compose.ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestOpenSetsRegion(t *testing.T) {
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "eu", LogLevel: "error"}
	p, err := compose.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Region == nil || p.Region.Name() != regions.EU || p.Identity.Region() != p.Region || p.Region.Linked() {
		t.Fatalf("region %+v", p.Region)
	}
	b, err := p.Identity.Bootstrap(context.Background(), "")
	if err != nil || b.Organization.Region != "eu" {
		t.Fatalf("bootstrap organization %+v %v", b.Organization, err)
	}
	// Self-hosted installations are region-unaware.
	cfg.DataDir, cfg.SelfHosted = t.TempDir(), true
	sh, err := compose.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	if sh.Region != nil || sh.Identity.Region() != nil {
		t.Error("a self-hosted installation has a hosted region")
	}
	if _, err := sh.QueueIn("us-east-1", "https://sqs.example/q"); err == nil {
		t.Error("QueueIn in local mode")
	}
}
