package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// MCPServer is the tool server as `agentplane mcp` runs it: an HTTP handler
// (streamable HTTP at /mcp, /health) and the stdio transport.
// *toolserver.Service (shared/domains/toolserver) has both methods.
type MCPServer interface {
	Handler() http.Handler
	ServeStdio(ctx context.Context, in io.Reader, out io.Writer, getenv func(string) string) error
}

// ToolServerOptions is what the command line decides for the tool server.
type ToolServerOptions struct {
	// Endpoint is the platform API the tool server calls when a caller
	// names none (--endpoint, else SERVICE_ENDPOINT, else --url /
	// AGENTPLANE_URL, else the local server).
	Endpoint string
	// AllowLocalEndpoints lets callers name loopback and private
	// endpoints: true for --stdio (the caller is the local user), false
	// for HTTP unless --allow-local-endpoints.
	AllowLocalEndpoints bool
	// Version is the binary's version, reported to MCP clients.
	Version string
	// Logger writes JSON lines to stderr (never to stdout, which carries
	// the stdio protocol).
	Logger *slog.Logger
}

// ToolServerFactory builds the tool server; cmd/agentplane wires it.
type ToolServerFactory func(ToolServerOptions) (MCPServer, error)

// errNoToolServer is the answer of a build without a tool server.
var errNoToolServer = errors.New("the MCP tool server is not available in this build of agentplane")

// mcpShutdownTimeout bounds how long in-flight MCP calls may finish.
const mcpShutdownTimeout = 30 * time.Second

func (a *app) mcpCommand() *cobra.Command {
	var stdio, allowLocal bool
	var addr, endpoint string
	c := leaf("mcp", "Run the MCP tool server (streamable HTTP, or --stdio for desktop clients)", cobra.NoArgs, nil)
	c.Long = `Run the MCP tool server: MCP clients read threads, prompts, runs, datasets,
experiments and billing usage through it, over the platform's HTTP API.

With --stdio it speaks MCP on stdin/stdout (for desktop MCP clients) and reads
the caller's credentials from SERVICE_API_KEY, SERVICE_WORKSPACE_ID and
SERVICE_ENDPOINT. Without it, it serves streamable HTTP at /mcp (and /health)
on --addr; each request carries its credentials in SERVICE-API-KEY,
SERVICE-WORKSPACE-ID and SERVICE-ENDPOINT headers.

The platform a caller names no endpoint for is --endpoint, else SERVICE_ENDPOINT,
else --url / AGENTPLANE_URL, else http://127.0.0.1:8000.

--addr defaults to AGENTPLANE_MCP_ADDR, else 127.0.0.1:8000 (this machine only).
A container binds every interface: AGENTPLANE_MCP_ADDR=0.0.0.0:8000 or
'agentplane mcp --addr 0.0.0.0:8000'.`
	c.Example = `  agentplane mcp --stdio
  agentplane mcp --addr 0.0.0.0:8000 --endpoint https://api.example.com`
	c.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		if stdio && cmd.Flags().Changed("addr") {
			return usageErrorf("--stdio and --addr exclude each other")
		}
		if a.opts.ToolServer == nil {
			return errNoToolServer
		}
		if endpoint == "" {
			// SERVICE_ENDPOINT names the platform in every form (the
			// container's documented setting), before the CLI's own URL.
			endpoint = a.setting("", toolEndpointEnv)
		}
		if endpoint == "" {
			u, err := a.baseURL()
			if err != nil {
				return err
			}
			endpoint = u.String()
		}
		if addr == "" {
			addr = a.setting("", "AGENTPLANE_MCP_ADDR")
		}
		if addr == "" {
			addr = "127.0.0.1:8000"
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return usageErrorf("--addr %q: %v", addr, err)
		}
		log := slog.New(slog.NewJSONHandler(a.env.Stderr, &slog.HandlerOptions{Level: a.logLevel()}))
		srv, err := a.opts.ToolServer(ToolServerOptions{
			Endpoint: endpoint, AllowLocalEndpoints: stdio || allowLocal,
			Version: a.buildInfo().Version, Logger: log,
		})
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		if stdio {
			return srv.ServeStdio(ctx, a.env.Stdin, a.env.Stdout, a.env.Getenv)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		return a.serveMCP(ctx, srv.Handler(), ln, log)
	})
	f := c.Flags()
	f.BoolVar(&stdio, "stdio", false, "speak MCP on stdin/stdout instead of HTTP")
	f.StringVar(&addr, "addr", "", "HTTP listen address (env AGENTPLANE_MCP_ADDR; default 127.0.0.1:8000; a container uses 0.0.0.0:8000)")
	f.StringVar(&endpoint, "endpoint", "", "platform API URL used when a caller names none (default: SERVICE_ENDPOINT, --url, AGENTPLANE_URL or http://127.0.0.1:8000)")
	f.BoolVar(&allowLocal, "allow-local-endpoints", false, "HTTP form: let callers name loopback and private SERVICE-ENDPOINTs (always on with --stdio)")
	return c
}

func (a *app) logLevel() slog.Level {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(a.env.Getenv("AGENTPLANE_LOG_LEVEL"))); err != nil {
		return slog.LevelInfo
	}
	return lvl
}

// serveMCP serves h on ln until ctx ends, then lets in-flight calls finish.
func (a *app) serveMCP(ctx context.Context, h http.Handler, ln net.Listener, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(a.env.Stdout, "agentplane: MCP tool server listening on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), mcpShutdownTimeout)
	defer cancel()
	return srv.Shutdown(sctx)
}

// toolEndpointEnv is the tool server's platform setting
// (toolserver.EnvEndpoint; the CLI does not import the domain).
const toolEndpointEnv = "SERVICE_ENDPOINT"
