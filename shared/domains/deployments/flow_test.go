package deployments_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/deployments"
)

// The seed's intended call sequence, end to end, on a real git repository:
// create, read, poll the revision until DEPLOYED, patch, and the new
// revision DEPLOYED.
func TestSeedCallSequence(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	first := repo.Commit("second graph", map[string]string{
		"agents/other.py": "graph = None\n",
		"langgraph.json":  `{"dependencies": ["."], "graphs": {"agent": "./agents/agent.py:graph", "other": "./agents/other.py:graph"}}`,
	})

	// 1. POST creates the deployment and its first revision.
	t0 := time.Now()
	created := e.must(201, "POST", "/v2/deployments", repoHostBody("my-agent", repo.Dir))
	id, rev1 := str(created, "id"), str(created, "latest_revision_id")
	if id == "" || rev1 == "" || created["active_revision_id"] != nil {
		t.Fatalf("create: %v", created)
	}
	if created["status"] != "AWAITING_DATABASE" || created["tenant_id"] != e.ws {
		t.Fatalf("create: %v", created)
	}
	if got := str(created, "source_config", "custom_url"); got != e.cfg.BaseURL+"/deployments/"+id {
		t.Fatalf("custom_url %q", got)
	}
	if str(created, "source_config", "integration_id") == "" {
		t.Fatal("the seeded integration was not applied")
	}
	sec := created["secrets"].([]any)[0].(map[string]any)
	if sec["name"] != "OPENAI_API_KEY" || sec["value"] != deployments.Redacted {
		t.Fatalf("secret not redacted: %v", sec)
	}

	// 2. GET reads it.
	got := e.must(200, "GET", "/v2/deployments/"+id, nil)
	if got["name"] != "my-agent" || str(got, "latest_revision_id") != rev1 {
		t.Fatalf("get: %v", got)
	}

	// 3. Poll the revision until DEPLOYED.
	r1 := e.waitRevision(id, rev1, "DEPLOYED")
	t.Logf("POST to DEPLOYED (local, small repository): %v", time.Since(t0))
	if str(r1, "source_revision_config", "repo_commit_sha") != first {
		t.Fatalf("commit not recorded: %v", r1)
	}
	if g := r1["graphs"].([]any); len(g) != 2 || g[0] != "agent" || g[1] != "other" {
		t.Fatalf("graphs %v", r1["graphs"])
	}
	got = e.must(200, "GET", "/v2/deployments/"+id, nil)
	if got["status"] != "READY" || str(got, "active_revision_id") != rev1 || str(got, "source_revision_config", "repo_commit_sha") != first {
		t.Fatalf("after deploy: %v", got)
	}
	log := e.logText(id, rev1)
	for _, want := range []string{"Fetching", "Fetched commit " + first, "graphs agent, other", "Packaged", "no container image", "OPENAI_API_KEY", "DEPLOYED"} {
		if !strings.Contains(log, want) {
			t.Errorf("build log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "sk-test-123") {
		t.Fatal("a secret value reached the build log")
	}
	// The thread API's view of the deployment.
	tt, err := e.service().ThreadTarget(context.Background(), id)
	if err != nil || tt.ActiveRevisionID != rev1 || strings.Join(tt.Graphs, ",") != "agent,other" || tt.WorkspaceID != e.ws {
		t.Fatalf("thread target %+v %v", tt, err)
	}

	// 4. PATCH with a new ref creates a revision; a new commit on that
	// branch is built.
	repo.Branch("release")
	second := repo.Commit("release", map[string]string{"agents/agent.py": "graph = 'v2'\n"})
	patched := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{
		"source_revision_config": map[string]any{"repo_ref": "release"},
	})
	rev2 := str(patched, "latest_revision_id")
	if rev2 == "" || rev2 == rev1 || str(patched, "active_revision_id") != rev1 {
		t.Fatalf("patch: %v", patched)
	}
	r2 := e.waitRevision(id, rev2, "DEPLOYED")
	if str(r2, "source_revision_config", "repo_commit_sha") != second || str(r2, "source_revision_config", "repo_ref") != "release" {
		t.Fatalf("revision 2: %v", r2)
	}
	got = e.must(200, "GET", "/v2/deployments/"+id, nil)
	if str(got, "active_revision_id") != rev2 || got["status"] != "READY" {
		t.Fatalf("after patch: %v", got)
	}
	// Revisions are listed newest first; the older DEPLOYED one stays.
	revs := e.revisions(id)
	if len(revs) != 2 || revs[0]["id"] != rev2 || revs[1]["id"] != rev1 || revs[1]["status"] != "DEPLOYED" {
		t.Fatalf("revisions %v", revs)
	}
	// The artifact holds the manifest.
	if _, err := os.Stat(filepath.Join(e.dir, "blobs", filepath.FromSlash(deployments.ArtifactKey(id, rev2)))); err != nil {
		t.Fatalf("artifact: %v", err)
	}

	// A PATCH of non-revision fields changes the deployment only.
	p3 := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"source_config": map[string]any{"build_on_push": true}, "image_version": "0.4"})
	if str(p3, "latest_revision_id") != rev2 || p3["source_config"].(map[string]any)["build_on_push"] != true || p3["image_version"] != "0.4" {
		t.Fatalf("patch without revision: %v", p3)
	}
	// The tracing project of the same name exists, and names the deployment.
	proj := e.tracingProject("my-agent", true)
	if md, _ := proj["extra"].(map[string]any)["metadata"].(map[string]any); md["deployment_id"] != id {
		t.Fatalf("tracing project %v", proj)
	}
}

