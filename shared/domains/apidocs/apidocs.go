// Package apidocs serves the interface description: the OpenAPI 3.1
// document of every route (generated from the route declarations by
// shared/kernel/openapi; a test in shared/compose/catalog fails when the
// committed document drifts from them) and a readable page of it.
package apidocs

import (
	_ "embed"
	"net/http"

	"github.com/agentplane/agentplane/shared/kernel/api"
)

// Document is the OpenAPI document (openapi.json, generated).
//
//go:embed openapi.json
var Document []byte

//go:embed docs.html
var page []byte

// Handler serves the document and its page.
type Handler struct{}

// Routes are the description's routes (served by the platform group).
var Routes = api.Group[Handler]{
	Name:        "platform",
	Description: "the interface description",
	Routes: []api.Route[Handler]{
		{Method: "GET", Path: "/openapi.json", Summary: "The OpenAPI 3.1 document of every route", Auth: api.Public, Result: map[string]any{}, Handle: Handler.document},
		{Method: "GET", Path: "/docs", Summary: "A readable page of the OpenAPI document", Auth: api.Public, Handle: Handler.docs},
	},
}

func (Handler) document(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(Document)
	return nil
}

func (Handler) docs(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page runs only its own inline script and loads only the document.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	_, _ = w.Write(page)
	return nil
}
