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

	"github.com/agentplane/agentplane/shared/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "agentplane:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := server.ConfigFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, err := server.New(ctx, cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		app.Close()
		return err
	}
	return server.Serve(ctx, app, ln, os.Stdout)
}
