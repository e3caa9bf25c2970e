// Package local is the all-in-one server: every route group of the catalog
// in one process over the embedded store, with the in-process queue and
// workflow runner.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
)

// New opens the platform of cfg and builds every group.
func New(ctx context.Context, cfg compose.Config, log *slog.Logger) (*compose.Process, error) {
	p, err := compose.Open(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	pr, err := compose.Build(ctx, p, catalog.Groups()...)
	if err != nil {
		p.Close()
		return nil, err
	}
	return pr, nil
}

// ShutdownTimeout bounds how long in-flight requests may take to finish
// after a stop signal.
var ShutdownTimeout = 30 * time.Second

// Serve runs the server on ln until ctx ends: it bootstraps the store
// (printing a generated admin key once to out), serves every route, runs
// the background work, and on cancellation lets in-flight requests finish,
// stops the background work and closes the process.
func Serve(ctx context.Context, pr *compose.Process, ln net.Listener, out io.Writer) error {
	log := pr.P.Log
	b, err := pr.P.Identity.Bootstrap(ctx, pr.P.Config.BootstrapAPIKey)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if b.Created {
		fmt.Fprintf(out, "agentplane: created organization %q (%s) and workspace %q (%s)\n",
			b.Organization.DisplayName, b.Organization.ID, b.Workspace.DisplayName, b.Workspace.ID)
		if b.Key != "" {
			// Printed once, to the terminal, never to the log.
			fmt.Fprintf(out, "agentplane: admin API key (shown only now, store it): %s\n", b.Key)
		}
	}
	srv := &http.Server{
		Handler:           pr.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		_ = pr.RunBackground(bgCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(out, "agentplane: listening on http://%s\n", ln.Addr())
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("mode", string(pr.P.Config.Mode)))

	var result error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			result = err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		result = errors.Join(result, fmt.Errorf("shutdown: %w", err))
	}
	stopBG()
	<-bgDone
	if err := pr.Close(); err != nil {
		result = errors.Join(result, fmt.Errorf("close: %w", err))
	}
	log.Info("stopped")
	return result
}
