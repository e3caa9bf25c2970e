package local_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

// With AGENTPLANE_RATE_LIMITS=on the local server applies the hosted
// table: unauthenticated traffic from one address gets the catch-all's
// 100 requests a minute, then 429s with the interface's detail and the
// RateLimit headers. (Each category's limits are tested in
// shared/domains/ratelimits with an injected clock.)
func TestServerAppliesRateLimits(t *testing.T) {
	cfg := compose.Config{Mode: compose.ModeLocal, DataDir: t.TempDir(), Addr: "127.0.0.1:0", Region: "us", LogLevel: "error",
		RateLimits: ratelimits.Config{Enabled: true}}
	pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	srv := httptest.NewServer(pr.Handler())
	defer srv.Close()
	for i := 1; i <= 101; i++ {
		resp, err := http.Get(srv.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("RateLimit-Limit") != "100" {
			t.Fatalf("request %d: RateLimit-Limit %q", i, resp.Header.Get("RateLimit-Limit"))
		}
		if i <= 100 {
			if resp.StatusCode != 200 {
				t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
			}
			continue
		}
		var e struct{ Detail string }
		if resp.StatusCode != 429 || json.Unmarshal(body, &e) != nil || e.Detail == "" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("request %d: %d %s Retry-After %q", i, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
}
