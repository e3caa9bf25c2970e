package stacks

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/kernel/api"
)

func TestPlanAPIFromTheCatalog(t *testing.T) {
	root, err := planAPI(catalog.Routes())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range catalog.Routes() {
		if rt := r.Method + " " + APIPath(r.Path); !slices.Contains(want, rt) {
			want = append(want, rt) // "/repos" and "/repos/{$}" are one resource
		}
	}
	got := apiRoutes(root)
	if len(got) != len(want) {
		t.Fatalf("%d API routes for %d table routes", len(got), len(want))
	}
	seen := map[string]bool{}
	for _, r := range got {
		seen[r] = true
	}
	for _, r := range want {
		if !seen[r] {
			t.Errorf("route %s missing from the API plan", r)
		}
	}
}

func TestPlanAPI(t *testing.T) {
	g := func(name string, rs ...string) []api.Spec {
		var out []api.Spec
		for _, r := range rs {
			m, p, _ := strings.Cut(r, " ")
			out = append(out, api.Spec{Group: name, Method: m, Path: p})
		}
		return out
	}
	root, err := planAPI(append(
		g("a", "GET /", "GET /items", "POST /items", "GET /items/{id}", "GET /files/{path...}"),
		g("b", "DELETE /items/{id}", "GET /items/{id}/parts")...))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETE /items/{id}", "GET /", "GET /files/{path+}", "GET /items", "GET /items/{id}", "GET /items/{id}/parts", "POST /items"}
	if got := apiRoutes(root); !reflect.DeepEqual(got, want) {
		t.Errorf("routes %v\nwant %v", got, want)
	}
	if grp := root.children["items"].children["{id}"].methods["DELETE"]; grp != "b" {
		t.Errorf("DELETE /items/{id} → %q", grp)
	}

	for _, bad := range [][]api.Spec{
		append(g("a", "GET /x"), g("b", "GET /x")...),
		g("a", "GET /x/{id}", "GET /x/{name}/y"),
		g("a", "GET /x/{id}", "GET /x/{rest...}"),
		g("a", "GET /x/{rest...}/y"),
		g("a", "GET /x/"),
		g("a", "GET /x//y"),
		g("a", "GET x"),
		g("a", "FETCH /x"),
		g("a", "GET /x/a{id}"),
		g("a", "GET /x/{$}/y"),
		append(g("a", "GET /x"), g("b", "GET /x/{$}")...),
		g("a", "GET /x/{$}", "GET /x/{$}"),
		g("a", "GET /x/{1d}"),
		g("a", "GET /x y"),
		g("", "GET /x"),
	} {
		if _, err := planAPI(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func TestTrailingSlashTwins(t *testing.T) {
	g := func(name string, rs ...string) []api.Spec {
		var out []api.Spec
		for _, r := range rs {
			m, p, _ := strings.Cut(r, " ")
			out = append(out, api.Spec{Group: name, Method: m, Path: p})
		}
		return out
	}
	for _, order := range [][]string{{"GET /repos", "GET /repos/{$}"}, {"GET /repos/{$}", "GET /repos"}, {"GET /{$}", "GET /"}} {
		root, err := planAPI(g("a", order...))
		if err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		if got := apiRoutes(root); len(got) != 1 {
			t.Errorf("%v: routes %v", order, got)
		}
	}
	if APIPath("/repos/{$}") != "/repos" || APIPath("/{$}") != "/" || APIPath("/f/{p...}") != "/f/{p+}" {
		t.Error("APIPath")
	}
}

func TestCollapse(t *testing.T) {
	g := func(name string, rs ...string) []api.Spec {
		var out []api.Spec
		for _, r := range rs {
			m, p, _ := strings.Cut(r, " ")
			out = append(out, api.Spec{Group: name, Method: m, Path: p})
		}
		return out
	}
	root, err := planAPI(append(append(
		g("a", "GET /health", "GET /v2/items", "POST /v2/items", "GET /v2/items/{id}", "GET /shared/a"),
		g("b", "GET /shared/b/{id}", "DELETE /shared/b/{id}", "GET /shared")...),
		g("c", "POST /x")...))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ANY /health", "ANY /shared/a", "ANY /shared/b", "ANY /shared/b/{proxy+}", "ANY /v2", "ANY /v2/{proxy+}", "ANY /x",
		"GET /shared",
	}
	if got := apiRoutes(collapse(root)); !reflect.DeepEqual(got, want) {
		t.Errorf("collapsed %v\nwant %v", got, want)
	}
	one, err := planAPI(g("m", "POST /mcp", "OPTIONS /mcp", "GET /health"))
	if err != nil {
		t.Fatal(err)
	}
	if got := apiRoutes(collapse(one)); !reflect.DeepEqual(got, []string{"ANY /", "ANY /{proxy+}"}) {
		t.Errorf("a one-group API collapses to %v", got)
	}
	if owner(root) != "" || owner(root.children["v2"]) != "a" {
		t.Error("owner")
	}
}
