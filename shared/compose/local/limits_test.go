package local_test

import (
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose/local"
)

func TestLimitsFromEnv(t *testing.T) {
	l, err := local.LimitsFromEnv()
	if err != nil || l != local.DefaultLimits() {
		t.Fatalf("no variables: %+v %v", l, err)
	}
	t.Setenv("AGENTPLANE_HEADER_TIMEOUT", "3s")
	t.Setenv("AGENTPLANE_BODY_IDLE_TIMEOUT", "0")
	t.Setenv("AGENTPLANE_BODY_MIN_RATE", "4096")
	t.Setenv("AGENTPLANE_IDLE_TIMEOUT", "1m")
	t.Setenv("AGENTPLANE_MAX_CONNS_PER_CLIENT", "16")
	t.Setenv("AGENTPLANE_MAX_HEADER_BYTES", "65536")
	l, err = local.LimitsFromEnv()
	want := local.Limits{HeaderTimeout: 3 * time.Second, BodyIdleTimeout: 0, BodyMinRate: 4096,
		IdleTimeout: time.Minute, MaxConnsPerClient: 16, MaxHeaderBytes: 65536}
	if err != nil || l != want {
		t.Fatalf("set: %+v %v", l, err)
	}
	for name, bad := range map[string]string{
		"AGENTPLANE_HEADER_TIMEOUT":       "0",
		"AGENTPLANE_BODY_IDLE_TIMEOUT":    "-1s",
		"AGENTPLANE_IDLE_TIMEOUT":         "soon",
		"AGENTPLANE_BODY_MIN_RATE":        "-5",
		"AGENTPLANE_MAX_CONNS_PER_CLIENT": "many",
		"AGENTPLANE_MAX_HEADER_BYTES":     "100",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			if _, err := local.LimitsFromEnv(); err == nil {
				t.Fatalf("%s=%s accepted", name, bad)
			}
		})
	}
	t.Setenv("AGENTPLANE_MAX_HEADER_BYTES", "999999999")
	if _, err := local.LimitsFromEnv(); err == nil {
		t.Fatal("a 1 GB header limit accepted")
	}
}
