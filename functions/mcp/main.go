// Command mcp is the Lambda function of the tool server (the "mcp" group,
// shared/compose/mcpgroup) behind its own API: it serves POST /mcp
// (stateless streamable HTTP) and GET /health, calling the platform API
// named by AGENTPLANE_MCP_ENDPOINT. It opens no store.
package main

import (
	"log"
	"log/slog"
	"os"

	"github.com/agentplane/agentplane/shared/compose/mcpgroup"
	"github.com/agentplane/agentplane/shared/kernel/lambdaproxy"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	svc, err := mcpgroup.FromEnv(os.Getenv, logger)
	if err != nil {
		log.Fatalf("mcp: %v", err)
	}
	lambdaproxy.Start(web.Chain(svc.Handler(), web.Observe(logger)))
}
