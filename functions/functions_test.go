// Package functions_test checks that functions/ has exactly one Lambda main
// per group of the catalog, and that each main links its own group's
// package, so a new group cannot reach API Gateway (which the CDK app
// builds from the same catalog) without a function to serve it.
package functions_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose/catalog"
)

func TestOneFunctionPerGroup(t *testing.T) {
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
	for _, g := range catalog.Groups() {
		if !dirs[g.Name] {
			t.Errorf("group %s has no functions/%s/main.go", g.Name, g.Name)
			continue
		}
		delete(dirs, g.Name)
		want := "github.com/agentplane/agentplane/shared/compose/" + strings.ReplaceAll(g.Name, "-", "") + "group"
		if !imports(t, filepath.Join(g.Name, "main.go"), want) {
			t.Errorf("functions/%s/main.go does not import %s", g.Name, want)
		}
		if imports(t, filepath.Join(g.Name, "main.go"), "github.com/agentplane/agentplane/shared/compose/catalog") {
			t.Errorf("functions/%s/main.go imports the catalog: it would link every group", g.Name)
		}
	}
	for d := range dirs {
		t.Errorf("functions/%s is not a group of the catalog", d)
	}
}

func imports(t *testing.T, path, pkg string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name.Name != "main" {
		t.Errorf("%s: package %s, want main", path, f.Name.Name)
	}
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == pkg {
			return true
		}
	}
	return false
}
