package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/domains/toolserver"
)

// A deployment's tracing project (made by the control plane through the
// queue) is what list_projects shows with agent_deployment_id; deleting
// the deployment with delete_tracing_project removes it from the list.
func TestToolsDeploymentProject(t *testing.T) {
	s := start(t)
	tn := newTenant(t, s, "Tenant Alpha", "ALPHA", 0)
	repo := gittest.NewRepo(t, filepath.Join(t.TempDir(), "agent"))
	repo.Commit("agent", gittest.Agent("agent"))
	var dep struct {
		ID  string `json:"id"`
		Rev string `json:"latest_revision_id"`
	}
	api(t, s.API, tn.Key, "POST", "/v2/deployments", map[string]any{
		"name": "support-agent", "source": "repo_host",
		"source_config":          map[string]any{"repo_url": repo.Dir, "deployment_type": "dev", "build_on_push": false},
		"source_revision_config": map[string]any{"repo_ref": "main", "graph_config_path": "langgraph.json"},
		"secrets":                []any{},
	}, 201, &dep)
	// Let the build finish, so the deletion below does not race it.
	waitFor(t, "the revision", func() bool {
		var r struct {
			Status string `json:"status"`
		}
		api(t, s.API, tn.Key, "GET", "/v2/deployments/"+dep.ID+"/revisions/"+dep.Rev, nil, 200, &r)
		if r.Status == "DEPLOYED" {
			return true
		}
		if deployments.RevisionStatus(r.Status).Terminal() {
			t.Fatalf("revision %s", r.Status)
		}
		return false
	})
	cs := session(t, s.MCP, map[string]string{toolserver.HeaderAPIKey: tn.Key})
	var projects []map[string]any
	waitFor(t, "the deployment's project", func() bool {
		projects = list(t, ok(t, cs, "list_projects", map[string]any{"project_name": "support-agent"}), "projects")
		return len(projects) == 1
	})
	if projects[0]["name"] != "support-agent" || projects[0]["agent_deployment_id"] != dep.ID || projects[0]["project_id"] == nil {
		t.Fatalf("project: %v", projects[0])
	}
	api(t, s.API, tn.Key, "DELETE", "/v2/deployments/"+dep.ID+"?delete_tracing_project=true", nil, 204, nil)
	deadline := time.Now().Add(30 * time.Second)
	for len(list(t, ok(t, cs, "list_projects", map[string]any{"project_name": "support-agent"}), "projects")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the deleted deployment's project is still listed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
