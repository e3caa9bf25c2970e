package main

import "github.com/agentplane/agentplane/cmd/agentplane/internal/cli"

// toolServer builds the MCP tool server that `agentplane mcp` runs. This
// build has no tool server package (shared/domains/toolserver), so it is
// nil and `agentplane mcp` answers that the tool server is not available
// in this build (exit 1). Wiring it is this one assignment: a function
// that returns toolserver.New(toolserver.Options{...}) from the
// cli.ToolServerOptions (*toolserver.Service is a cli.MCPServer).
var toolServer cli.ToolServerFactory
