// Package api declares HTTP routes once. A domain lists its routes in a
// Group, each with its handler (a method expression on the domain's
// handler type), how it authenticates, the least role it needs, its
// rate-limit category and its body and result types. Everything that needs
// the HTTP surface reads these declarations: the mux of the local server
// and of each Lambda (Mount), the CDK app's API Gateway resources and edge
// rules, the OpenAPI document and the docs (Group.Specs), so none of them
// can drift from the handlers.
package api

import (
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Auth says how a route authenticates its caller.
type Auth int

const (
	// Public routes take no credential.
	Public Auth = iota
	// Key routes take an API key (X-Api-Key or Authorization: Bearer) and
	// act at organization scope; Role is checked against the key's
	// organization role. Routes whose workspace comes from the object they
	// address (a deployment's threads) use Key and narrow it themselves.
	Key
	// Workspace routes take an API key and a workspace: X-Tenant-Id, which
	// may be left out when the key reaches exactly one workspace; Role is
	// checked against the key's role in that workspace.
	Workspace
	// Own routes verify a credential of their own (SCIM bearer tokens,
	// webhook signatures); the edge does not authenticate them.
	Own
)

func (a Auth) String() string {
	switch a {
	case Public:
		return "public"
	case Key:
		return "key"
	case Workspace:
		return "workspace"
	case Own:
		return "own"
	}
	return "unknown"
}

// Param documents one query parameter (for the OpenAPI document).
type Param struct {
	Name        string
	Type        string // "string", "integer", "boolean", "number", "array"
	Description string
	Required    bool
}

// Spec is a route without its handler: what the CDK app, the OpenAPI
// document, the rate limiter and the docs read.
type Spec struct {
	// Group is the route group: one Lambda function in AWS, named like
	// its functions/<group> directory.
	Group   string
	Method  string
	Path    string
	Summary string
	Auth    Auth
	// Role is the least role the caller needs ("" for none beyond a valid
	// credential).
	Role auth.Role
	// Limit is the rate-limit category of the route ("" for the default
	// rows of the caller's identity).
	Limit string
	// Body and Result are zero values of the request body and response
	// types (nil when there is none), for the OpenAPI document.
	Body   any
	Result any
	// Query documents the query parameters.
	Query []Param
	// Status is the success status (200 when zero).
	Status int
}

// Pattern is the ServeMux pattern, "METHOD /path".
func (s Spec) Pattern() string { return s.Method + " " + s.Path }

// SuccessStatus is Status, or 200.
func (s Spec) SuccessStatus() int {
	if s.Status == 0 {
		return http.StatusOK
	}
	return s.Status
}

// Route is a Spec with its handler: a method expression on the domain's
// handler type H, such as (*Handler).create.
type Route[H any] struct {
	Method  string
	Path    string
	Summary string
	Auth    Auth
	Role    auth.Role
	Limit   string
	Body    any
	Result  any
	Query   []Param
	Status  int
	// Unmounted routes are served only at Path, not again under the
	// group's Mounts (a path that already names its own prefix).
	Unmounted bool
	Handle    func(H, http.ResponseWriter, *http.Request) error
}

// Group is the routes one Lambda function serves.
type Group[H any] struct {
	// Name is the group's name: its functions/ directory and CDK id stem.
	Name        string
	Description string
	// Mounts are extra path prefixes every route is also served under
	// (the tracing API at "/" and again under "/api/v1").
	Mounts []string
	Routes []Route[H]
}

// Info is a group without handlers.
type Info struct {
	Name        string
	Description string
	Specs       []Spec
}

// Info returns the group's declarations, one Spec per route and mount.
func (g Group[H]) Info() Info {
	return Info{Name: g.Name, Description: g.Description, Specs: g.Specs()}
}

// Specs returns one Spec per route and mount, in declaration order.
func (g Group[H]) Specs() []Spec {
	specs, _ := g.expand()
	return specs
}

// expand returns the specs with, for each, the index of its route.
func (g Group[H]) expand() ([]Spec, []int) {
	out := make([]Spec, 0, len(g.Routes)*(1+len(g.Mounts)))
	var idx []int
	for _, prefix := range append([]string{""}, g.Mounts...) {
		for i, r := range g.Routes {
			if prefix != "" && r.Unmounted {
				continue
			}
			idx = append(idx, i)
			out = append(out, Spec{
				Group: g.Name, Method: r.Method, Path: prefix + r.Path, Summary: r.Summary,
				Auth: r.Auth, Role: r.Role, Limit: r.Limit, Body: r.Body, Result: r.Result,
				Query: r.Query, Status: r.Status,
			})
		}
	}
	return out, idx
}

// Authenticator turns a request's credential into a Principal (the
// identity domain implements it).
type Authenticator interface {
	// Authenticate returns the caller at organization scope, or a 401.
	AuthenticateRequest(r *http.Request) (auth.Principal, error)
	// InWorkspace narrows p to the workspace the request selects
	// (X-Tenant-Id, or the key's only workspace), or answers why not.
	InWorkspace(r *http.Request, p auth.Principal) (auth.Principal, error)
}

// Edge is what runs before every handler.
type Edge struct {
	Auth Authenticator
	// Wrap, when set, wraps each route's handler (after authentication is
	// attached, before it runs): rate limits, region routing.
	Wrap func(Spec, http.Handler) http.Handler
}

// Mount registers every route of g on mux, bound to h, behind the edge.
func Mount[H any](mux *web.Mux, g Group[H], h H, e Edge) {
	specs, idx := g.expand()
	for i, s := range specs {
		r := g.Routes[idx[i]]
		var next http.Handler = bind(h, r.Handle)
		next = e.authenticate(s, next)
		if e.Wrap != nil {
			next = e.Wrap(s, next)
		}
		mux.Handle(s.Method, s.Path, next)
	}
}

func bind[H any](h H, f func(H, http.ResponseWriter, *http.Request) error) web.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error { return f(h, w, r) }
}

func (e Edge) authenticate(s Spec, next http.Handler) http.Handler {
	if s.Auth == Public || s.Auth == Own {
		return next
	}
	return web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		p, err := e.Auth.AuthenticateRequest(r)
		if err != nil {
			return err
		}
		if s.Auth == Workspace {
			if p, err = e.Auth.InWorkspace(r, p); err != nil {
				return err
			}
		}
		if s.Role != "" && !p.Effective().AtLeast(s.Role) {
			if s.Auth == Key && s.Role == auth.RoleAdmin {
				return web.Forbidden("Only organization admins can do this")
			}
			return web.Forbidden("This operation needs the %s role", s.Role)
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		return nil
	})
}

// Caller returns the principal the edge attached to r.
func Caller(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// PathParams returns the {param} names of a path, in order.
func PathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}"))
		}
	}
	return out
}
