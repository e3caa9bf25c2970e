// Package local is the all-in-one server: every route group of the catalog
// in one process over the embedded store, with the in-process queue and
// workflow runner.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/compose/mcpgroup"
	"github.com/agentplane/agentplane/shared/kernel/web"
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

// Serve is ServeWith the limits of the environment (LimitsFromEnv).
func Serve(ctx context.Context, pr *compose.Process, ln net.Listener, out io.Writer) error {
	lim, err := LimitsFromEnv()
	if err != nil {
		pr.Close()
		return err
	}
	return ServeWith(ctx, pr, ln, out, lim)
}

// ServeWith runs the server on ln until ctx ends: it bootstraps the store
// (printing a generated admin key once to out), recovers a lost admin key
// when the data directory asks for it (RecoveryFile), serves every route
// within lim, runs the background work, and on cancellation lets in-flight
// requests finish, stops the background work and closes the process.
func ServeWith(ctx context.Context, pr *compose.Process, ln net.Listener, out io.Writer, lim Limits) error {
	log := pr.P.Log
	if err := start(ctx, pr, out); err != nil {
		pr.Close()
		return err
	}
	srv := &http.Server{
		Handler:           web.SlowBodies(lim.bodyTimeouts())(pr.Handler()),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln = web.Listen(ln, web.ListenerOptions{MaxConnsPerClient: lim.MaxConnsPerClient, MaxHeaderBytes: lim.MaxHeaderBytes})
	mcp, err := startToolServer(pr, lim, out)
	if err != nil {
		pr.Close()
		return err
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
	// Start-up (bootstrap, route tables, the OpenAPI document, the tool
	// server's schemas) leaves garbage behind; hand it back to the OS now
	// rather than keep it resident until the heap grows again.
	debug.FreeOSMemory()
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
	if mcp != nil {
		if err := mcp.Shutdown(sctx); err != nil {
			result = errors.Join(result, fmt.Errorf("shutdown of the tool server: %w", err))
		}
	}
	stopBG()
	<-bgDone
	if err := pr.Close(); err != nil {
		result = errors.Join(result, fmt.Errorf("close: %w", err))
	}
	log.Info("stopped")
	return result
}

// startToolServer serves the tool server on its own port (Config.MCPAddr),
// calling this installation's API in process; nil when turned off.
func startToolServer(pr *compose.Process, lim Limits, out io.Writer) (*http.Server, error) {
	addr := pr.P.Config.MCPAddr
	if addr == "" || addr == "off" {
		return nil, nil
	}
	svc, err := mcpgroup.Local(pr.P.Config.BaseURL, pr.Handler(), pr.P.Log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("tool server: %w", err)
	}
	ln = web.Listen(ln, web.ListenerOptions{MaxConnsPerClient: lim.MaxConnsPerClient, MaxHeaderBytes: lim.MaxHeaderBytes})
	srv := &http.Server{
		Handler:           web.SlowBodies(lim.bodyTimeouts())(compose.Middleware(svc.Handler(), pr.P.Log)),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(pr.P.Log.Handler(), slog.LevelWarn),
	}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(out, "agentplane: tool server (MCP) on http://%s/mcp\n", ln.Addr())
	return srv, nil
}

// start bootstraps the store and runs a requested key recovery.
func start(ctx context.Context, pr *compose.Process, out io.Writer) error {
	cfg := pr.P.Config
	b, err := pr.P.Identity.Bootstrap(ctx, cfg.BootstrapAPIKey)
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
	if b.KeyIgnored {
		pr.P.Log.Warn("AGENTPLANE_BOOTSTRAP_API_KEY is not a key of this store and was not created: the bootstrap key is created only on an empty store, and a revoked key never returns (to recover a lost admin key, see " + RecoveryFile + " in the README)")
	}
	return recoverAdminKey(ctx, pr, out)
}

// RecoveryFile, a file of this name in the data directory, asks the next
// start to create a new organization-admin key: whoever can write into
// the data directory (mode 0700) controls the installation anyway, and no
// one else can. The file is removed before the key is created, so one
// file makes one key; the key is printed once, like the bootstrap key.
const RecoveryFile = "recover-admin-key"

func recoverAdminKey(ctx context.Context, pr *compose.Process, out io.Writer) error {
	if pr.P.Config.Mode != compose.ModeLocal {
		return nil
	}
	path := filepath.Join(pr.P.Config.DataDir, RecoveryFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("admin key recovery: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("admin key recovery: %s is not a regular file; remove it (no key was created)", path)
	}
	// Removed first: if the removal fails no key is made, so a file that
	// stays can never mint a key at every start.
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("admin key recovery: cannot remove %s (no key was created): %w", path, err)
	}
	k, raw, err := pr.P.Identity.RecoverAdminKey(ctx)
	if err != nil {
		return fmt.Errorf("admin key recovery: %w", err)
	}
	fmt.Fprintf(out, "agentplane: recovery: new organization admin API key %s (shown only now, store it): %s\n", k.ID, raw)
	pr.P.Log.Warn("admin key recovery: created a new organization admin key", slog.String("key_id", k.ID))
	return nil
}
