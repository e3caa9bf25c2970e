package billinggroup_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/billinggroup"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/aws/aws-sdk-go-v2/aws"
)

func platform(t *testing.T, region string, mutate func(*compose.Config)) *compose.Platform {
	t.Helper()
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: region, LogLevel: "error"}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := compose.Open(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func linked(c *compose.Config) {
	c.Regions.PeerURL = "http://127.0.0.1:1"
	c.Regions.LinkToken = strings.Repeat("l", 32)
}

func TestHome(t *testing.T) {
	// The US records itself; so does a self-hosted installation.
	for _, p := range []*compose.Platform{
		platform(t, "us", linked),
		platform(t, "eu", func(c *compose.Config) { c.SelfHosted = true }),
	} {
		if h, err := billinggroup.Home(p); err != nil || h != nil {
			t.Errorf("%s: %v %v", p.Config.Region, h, err)
		}
		m, err := billinggroup.Group.Build(context.Background(), p)
		if err != nil || m.Consumers["billing.usage"] == nil {
			t.Errorf("build: %v", err)
		}
	}
	// The EU forwards to the US, which it must be able to reach.
	if h, err := billinggroup.Home(platform(t, "eu", linked)); err != nil || h == nil {
		t.Errorf("linked EU: %v %v", h, err)
	}
	_, err := billinggroup.Group.Build(context.Background(), platform(t, "eu", nil))
	if err == nil || !strings.Contains(err.Error(), regions.EnvPeerURL) {
		t.Errorf("unlinked EU: %v", err)
	}
	// In AWS the events go to the US billing queue, which must be named.
	p := platform(t, "eu", linked)
	p.Config.Mode = compose.ModeAWS
	if _, err := billinggroup.Home(p); err == nil || !strings.Contains(err.Error(), "AGENTPLANE_BILLING_QUEUE_URL") {
		t.Errorf("AWS EU without the queue: %v", err)
	}
	p.Config.BillingQueueURL, p.Config.BillingQueueRegion = "https://sqs.us-east-1.amazonaws.com/123/billing", "us-east-1"
	p.AWS = &aws.Config{Region: "eu-west-1"}
	if h, err := billinggroup.Home(p); err != nil || h == nil {
		t.Errorf("AWS EU: %v %v", h, err)
	}
}
