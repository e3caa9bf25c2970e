// Package routes is the single definition of the HTTP surface: which Lambda
// function (route group) serves which method and path. The local server, the
// Lambda mains and the CDK app all read it, so API Gateway resources cannot
// drift from the handlers (a test in shared/server checks that every group
// registers exactly its routes).
//
// Paths use Go's ServeMux and API Gateway's shared {param} syntax. Each route
// group lives in its own file here and registers itself in init.
package routes

import (
	"sort"
	"strings"
)

// Route is one method and path pattern.
type Route struct {
	Method string
	Path   string
}

// Pattern is the ServeMux pattern, "METHOD /path".
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// Group is the set of routes one Lambda function serves.
type Group struct {
	// Name is the function directory under functions/ and the CDK id stem.
	Name string
	// Routes served by this function.
	Routes []Route
	// Description for the Lambda function.
	Description string
}

var groups = map[string]Group{}

func register(g Group) {
	if _, dup := groups[g.Name]; dup {
		panic("routes: duplicate group " + g.Name)
	}
	groups[g.Name] = g
}

// Groups returns every route group, sorted by name.
func Groups() []Group {
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the group with that name.
func Lookup(name string) (Group, bool) {
	g, ok := groups[name]
	return g, ok
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
