package toolserver

import (
	"errors"
	"net/http"
	"strings"
)

// Header names of the HTTP form (the interface's "Hosted (headers)").
const (
	HeaderAPIKey      = "SERVICE-API-KEY"
	HeaderWorkspaceID = "SERVICE-WORKSPACE-ID"
	HeaderEndpoint    = "SERVICE-ENDPOINT"
)

// Environment variables of the stdio form (the interface's "Local").
const (
	EnvAPIKey      = "SERVICE_API_KEY"
	EnvWorkspaceID = "SERVICE_WORKSPACE_ID"
	EnvEndpoint    = "SERVICE_ENDPOINT"
)

// Credentials are one caller's: read from each request's headers (HTTP) or
// from the stdio process's environment, used for the calls of that one
// request, and never stored.
type Credentials struct {
	// APIKey is the platform API key, sent upstream as X-API-Key.
	APIKey string
	// WorkspaceID selects the workspace (X-Tenant-Id upstream); optional.
	WorkspaceID string
	// Endpoint is the platform API base URL; empty means the server's
	// default endpoint.
	Endpoint string
}

// errMissingKey is the tool error of a stdio call without SERVICE_API_KEY
// (the HTTP form answers 401 before any tool runs).
//
//lint:ignore ST1005 the original server's message (two sentences), kept for clients that match it
var errMissingKey = errors.New("API key not found. For HTTP transport, provide the " + HeaderAPIKey +
	" header. For stdio transport, set the " + EnvAPIKey + " environment variable.")

// FromHeader reads the HTTP form's credentials.
func FromHeader(h http.Header) Credentials {
	return Credentials{
		APIKey:      strings.TrimSpace(h.Get(HeaderAPIKey)),
		WorkspaceID: strings.TrimSpace(h.Get(HeaderWorkspaceID)),
		Endpoint:    strings.TrimSpace(h.Get(HeaderEndpoint)),
	}
}

// FromEnv reads the stdio form's credentials through getenv (os.Getenv).
func FromEnv(getenv func(string) string) Credentials {
	if getenv == nil {
		return Credentials{}
	}
	return Credentials{
		APIKey:      strings.TrimSpace(getenv(EnvAPIKey)),
		WorkspaceID: strings.TrimSpace(getenv(EnvWorkspaceID)),
		Endpoint:    strings.TrimSpace(getenv(EnvEndpoint)),
	}
}
