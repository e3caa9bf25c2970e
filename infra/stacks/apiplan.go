package stacks

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/agentplane/agentplane/shared/kernel/api"
)

// apiNode is one resource of the REST API: a path part, the methods on it
// (method → group) and its child resources.
type apiNode struct {
	part     string // "" for the root, "items", "{id}" or "{path+}"
	methods  map[string]string
	children map[string]*apiNode
	// forms records, per method, which route forms reached it: the path
	// itself (formPlain) and its trailing-slash twin "/{$}" (formSlash).
	forms map[string]int
}

const (
	formPlain = 1 << iota
	formSlash
)

func newNode(part string) *apiNode {
	return &apiNode{part: part, methods: map[string]string{}, children: map[string]*apiNode{}, forms: map[string]int{}}
}

// childParts returns the node's child path parts in a stable order.
func (n *apiNode) childParts() []string {
	out := make([]string, 0, len(n.children))
	for p := range n.children {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// methodNames returns the node's methods in a stable order.
func (n *apiNode) methodNames() []string {
	out := make([]string, 0, len(n.methods))
	for m := range n.methods {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

var (
	// API Gateway path parts: letters, digits and a few punctuation marks.
	literalPart = regexp.MustCompile(`^[A-Za-z0-9._~:@!$&'()*,;=-]+$`)
	paramName   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}
)

// AnyMethod and GreedyPart are what a collapsed subtree becomes.
const (
	AnyMethod  = "ANY"
	GreedyPart = "{proxy+}"
)

// apiPart maps one ServeMux path segment to an API Gateway path part:
// "{id}" stays, a trailing wildcard "{rest...}" becomes the greedy "{rest+}".
func apiPart(seg string, last bool) (string, error) {
	if !strings.HasPrefix(seg, "{") {
		if !literalPart.MatchString(seg) {
			return "", fmt.Errorf("path part %q is not allowed by API Gateway", seg)
		}
		return seg, nil
	}
	if !strings.HasSuffix(seg, "}") {
		return "", fmt.Errorf("path part %q mixes text and a parameter", seg)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(seg, "{"), "}")
	greedy := strings.HasSuffix(name, "...")
	name = strings.TrimSuffix(name, "...")
	if !paramName.MatchString(name) {
		return "", fmt.Errorf("path parameter %q is not a valid name", seg)
	}
	if greedy {
		if !last {
			return "", fmt.Errorf("wildcard %q must be the last path part", seg)
		}
		return "{" + name + "+}", nil
	}
	return "{" + name + "}", nil
}

func isVariable(part string) bool { return strings.HasPrefix(part, "{") }

// planAPI builds the resource tree of the REST API from the routes (each
// names its group: the function the method invokes). It rejects what API
// Gateway would reject at deploy time: two groups on one method and path,
// two differently named parameters (or a parameter and a wildcard) under
// one parent, and paths it cannot express.
func planAPI(specs []api.Spec) (*apiNode, error) {
	root := newNode("")
	for _, r := range specs {
		if r.Group == "" {
			return nil, fmt.Errorf("route %s names no group", r.Pattern())
		}
		if err := addRoute(root, r); err != nil {
			return nil, fmt.Errorf("group %s, %s: %w", r.Group, r.Pattern(), err)
		}
	}
	return root, nil
}

func addRoute(root *apiNode, r api.Spec) error {
	if !httpMethods[r.Method] {
		return fmt.Errorf("method %q is not one API Gateway routes", r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("path must start with /")
	}
	n := root
	path := r.Path
	if p, ok := strings.CutSuffix(path, "/"+exactSlash); ok {
		// "/repos/{$}" is ServeMux's "/repos/" exactly: API Gateway
		// routes a trailing slash to the resource without it, and the
		// proxy passes the path as sent, so the function's mux tells
		// the two apart.
		path = p
		if path == "" {
			path = "/"
		}
	}
	if path != "/" {
		if strings.HasSuffix(path, "/") {
			return fmt.Errorf("a trailing slash (a ServeMux subtree) has no API Gateway resource")
		}
		segs := strings.Split(path[1:], "/")
		for i, seg := range segs {
			if seg == "" {
				return fmt.Errorf("empty path part")
			}
			part, err := apiPart(seg, i == len(segs)-1)
			if err != nil {
				return err
			}
			child, ok := n.children[part]
			if !ok {
				if isVariable(part) {
					for other := range n.children {
						if isVariable(other) {
							return fmt.Errorf("%s and %s under one parent: API Gateway allows one variable part per resource", other, part)
						}
					}
				}
				child = newNode(part)
				n.children[part] = child
			}
			n = child
		}
	}
	form := formPlain
	if path != r.Path {
		form = formSlash
	}
	if prev, dup := n.methods[r.Method]; dup && (prev != r.Group || n.forms[r.Method]&form != 0) {
		return fmt.Errorf("already served by group %s", prev)
	}
	n.methods[r.Method] = r.Group
	n.forms[r.Method] |= form
	return nil
}

// owner is the one group serving every method of n's subtree, or "" when
// several do.
func owner(n *apiNode) string {
	g := ""
	for _, m := range n.methods {
		if g != "" && m != g {
			return ""
		}
		g = m
	}
	for _, c := range n.children {
		o := owner(c)
		if o == "" || g != "" && o != g {
			return ""
		}
		g = o
	}
	return g
}

// collapse returns the tree API Gateway is given: every subtree whose
// routes all belong to one group becomes ANY on its top resource and ANY
// on a greedy {proxy+} below it, both to that group's function, which
// routes the request itself (its mux answers an unknown path 404 and an
// unserved method 405, in the interface's shapes, as the local server
// does). A REST API holds one CloudFormation resource per path part and
// per method, and a stack at most 500 resources: the full tree of the
// catalog alone would take 343 of them.
func collapse(n *apiNode) *apiNode {
	if g := owner(n); g != "" {
		out := newNode(n.part)
		out.methods[AnyMethod] = g
		if len(n.children) > 0 {
			p := newNode(GreedyPart)
			p.methods[AnyMethod] = g
			out.children[GreedyPart] = p
		}
		return out
	}
	out := newNode(n.part)
	for m, g := range n.methods {
		out.methods[m] = g
	}
	for part, c := range n.children {
		out.children[part] = collapse(c)
	}
	return out
}

// apiRoutes lists every "METHOD /path" of a tree in API Gateway syntax.
func apiRoutes(root *apiNode) []string {
	var out []string
	var walk func(n *apiNode, path string)
	walk = func(n *apiNode, path string) {
		p := path
		if p == "" {
			p = "/"
		}
		for _, m := range n.methodNames() {
			out = append(out, m+" "+p)
		}
		for _, c := range n.childParts() {
			walk(n.children[c], path+"/"+c)
		}
	}
	walk(root, "")
	sort.Strings(out)
	return out
}

// exactSlash is ServeMux's end-of-path marker ("/a/{$}" matches "/a/" only).
const exactSlash = "{$}"

// APIPath is a route's path as an API Gateway resource path.
func APIPath(path string) string {
	if p, ok := strings.CutSuffix(path, "/"+exactSlash); ok {
		path = p
		if path == "" {
			return "/"
		}
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}") {
			segs[i] = strings.TrimSuffix(s, "...}") + "+}"
		}
	}
	return strings.Join(segs, "/")
}
