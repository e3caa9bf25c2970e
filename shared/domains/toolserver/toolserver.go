// Package toolserver is the interface's tool server: an MCP server whose 15
// tools let MCP clients read conversation history, prompts, runs and
// traces, datasets, examples, experiments and billing usage.
//
// It is a client of the platform API, never a reader of the store: every
// tool call goes over HTTP to the caller's SERVICE-ENDPOINT (default: the
// installation's own API) with the caller's SERVICE-API-KEY, in the
// LangSmith REST shapes, so it serves any compatible installation.
// Credentials are read per request (headers over HTTP, the environment
// over stdio) and never kept in process state.
//
// Forms: Handler serves streamable HTTP at /mcp (stateless, JSON
// responses: any request may land on any process) and GET /health;
// ServeStdio serves one client over stdin/stdout.
package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/netguard"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of Options.
const (
	DefaultCallTimeout      = 25 * time.Second
	DefaultMaxResponseBytes = 32 << 20
	// MaxRequestBytes bounds an MCP request body (tool arguments are small).
	MaxRequestBytes = 1 << 20
)

// Options configure a Service.
type Options struct {
	// DefaultEndpoint is the platform API base URL used when a caller
	// names none (the interface's {api_url}); required. It is the
	// operator's choice and is called without the address guard.
	DefaultEndpoint string
	// DefaultTransport, when set, carries the calls to DefaultEndpoint
	// (the local all-in-one server passes its own handler as an
	// in-process RoundTripper); nil uses the network.
	DefaultTransport http.RoundTripper
	// AllowLocalEndpoints lets callers name loopback, private, link-local
	// and plain-http endpoints (the local forms). When false (hosted),
	// such endpoints are refused, statically and again at connect time.
	AllowLocalEndpoints bool
	// AllowedEndpoints, when not empty, are the only endpoints callers may
	// name besides DefaultEndpoint (the hosted tool server serves the
	// hosted platform's regions only).
	AllowedEndpoints []string
	// CallTimeout bounds one tool call with all its platform calls
	// (default 25 s, under API Gateway's 29 s).
	CallTimeout time.Duration
	// MaxResponseBytes bounds each platform response (default 32 MiB).
	MaxResponseBytes int64
	// Resolver resolves endpoint host names for the guarded transport
	// (nil: the system resolver).
	Resolver netguard.Resolver
	// DisableLocalhostProtection turns off the SDK's DNS-rebinding check
	// (a request arriving on a loopback address with a non-loopback Host
	// is 403): set it only behind a reverse proxy on the same host.
	DisableLocalhostProtection bool
	// Logger receives tool failures (never credentials); nil discards.
	Logger *slog.Logger
	// Version is the server version reported to clients (default "1.0.0").
	Version string
}

// Service is the tool server. It holds configuration and transports only:
// no credentials, no per-caller state.
type Service struct {
	opts            Options
	defaultEndpoint string
	allowed         map[string]bool
	allowedList     []string
	plain           http.RoundTripper
	guarded         http.RoundTripper
	inProcess       http.RoundTripper
	log             *slog.Logger
	httpServer      *mcp.Server
	mcpHandler      http.Handler
}

// New builds the service.
func New(o Options) (*Service, error) {
	if o.DefaultEndpoint == "" {
		return nil, errors.New("toolserver: DefaultEndpoint is required")
	}
	_, def, err := normalizeEndpoint(o.DefaultEndpoint)
	if err != nil {
		return nil, fmt.Errorf("toolserver: DefaultEndpoint: %w", err)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Version == "" {
		o.Version = "1.0.0"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: o, defaultEndpoint: def, allowed: map[string]bool{}, log: log}
	for _, a := range o.AllowedEndpoints {
		_, n, err := normalizeEndpoint(a)
		if err != nil {
			return nil, fmt.Errorf("toolserver: AllowedEndpoints: %w", err)
		}
		s.allowed[n] = true
		s.allowedList = append(s.allowedList, n)
	}
	plain := http.DefaultTransport.(*http.Transport).Clone()
	plain.ResponseHeaderTimeout = o.CallTimeout
	s.plain = netguard.LimitBody(plain, o.MaxResponseBytes)
	s.guarded = netguard.NewTransport(netguard.TransportOptions{
		MaxResponseBytes:      o.MaxResponseBytes,
		ResponseHeaderTimeout: o.CallTimeout,
		Resolver:              o.Resolver,
	})
	if o.DefaultTransport != nil {
		s.inProcess = netguard.LimitBody(o.DefaultTransport, o.MaxResponseBytes)
	}
	s.httpServer = s.newMCPServer(func(req *mcp.CallToolRequest) Credentials {
		if req.Extra == nil {
			return Credentials{}
		}
		return FromHeader(req.Extra.Header)
	})
	s.mcpHandler = mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return s.httpServer },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: MaxRequestBytes,
			DisableLocalhostProtection: o.DisableLocalhostProtection},
	)
	return s, nil
}

