package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout bounds how long in-flight requests may take to finish
// after a stop signal.
var ShutdownTimeout = 30 * time.Second

// Serve runs the local all-in-one server on ln until ctx ends: it
// bootstraps the store (printing a generated admin key once to out), serves
// every route group, runs the background work, and on cancellation lets
// in-flight requests finish, stops the background work and closes the App.
func Serve(ctx context.Context, app *App, ln net.Listener, out io.Writer) error {
	b, err := app.Bootstrap(ctx)
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
		Handler:           app.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(app.log.Handler(), slog.LevelWarn),
	}
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		_ = app.RunBackground(bgCtx)
	}()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(out, "agentplane: listening on http://%s\n", ln.Addr())
	app.log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("mode", string(app.cfg.Mode)))

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
	if err := app.Close(); err != nil {
		result = errors.Join(result, fmt.Errorf("close: %w", err))
	}
	app.log.Info("stopped")
	return result
}
