// Command stdioserver serves the tool server over stdin and stdout, the
// way `agentplane mcp --stdio` will: credentials from SERVICE_API_KEY,
// SERVICE_WORKSPACE_ID and SERVICE_ENDPOINT (which is required here; the
// real command defaults it to the platform's API). The client tests start
// it until that command exists.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
)

func main() {
	svc, err := toolserver.New(toolserver.Options{
		DefaultEndpoint:     os.Getenv(toolserver.EnvEndpoint),
		AllowLocalEndpoints: true, // the endpoint is the local user's own setting
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "stdioserver:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := svc.ServeStdio(ctx, os.Stdin, os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "stdioserver:", err)
		os.Exit(1)
	}
}
