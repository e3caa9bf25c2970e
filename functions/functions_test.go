// Package functions_test checks that functions/ has exactly one Lambda main
// per route group of shared/routes, plus the background functions, so a
// new route group cannot reach API Gateway (which the CDK app builds from
// the same table) without a function to serve it.
package functions_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentplane/agentplane/shared/routes"
)

// background are the functions that serve no route group.
var background = map[string]bool{"build-worker": true, "build-step": true, "sweeper": true}

func TestOneFunctionPerRouteGroup(t *testing.T) {
	dirs := map[string]bool{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs[e.Name()] = true
		}
	}
	for _, g := range routes.Groups() {
		if background[g.Name] {
			t.Errorf("route group %s has the name of a background function", g.Name)
		}
		if !dirs[g.Name] {
			t.Errorf("route group %s has no functions/%s/main.go", g.Name, g.Name)
			continue
		}
		if got := groupConst(t, filepath.Join(g.Name, "main.go")); got != g.Name {
			t.Errorf("functions/%s/main.go serves group %q", g.Name, got)
		}
	}
	for d := range dirs {
		if _, ok := routes.Lookup(d); !ok && !background[d] {
			t.Errorf("functions/%s is neither a route group nor a background function", d)
		}
		if _, err := os.Stat(filepath.Join(d, "main.go")); err != nil {
			t.Errorf("functions/%s: %v", d, err)
		}
	}
	for b := range background {
		if !dirs[b] {
			t.Errorf("background function %s is missing", b)
		}
	}
}

// groupConst returns the value of `const group = "..."` in a group main.
func groupConst(t *testing.T, path string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" {
		t.Errorf("%s: package %s, want main", path, f.Name.Name)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != "group" || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					return v
				}
			}
		}
	}
	return ""
}
