package stacks_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// A catalog unlike the product's: a consumer without routes, a group with
// only a sweep, a runner that publishes, two topics on one queue, a dash
// and a digit in a name. The stack must be generated from it with no edit
// to the stacks package, and pass the same checks as the product's.
func anyCatalog() ([]compose.Group, []stacks.Workflow) {
	routes := func(group string, rs ...string) []api.Spec {
		var out []api.Spec
		for _, r := range rs {
			m, p, _ := strings.Cut(r, " ")
			out = append(out, api.Spec{Group: group, Method: m, Path: p, Summary: r})
		}
		return out
	}
	groups := []compose.Group{
		{Name: "edge", Routes: routes("edge", "GET /a", "GET /a/{$}", "POST /a/{id}", "GET /files/{path...}"),
			Publishes: []string{"t.one"}, Uses: compose.Uses{Indexes: []string{"gsi3"}}},
		{Name: "sink-2", Consumes: []string{"t.one", "t.two"}, Sweeps: true, Uses: compose.Uses{Blobs: true}},
		{Name: "starter", Routes: routes("starter", "GET /b", "DELETE /a/{id}"), Publishes: []string{"t.two"},
			Uses: compose.Uses{Secrets: true, StartsWorkflows: []string{"w"}, Indexes: []string{"gsi1", "gsi5"}}},
		{Name: "runner", Publishes: []string{"t.one", "t.two"}, Uses: compose.Uses{RunsSteps: true, Blobs: true, Secrets: true}},
		{Name: "lonely", Sweeps: true},
		{Name: "tool", Host: "tools", Routes: routes("tool", "POST /call", "GET /health")},
	}
	w := workflow.Definition{Name: "w", Steps: []workflow.Step{
		{Name: "first", MaxAttempts: 3, Backoff: time.Second, OnFailure: "fail"},
		{Name: "heavy", AWSService: stacks.ServiceCodeBuild, OnFailure: "fail"},
		{Name: "fail", FailureOnly: true, MaxAttempts: 2},
	}}
	return groups, []stacks.Workflow{{Definition: w, Group: "runner"}}
}

func TestAnyCatalog(t *testing.T) {
	groups, wfs := anyCatalog()
	layout, err := stacks.NewLayout(groups, wfs)
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.SetEgress(map[string]string{"runner": "clones repositories", "tool": "calls caller-named endpoints"}); err != nil {
		t.Fatal(err)
	}
	rs, err := synth(layout, "Any", appConfig{}, "eu")
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []func(*testing.T, *region){checkQueues, checkSchedules, checkFunctions, checkFunctionIAM, checkWorkflowIAM, checkRoutes} {
		checkAll(t, rs, check)
	}
	r := rs[0]
	if len(r.stack.Queues) != 1 || r.stack.Queues["sink-2"] == nil || len(r.stack.Schedules) != 2 || len(r.stack.Projects) != 1 {
		t.Errorf("queues %v, schedules %v, projects %v", sortedKeys(r.stack.Queues), sortedKeys(r.stack.Schedules), sortedKeys(r.stack.Projects))
	}
	// The timeouts follow the events each function receives.
	for name, want := range map[string]int{"edge": 29, "sink-2": 300, "starter": 29, "runner": 900, "lonely": 300, "tool": 29} {
		if g, _ := layout.Group(name); g.TimeoutSeconds != want {
			t.Errorf("%s: timeout %d, want %d", name, g.TimeoutSeconds, want)
		}
	}
	if g, _ := layout.Group("sink-2"); g.VisibilitySeconds != 1800 {
		t.Errorf("sink-2: visibility %d", g.VisibilitySeconds)
	}
}

