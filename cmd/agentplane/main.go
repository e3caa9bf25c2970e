// Command agentplane is the platform's command-line tool: the local
// all-in-one server (agentplane serve), the MCP tool server (agentplane
// mcp) and a client of the HTTP API (deploy, deployments, logs, keys,
// threads, ...). The commands live in ./internal/cli; see docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentplane/agentplane/cmd/agentplane/internal/cli"
)

// Set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.commit=$(git rev-parse HEAD)" ./cmd/agentplane
//
// Left empty, the module version (go install ...@vX) and the VCS revision
// recorded by go build are used, else "dev" and "unknown".
var (
	version string
	commit  string
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Env{
		Args:   os.Args[1:],
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
	}, cli.Options{
		Build:      cli.Build{Version: version, Commit: commit},
		ToolServer: toolServer,
	})
	stop()
	os.Exit(code)
}
