// Package mcpgroup composes the tool server (the "mcp" group): the MCP
// endpoint and its health check, at an address of their own. The tool
// server is a client of the platform API: it opens no store.
package mcpgroup

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration of the tool server's function. Its routes are
// served at the tool server's own address ({mcp_url}), not on the
// platform API.
var Group = compose.Group{
	Name:        toolserver.Routes.Name,
	Description: "the MCP tool server: conversation history, prompts, runs and traces, datasets, experiments and billing usage over the platform API",
	Routes:      toolserver.Routes.Specs(),
	Host:        "mcp",
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: p.Config.BaseURL,
			AllowLocalEndpoints: p.Config.Mode == compose.ModeLocal, Logger: p.Log})
		if err != nil {
			return nil, err
		}
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, toolserver.Routes, svc, e) }}, nil
	},
}

// Local is the tool server of the all-in-one server: its default endpoint
// is this installation (reached in process through platform, the
// platform API's handler), and callers may name local endpoints.
func Local(baseURL string, platform http.Handler, log *slog.Logger) (*toolserver.Service, error) {
	return toolserver.New(toolserver.Options{
		DefaultEndpoint:     baseURL,
		DefaultTransport:    inProcess{platform},
		AllowLocalEndpoints: true,
		Logger:              log,
	})
}

// inProcess is an http.RoundTripper that serves requests with a handler,
// without a socket.
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := newRecorder()
	t.h.ServeHTTP(rec, req.Clone(req.Context()))
	return rec.response(req), nil
}

// FromEnv is the hosted tool server's configuration (the Lambda function):
// AGENTPLANE_MCP_ENDPOINT (default AGENTPLANE_BASE_URL) is the platform API
// the tools call when a caller names none; AGENTPLANE_MCP_ALLOWED_ENDPOINTS
// (comma-separated) are the other platform APIs callers may name (the
// other region); loopback and private endpoints are always refused.
func FromEnv(getenv func(string) string, log *slog.Logger) (*toolserver.Service, error) {
	endpoint := getenv("AGENTPLANE_MCP_ENDPOINT")
	if endpoint == "" {
		endpoint = getenv("AGENTPLANE_BASE_URL")
	}
	if endpoint == "" {
		return nil, fmt.Errorf("AGENTPLANE_MCP_ENDPOINT (or AGENTPLANE_BASE_URL) is required")
	}
	var allowed []string
	for _, a := range strings.Split(getenv("AGENTPLANE_MCP_ALLOWED_ENDPOINTS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			allowed = append(allowed, a)
		}
	}
	return toolserver.New(toolserver.Options{DefaultEndpoint: endpoint, AllowedEndpoints: allowed, Logger: log})
}
