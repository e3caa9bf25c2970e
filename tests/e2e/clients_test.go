package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// The langsmith SDK seeds the server; the MCP TypeScript SDK then reads
// all of it back through the tool server, over streamable HTTP and over
// stdio (the real `agentplane mcp --stdio`).
func TestRealClients(t *testing.T) {
	nodeModules(t)
	s := start(t)
	fixture := filepath.Join(t.TempDir(), "fixture.json")
	if !t.Run("langsmith SDK seeds", func(t *testing.T) {
		runNode(t, 5*time.Minute, "seed.test.mjs", "AGENTPLANE_URL="+s.API, "AGENTPLANE_API_KEY="+adminKey, "FIXTURE_OUT="+fixture)
	}) {
		t.FailNow()
	}
	t.Run("MCP SDK over streamable HTTP", func(t *testing.T) {
		runNode(t, 5*time.Minute, "mcp_http.test.mjs", "MCP_URL="+s.MCP, "API_URL="+s.API, "SERVICE_API_KEY="+adminKey, "FIXTURE_FILE="+fixture)
	})
	t.Run("MCP SDK over stdio (agentplane mcp --stdio)", func(t *testing.T) {
		bin, err := buildAgentplane()
		if err != nil {
			t.Fatal(err)
		}
		runNode(t, 5*time.Minute, "mcp_stdio.test.mjs", "AGENTPLANE_BIN="+bin, "SERVICE_ENDPOINT="+s.API, "SERVICE_API_KEY="+adminKey, "FIXTURE_FILE="+fixture)
	})
	// Everything survives a restart: the same reads over stdio against the
	// server started again on the same data directory.
	s.stop()
	s = startIn(t, s.Dir)
	t.Run("restart, then MCP SDK over stdio again", func(t *testing.T) {
		bin, err := buildAgentplane()
		if err != nil {
			t.Fatal(err)
		}
		runNode(t, 5*time.Minute, "mcp_stdio.test.mjs", "AGENTPLANE_BIN="+bin, "SERVICE_ENDPOINT="+s.API, "SERVICE_API_KEY="+adminKey, "FIXTURE_FILE="+fixture)
	})
	// Last: it adds a trace, which the exact billing checks above do not expect.
	t.Run("documentation tools' REST steps, followed", func(t *testing.T) {
		runNode(t, 2*time.Minute, "mcp_guides.test.mjs", "MCP_URL="+s.MCP, "API_URL="+s.API, "SERVICE_API_KEY="+adminKey, "FIXTURE_FILE="+fixture)
	})
}
