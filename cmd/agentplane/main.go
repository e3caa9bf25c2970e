// Command agentplane is the local all-in-one server: every route group on
// one port, over the embedded store. Configuration is read from AGENTPLANE_*
// environment variables (see README).
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentplane:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := compose.ConfigFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := local.New(ctx, cfg, nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		app.Close()
		return err
	}
	return local.Serve(ctx, app, ln, os.Stdout)
}
