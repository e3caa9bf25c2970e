package e2e

import (
	"os"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	s := start(t)
	runNode(t, time.Minute, os.Getenv("PROBE"), "AGENTPLANE_URL="+s.API, "AGENTPLANE_API_KEY="+adminKey, "MCP_URL="+s.MCP)
}