// Build failures end BUILD_FAILED with the reason in the status message
// and the build log.
func TestBuildFailures(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	repo.Branch("broken")
	repo.Commit("break config", map[string]string{"langgraph.json": `{"graphs": {"agent": "./agents/missing.py:graph"}}`})
	repo.Checkout("main")
	cases := []struct {
		name   string
		url    string
		ref    string
		path   string
		reason string
	}{
		{"missing repository", filepath.Join(t.TempDir(), "nope"), "main", "langgraph.json", "no git repository"},
		{"missing ref", repo.Dir, "nope", "langgraph.json", "ref nope not found"},
		{"missing config file", repo.Dir, "main", "config/langgraph.json", "config/langgraph.json not found"},
		{"invalid config", repo.Dir, "broken", "langgraph.json", "agents/missing.py not found"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := repoHostBody("fail-"+string(rune('a'+i)), c.url)
			body["source_revision_config"] = map[string]any{"repo_ref": c.ref, "graph_config_path": c.path}
			d := e.must(201, "POST", "/v2/deployments", body)
			r := e.waitRevision(str(d, "id"), str(d, "latest_revision_id"), "BUILD_FAILED")
			if !strings.Contains(str(r, "status_message"), c.reason) {
				t.Fatalf("status_message %q lacks %q", r["status_message"], c.reason)
			}
			if log := e.logText(str(d, "id"), str(d, "latest_revision_id")); !strings.Contains(log, c.reason) || !strings.Contains(log, "BUILD_FAILED") {
				t.Fatalf("log lacks the reason:\n%s", log)
			}
			if got := e.must(200, "GET", "/v2/deployments/"+str(d, "id"), nil); got["status"] != "UNUSED" || got["active_revision_id"] != nil {
				t.Fatalf("a failed first revision activated the deployment: %v", got)
			}
		})
	}
}