// Routes are the tool server's HTTP routes: one Lambda function ("mcp")
// in AWS, and its own port in the local all-in-one server. /mcp verifies
// its own credential (SERVICE-API-KEY, passed through to the platform), so
// the edge authenticates nothing here.
var Routes = api.Group[*Service]{
	Name:        "mcp",
	Description: "The tool server: MCP over streamable HTTP (stateless, JSON responses) and its health check.",
	Routes: []api.Route[*Service]{
		{Method: http.MethodPost, Path: "/mcp", Summary: "MCP streamable HTTP endpoint (stateless); needs SERVICE-API-KEY", Auth: api.Own, Handle: (*Service).serveMCP},
		{Method: http.MethodOptions, Path: "/mcp", Summary: "CORS preflight of the MCP endpoint", Auth: api.Public, Status: http.StatusNoContent, Handle: (*Service).preflight},
		{Method: http.MethodGet, Path: "/health", Summary: "Health check, no authentication", Auth: api.Public, Handle: (*Service).health},
	},
}

// Handler serves Routes: POST /mcp, OPTIONS /mcp and GET /health (other
// methods on /mcp answer 405 in the interface's JSON shape).
func (s *Service) Handler() http.Handler {
	mux := web.NewMux()
	api.Mount(mux, Routes, s, api.Edge{})
	return mux
}

// corsHeaders let browser-based MCP clients call /mcp; credentials travel
// in headers, never cookies, so any origin may call.
func corsHeaders(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version")
}

func (s *Service) serveMCP(w http.ResponseWriter, r *http.Request) error {
	corsHeaders(w.Header())
	if FromHeader(r.Header).APIKey == "" {
		return web.Unauthorized("Missing " + HeaderAPIKey + " header")
	}
	s.mcpHandler.ServeHTTP(w, r)
	return nil
}

func (s *Service) preflight(w http.ResponseWriter, r *http.Request) error {
	corsHeaders(w.Header())
	w.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	w.Header().Set("Access-Control-Allow-Headers", strings.Join([]string{
		"Content-Type", "Accept", "Authorization", "MCP-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name",
		"Last-Event-ID", HeaderAPIKey, HeaderWorkspaceID, HeaderEndpoint,
	}, ", "))
	w.Header().Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) health(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "Tool server is running")
	return nil
}

// ServeStdio serves one MCP client over in and out (newline-delimited
// JSON-RPC) until the client closes in or ctx ends. Credentials come from
// getenv (os.Getenv): SERVICE_API_KEY (required for every tool but the
// documentation ones), SERVICE_WORKSPACE_ID, SERVICE_ENDPOINT; they are
// read at each call.
func (s *Service) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, getenv func(string) string) error {
	srv := s.newMCPServer(func(*mcp.CallToolRequest) Credentials { return FromEnv(getenv) })
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

const instructions = `Tools over the platform API: conversation threads, runs and traces, projects, prompts, datasets, examples, experiments and billing usage.
get_thread_history and fetch_runs with trace_id are paginated by characters: call with page_number 1, then 2, 3, ... up to total_pages.
Boolean parameters are the strings "true" and "false"; list parameters take a JSON array string or a single value.`

func (s *Service) newMCPServer(creds func(*mcp.CallToolRequest) Credentials) *mcp.Server {
	srv := mcp.NewServer(
		&mcp.Implementation{Name: "agentplane-tool-server", Title: "agentplane tool server", Version: s.opts.Version},
		&mcp.ServerOptions{
			Instructions: instructions,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		},
	)
	srv.AddReceivingMiddleware(s.guardCalls)
	s.registerTools(srv, creds)
	return srv
}

// guardCalls protects the process from inputs the SDK does not survive:
// a tools/call with "arguments": null reaches the schema's default
// application as a nil map and panics in go-sdk v1.8.0, so missing or null
// arguments become {}; and any panic below becomes a JSON-RPC internal
// error instead of ending the process (a handler goroutine has no other
// recovery).
func (s *Service) guardCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			if a := bytes.TrimSpace(call.Params.Arguments); len(a) == 0 || bytes.Equal(a, []byte("null")) {
				call.Params.Arguments = json.RawMessage("{}")
			}
		}
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("tool server: a request handler panicked", slog.String("method", method), slog.Any("panic", p))
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			}
		}()
		return next(ctx, method, req)
	}
}
