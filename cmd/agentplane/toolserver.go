package main

import (
	"github.com/agentplane/agentplane/cmd/agentplane/internal/cli"
	"github.com/agentplane/agentplane/shared/domains/toolserver"
)

// toolServer builds the MCP tool server that `agentplane mcp` runs.
var toolServer cli.ToolServerFactory = func(o cli.ToolServerOptions) (cli.MCPServer, error) {
	return toolserver.New(toolserver.Options{DefaultEndpoint: o.Endpoint,
		AllowLocalEndpoints: o.AllowLocalEndpoints, Version: o.Version, Logger: o.Logger})
}