// Redeploy rolls back to an earlier revision's configuration and artifact
// without building again.
func TestRedeploy(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("redeploy", repo.Dir))
	id, rev1 := str(d, "id"), str(d, "latest_revision_id")
	r1 := e.waitRevision(id, rev1, "DEPLOYED")
	repo.Commit("v2", map[string]string{"agents/agent.py": "graph = 2\n"})
	p := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"secrets": []any{map[string]any{"name": "OPENAI_API_KEY", "value": "sk-new"}}})
	rev2 := str(p, "latest_revision_id")
	e.waitRevision(id, rev2, "DEPLOYED")

	out := e.must(200, "POST", "/v2/deployments/"+id+"/revisions/"+rev1+"/redeploy", nil)
	rev3 := str(out, "latest_revision_id")
	if rev3 == rev1 || rev3 == rev2 || str(out, "source_revision_config", "repo_commit_sha") != str(r1, "source_revision_config", "repo_commit_sha") {
		t.Fatalf("redeploy answer: %v", out)
	}
	r3 := e.waitRevision(id, rev3, "DEPLOYED")
	if r3["redeployed_from"] != rev1 || r3["trigger"] != "redeploy" || str(r3, "source_revision_config", "repo_commit_sha") != str(r1, "source_revision_config", "repo_commit_sha") {
		t.Fatalf("revision 3: %v", r3)
	}
	if log := e.logText(id, rev3); !strings.Contains(log, "skipped") || strings.Contains(log, "Fetching") {
		t.Fatalf("redeploy rebuilt:\n%s", log)
	}
	// The configuration, secrets included, is revision 1's again.
	env, err := e.service().OpenSecrets(context.Background(), id, rev3)
	if err != nil || env["OPENAI_API_KEY"] != "sk-test-123" {
		t.Fatalf("secrets %v %v", env, err)
	}
	got := e.must(200, "GET", "/v2/deployments/"+id, nil)
	if str(got, "active_revision_id") != rev3 {
		t.Fatalf("active %v", got["active_revision_id"])
	}

	// Errors: unknown revision 404, bad ids 422, unknown deployment 404.
	missing := "00000000-0000-4000-8000-000000000000"
	r := e.call("POST", "/v2/deployments/"+id+"/revisions/"+missing+"/redeploy", nil)
	if r.Code != 404 || r.Body != `{"detail":"Revision ID `+missing+` not found."}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	r = e.call("POST", "/v2/deployments/"+missing+"/revisions/"+rev1+"/redeploy", nil)
	if r.Code != 404 || r.Body != `{"detail":"Deployment ID `+missing+` not found."}` {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	r = e.call("POST", "/v2/deployments/"+id+"/revisions/not-a-uuid/redeploy", nil)
	if r.Code != 422 || !strings.Contains(r.Body, `"loc":["path","revision_id"]`) {
		t.Fatalf("%d %s", r.Code, r.Body)
	}

	// A revision still in progress cannot be redeployed (400).
	e2 := start(t, "")
	e2.cancel() // no consumer: the revision stays QUEUED
	<-e2.done
	d2 := e2.must(201, "POST", "/v2/deployments", repoHostBody("queued", repo.Dir))
	r = e2.call("POST", "/v2/deployments/"+str(d2, "id")+"/revisions/"+str(d2, "latest_revision_id")+"/redeploy", nil)
	if r.Code != 400 || !strings.Contains(r.Body, "still in progress") {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
}

// DELETE answers 204, shows AWAITING_DELETE until everything the deployment
// owns is removed, then 404; the name is free again at once.
func TestDelete(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("doomed", repo.Dir))
	id, rev := str(d, "id"), str(d, "latest_revision_id")
	e.waitRevision(id, rev, "DEPLOYED")
	r := e.call("DELETE", "/v2/deployments/"+id+"?delete_tracing_project=true", nil)
	if r.Code != 204 || r.Body != "" {
		t.Fatalf("%d %q", r.Code, r.Body)
	}
	if _, err := e.service().ThreadTarget(context.Background(), id); !errors.Is(err, deployments.ErrDeploymentNotFound) {
		t.Fatalf("thread target of a deleted deployment: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := e.call("GET", "/v2/deployments/"+id, nil)
		if r.Code == 404 {
			if r.Body != `{"detail":"Deployment ID `+id+` not found."}` {
				t.Fatalf("404 body %s", r.Body)
			}
			break
		}
		if st := r.JSON(t)["status"]; st != "AWAITING_DELETE" {
			t.Fatalf("status while deleting: %v", st)
		}
		if time.Now().After(deadline) {
			t.Fatal("deployment not purged")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.call("GET", "/v2/deployments/"+id+"/revisions/"+rev, nil); r.Code != 404 {
		t.Fatalf("revision after purge: %d", r.Code)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "blobs", "deployments", id)); err == nil {
		entries, _ := os.ReadDir(filepath.Join(e.dir, "blobs", "deployments", id))
		for _, en := range entries {
			if !en.IsDir() {
				t.Fatalf("blobs left: %v", en.Name())
			}
		}
	}
	e.tracingProject("doomed", false)
	if r := e.call("DELETE", "/v2/deployments/"+id, nil); r.Code != 404 {
		t.Fatalf("second delete: %d", r.Code)
	}
	// The name can be used again.
	e.must(201, "POST", "/v2/deployments", repoHostBody("doomed", repo.Dir))
}