func TestNewLayoutRejects(t *testing.T) {
	ok := func() ([]compose.Group, []stacks.Workflow) { return anyCatalog() }
	if _, err := stacks.NewLayout(ok()); err != nil {
		t.Fatalf("the base catalog is rejected: %v", err)
	}
	for name, edit := range map[string]func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow){
		"bad name": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[4].Name = "Lonely"
			return gs, ws
		},
		"duplicate group": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[4].Name = "edge"
			return gs, ws
		},
		"topic with two consumers": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[4].Consumes = []string{"t.two"}
			return gs, ws
		},
		"topic without consumer": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Publishes = append(gs[0].Publishes, "t.nobody")
			return gs, ws
		},
		"unknown index": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Uses.Indexes = []string{"gsi9"}
			return gs, ws
		},
		"starts an undefined workflow": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[2].Uses.StartsWorkflows = []string{"w", "other"}
			return gs, ws
		},
		"runner without RunsSteps": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			ws[0].Group = "edge"
			return gs, ws
		},
		"runner not in the catalog": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			ws[0].Group = "nobody"
			return gs, ws
		},
		"RunsSteps without a workflow": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[4].Uses.RunsSteps = true
			return gs, ws
		},
		"workflow defined twice": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			return gs, append(ws, ws[0])
		},
		"bad workflow": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			ws[0].Definition.Steps[0].OnFailure = "nope"
			return gs, ws
		},
		"group that never runs": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[4].Sweeps = false
			return gs, ws
		},
		"no routes at all": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Routes, gs[2].Routes = nil, nil
			return gs, ws
		},
		"route of another group": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Routes[0].Group = "starter"
			return gs, ws
		},
		"conflicting routes": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[2].Routes = append(gs[2].Routes, api.Spec{Group: "starter", Method: "GET", Path: "/a/{name}/x"})
			return gs, ws
		},
		"same route in two groups": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[2].Routes = append(gs[2].Routes, api.Spec{Group: "starter", Method: "GET", Path: "/a"})
			return gs, ws
		},
		"trailing-slash twin in another group": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[2].Routes = append(gs[2].Routes, api.Spec{Group: "starter", Method: "POST", Path: "/a/{id}/{$}"})
			return gs, ws
		},
		"trailing-slash route twice": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Routes = append(gs[0].Routes, api.Spec{Group: "edge", Method: "GET", Path: "/a/{$}"})
			return gs, ws
		},
		"own host that uses the store": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[5].Uses.Indexes = []string{"gsi1"}
			return gs, ws
		},
		"own host that consumes": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[5].Consumes = []string{"t.three"}
			return gs, ws
		},
		"own host that publishes": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[5].Publishes = []string{"t.one"}
			return gs, ws
		},
		"own host without routes": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[5].Routes = nil
			return gs, ws
		},
		"bad host name": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[5].Host = "Tools!"
			return gs, ws
		},
		"no platform routes": func(gs []compose.Group, ws []stacks.Workflow) ([]compose.Group, []stacks.Workflow) {
			gs[0].Routes, gs[2].Routes = nil, nil
			gs[0].Sweeps, gs[2].Sweeps = true, true
			return gs, ws
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := stacks.NewLayout(edit(ok())); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestSetEgress(t *testing.T) {
	layout, err := stacks.NewLayout(anyCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.SetEgress(map[string]string{"nobody": "calls"}); err == nil {
		t.Error("an unknown group is accepted")
	}
	if err := layout.SetEgress(map[string]string{"edge": ""}); err == nil {
		t.Error("a group without a reason is accepted")
	}
	product, err := stacks.CatalogLayout()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range product.Groups {
		if want := stacks.CatalogEgress()[g.Name]; g.Egress != want {
			t.Errorf("%s: egress %q, want %q", g.Name, g.Egress, want)
		}
		if g.Store != (g.Host == "") {
			t.Errorf("%s: store %v with host %q", g.Name, g.Store, g.Host)
		}
	}
}

func TestCheckFunctions(t *testing.T) {
	layout, err := stacks.NewLayout(anyCatalog())
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"edge", "sink-2", "starter", "runner", "lonely", "tool"}
	if err := stacks.CheckFunctions(all, layout); err != nil {
		t.Error(err)
	}
	if err := stacks.CheckFunctions(all[1:], layout); err == nil {
		t.Error("a group without a function is accepted")
	}
	if err := stacks.CheckFunctions(append(all, "stray"), layout); err == nil {
		t.Error("a function without a group is accepted")
	}
	fns, err := stacks.FunctionNames("../../functions")
	if err != nil {
		t.Fatal(err)
	}
	product, err := stacks.CatalogLayout()
	if err != nil {
		t.Fatal(err)
	}
	if err := stacks.CheckFunctions(fns, product); err != nil {
		t.Errorf("functions/ and the catalog differ: %v", err)
	}
}

func TestNewRegionStackRejects(t *testing.T) {
	layout, err := stacks.NewLayout(anyCatalog())
	if err != nil {
		t.Fatal(err)
	}
	code := t.TempDir()
	if err := fixtureCode(code, []string{"edge", "sink-2", "starter", "runner", "lonely", "tool"}); err != nil {
		t.Fatal(err)
	}
	sites, err := stacks.SitesFromContext(func(string) any { return nil }, map[string]string{"us": "Bad", "eu": "Bad-EU"})
	if err != nil {
		t.Fatal(err)
	}
	other := sites
	other.US.StackID = "Other"
	for name, props := range map[string]*stacks.RegionStackProps{
		"no layout":             {RegionName: "us", Sites: sites, CodeDir: code},
		"bad region name":       {RegionName: "ap", Sites: sites, Layout: layout, CodeDir: code},
		"missing zip":           {RegionName: "us", Sites: sites, Layout: layout, CodeDir: t.TempDir()},
		"no sites":              {RegionName: "us", Layout: layout, CodeDir: code},
		"site of another stack": {RegionName: "us", Sites: other, Layout: layout, CodeDir: code},
		"bad operator digest":   {RegionName: "us", Sites: sites, Layout: layout, CodeDir: code, OperatorTokenSHA256: "abc"},
		"operator without sign-up route": {RegionName: "us", Sites: sites, Layout: layout, CodeDir: code,
			OperatorTokenSHA256: strings.Repeat("a", 64)},
		"UI folder missing": {RegionName: "us", Sites: sites, Layout: layout, CodeDir: code, UIAssetsDir: filepath.Join(code, "nope")},
	} {
		t.Run(name, func(t *testing.T) {
			a := awscdk.NewApp(nil)
			if _, err := stacks.NewRegionStack(a, "Bad", props); err == nil {
				t.Error("no error")
			}
		})
	}
}
