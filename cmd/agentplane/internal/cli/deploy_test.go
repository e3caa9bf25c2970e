package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
)

type depJSON struct {
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	Status           string  `json:"status"`
	LatestRevisionID *string `json:"latest_revision_id"`
	ActiveRevisionID *string `json:"active_revision_id"`
	SourceConfig     struct {
		RepoURL *string `json:"repo_url"`
	} `json:"source_config"`
	SourceRevisionConfig struct {
		RepoRef         *string `json:"repo_ref"`
		GraphConfigPath *string `json:"graph_config_path"`
	} `json:"source_revision_config"`
	Secrets []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"secrets"`
}

type revJSON struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	Trigger        string  `json:"trigger"`
	RedeployedFrom *string `json:"redeployed_from"`
}

type deployJSON struct {
	Deployment depJSON `json:"deployment"`
	Revision   revJSON `json:"revision"`
}

func secretNames(d depJSON) string {
	var n []string
	for _, s := range d.Secrets {
		if s.Value != "********" {
			n = append(n, "UNREDACTED")
		}
		n = append(n, s.Name)
	}
	sort.Strings(n)
	return strings.Join(n, ",")
}

// agentRepo makes a committed LangGraph repository in a new directory.
func agentRepo(t *testing.T) (*gittest.Repo, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "my-agent")
	r := gittest.NewRepo(t, dir)
	r.Commit("agent", gittest.Agent("agent"))
	return r, dir
}

// The whole life of a deployment through the CLI: deploy a local git
// repository with --wait to DEPLOYED, read it every way, update it, redeploy,
// read its threads, delete it.
func TestDeploymentLifecycle(t *testing.T) {
	s := startServer(t)
	repo, dir := agentRepo(t)
	secrets := filepath.Join(t.TempDir(), "prod.env")
	if err := os.WriteFile(secrets, []byte("# for the agent\nexport FROM_FILE='a $literal value'\nQUOTED=\"two\\nlines\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Create, waiting: plain progress on stderr, the summary on stdout.
	r := s.runWith(t, runOpts{env: map[string]string{"OPENAI_API_KEY": "sk-from-env"}},
		"deploy", dir, "--wait", "--secret", "A=1", "--secret", "OPENAI_API_KEY", "--secrets-file", secrets)
	if r.code != 0 {
		t.Fatalf("deploy: %s", r)
	}
	for _, want := range []string{"Created deployment my-agent", "[FetchSource]", "[ValidateConfig]", "[Deploy]", "status DEPLOYED"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("progress lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "\r") || strings.Contains(r.stderr, "\033[") {
		t.Errorf("plain progress has terminal control sequences:\n%q", r.stderr)
	}
	for _, want := range []string{"my-agent", "READY", "DEPLOYED", s.url + "/deployments/"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, secret := range []string{"sk-from-env", "a $literal value"} {
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("a secret value was printed:\n%s", r)
		}
	}

	get := jsonOf[depJSON](t, s.ok(t, "deployments", "get", "my-agent", "--json"))
	if get.Status != "READY" || get.ActiveRevisionID == nil || *get.ActiveRevisionID != *get.LatestRevisionID {
		t.Fatalf("deployment after deploy --wait: %+v", get)
	}
	if got := secretNames(get); got != "A,FROM_FILE,OPENAI_API_KEY,QUOTED" {
		t.Errorf("secrets: %s", got)
	}
	if want := "file://" + filepath.ToSlash(dir); *get.SourceConfig.RepoURL != want {
		t.Errorf("repo_url %s, want %s", *get.SourceConfig.RepoURL, want)
	}
	first := *get.LatestRevisionID

	// Every read, as a table and as JSON.
	ls := s.ok(t, "deployments", "ls")
	if !strings.Contains(ls.stdout, "NAME") || !strings.Contains(ls.stdout, "my-agent") || !strings.Contains(ls.stdout, get.ID) {
		t.Errorf("deployments ls:\n%s", ls)
	}
	lsJSON := jsonOf[struct {
		Resources []depJSON `json:"resources"`
		Offset    int       `json:"offset"`
	}](t, s.ok(t, "deployments", "ls", "--json", "--name-contains", "agent", "--status", "READY"))
	if len(lsJSON.Resources) != 1 || lsJSON.Resources[0].ID != get.ID || lsJSON.Offset != 1 {
		t.Errorf("deployments ls --json: %+v", lsJSON)
	}
	if byID := jsonOf[depJSON](t, s.ok(t, "deployments", "get", get.ID, "--json")); byID.Name != "my-agent" {
		t.Errorf("get by id: %+v", byID)
	}
	show := s.ok(t, "deployments", "get", "my-agent")
	for _, want := range []string{"READY", "langgraph.json", "FROM_FILE, QUOTED, A, OPENAI_API_KEY", first} {
		if !strings.Contains(show.stdout, want) {
			t.Errorf("deployments get lacks %q:\n%s", want, show.stdout)
		}
	}
	revs := s.ok(t, "revisions", "ls", "my-agent")
	if !strings.Contains(revs.stdout, first) || !strings.Contains(revs.stdout, "DEPLOYED") || !strings.Contains(revs.stdout, "create") {
		t.Errorf("revisions ls:\n%s", revs)
	}
	if rv := jsonOf[revJSON](t, s.ok(t, "revisions", "get", "my-agent/latest", "--json")); rv.ID != first || rv.Status != "DEPLOYED" {
		t.Errorf("revisions get: %+v", rv)
	}
	if rv := s.ok(t, "revisions", "get", first, "--deployment", get.ID); !strings.Contains(rv.stdout, "agent") {
		t.Errorf("revisions get (graphs):\n%s", rv)
	}
	logs := s.ok(t, "logs", "my-agent/"+first)
	for _, want := range []string{"[Queue]", "[FetchSource]", "[Build]", "Activating revision"} {
		if !strings.Contains(logs.stdout, want) {
			t.Errorf("logs lack %q:\n%s", want, logs.stdout)
		}
	}
	if strings.Contains(logs.stdout, "sk-from-env") {
		t.Error("logs show a secret value")
	}
	follow := s.ok(t, "logs", "latest", "--deployment", "my-agent", "--follow", "--json")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(follow.stdout), "\n") {
		var l struct{ Timestamp, Step, Message string }
		if err := json.Unmarshal([]byte(line), &l); err != nil || l.Step == "" || l.Timestamp == "" {
			t.Fatalf("logs --json line %q: %v", line, err)
		}
		n++
	}
	if n < 5 || n != strings.Count(logs.stdout, "\n") {
		t.Errorf("logs --json gave %d lines, the table %d", n, strings.Count(logs.stdout, "\n"))
	}

	// Update: a new commit on a new branch, one secret added, one removed,
	// the others kept.
	repo.Branch("release")
	repo.Commit("more", map[string]string{"agents/extra.py": "x = 1\n"})
	up := jsonOf[deployJSON](t, s.ok(t, "deploy", "--name", "my-agent", "--ref", "release",
		"--secret", "B=2", "--remove-secret", "QUOTED", "--wait", "--json"))
	if up.Revision.Status != "DEPLOYED" || up.Revision.ID == first || up.Revision.Trigger != "patch" {
		t.Fatalf("update: %+v", up)
	}
	if got := secretNames(up.Deployment); got != "A,B,FROM_FILE,OPENAI_API_KEY" {
		t.Errorf("secrets after update: %s", got)
	}
	if ref := up.Deployment.SourceRevisionConfig.RepoRef; ref == nil || *ref != "release" {
		t.Errorf("ref after update: %v", ref)
	}
	// The same directory again: an update without changes rebuilds.
	again := jsonOf[deployJSON](t, s.ok(t, "deploy", dir, "--json"))
	if again.Revision.ID == up.Revision.ID || again.Deployment.ID != get.ID {
		t.Errorf("re-deploy of the same directory: %+v", again)
	}
	_, otherDir := agentRepo(t)
	s.fails(t, 2, "cannot change", "deploy", otherDir)

	// Redeploy the first revision, both argument forms.
	red := jsonOf[deployJSON](t, s.ok(t, "redeploy", "my-agent", first, "--wait", "--json"))
	if red.Revision.Status != "DEPLOYED" || red.Revision.Trigger != "redeploy" || red.Revision.RedeployedFrom == nil || *red.Revision.RedeployedFrom != first {
		t.Errorf("redeploy: %+v", red)
	}
	if r := s.ok(t, "redeploy", "my-agent/"+first); !strings.Contains(r.stdout, "revision") {
		t.Errorf("redeploy D/R:\n%s", r)
	}

	// Threads of the deployment (made over HTTP: the CLI reads them).
	base := "/deployments/" + get.ID + "/threads"
	var ids []string
	for i, user := range []string{"u1", "u2", "u1"} {
		code, body := s.api(t, "POST", base, map[string]any{"metadata": map[string]any{"graph_id": "agent", "user": user, "n": i}})
		if code != 200 {
			t.Fatalf("create thread: %d %s", code, body)
		}
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		_ = json.Unmarshal(body, &th)
		ids = append(ids, th.ThreadID)
	}
	tl := s.ok(t, "threads", "ls", "my-agent")
	for _, id := range ids {
		if !strings.Contains(tl.stdout, id) {
			t.Errorf("threads ls lacks %s:\n%s", id, tl)
		}
	}
	type threadJSON struct {
		ThreadID string         `json:"thread_id"`
		Status   string         `json:"status"`
		Metadata map[string]any `json:"metadata"`
	}
	if page := jsonOf[[]threadJSON](t, s.ok(t, "threads", "ls", get.ID, "--limit", "2", "--json")); len(page) != 2 || page[0].ThreadID == page[1].ThreadID {
		t.Errorf("threads ls --limit 2: %+v", page)
	}
	found := jsonOf[[]threadJSON](t, s.ok(t, "threads", "search", "my-agent", "--metadata", "user=u1",
		"--status", "idle", "--sort-by", "created_at", "--sort-order", "asc", "--json"))
	if len(found) != 2 || found[0].ThreadID != ids[0] || found[1].ThreadID != ids[2] {
		t.Errorf("threads search user=u1 asc: %+v", found)
	}
	if byNum := jsonOf[[]threadJSON](t, s.ok(t, "threads", "search", "my-agent", "--metadata", "n=1", "--json")); len(byNum) != 1 || byNum[0].ThreadID != ids[1] {
		t.Errorf("threads search n=1 (a JSON number): %+v", byNum)
	}
	sr := s.ok(t, "threads", "search", "my-agent", "--metadata", "user=u1", "--limit", "1")
	if !strings.Contains(sr.stderr, "(2 matching)") || !strings.Contains(sr.stderr, "--offset 1") {
		t.Errorf("threads search footer:\n%s", sr)
	}
	th := s.ok(t, "threads", "get", "my-agent", ids[1])
	for _, want := range []string{ids[1], "idle", `"user": "u2"`} {
		if !strings.Contains(th.stdout, want) {
			t.Errorf("threads get lacks %q:\n%s", want, th.stdout)
		}
	}
	if g := jsonOf[threadJSON](t, s.ok(t, "threads", "get", get.ID, ids[1], "--json")); g.Metadata["user"] != "u2" {
		t.Errorf("threads get --json: %+v", g)
	}
	s.fails(t, 2, "--sort-by must be one of", "threads", "search", "my-agent", "--sort-by", "name")
	s.fails(t, 2, "expected KEY=VALUE", "threads", "search", "my-agent", "--metadata", "user")
	s.fails(t, 5, "not found", "threads", "get", "my-agent", "00000000-0000-4000-8000-000000000000")

	// Delete.
	rm := jsonOf[map[string][]string](t, s.ok(t, "deployments", "rm", "my-agent", "--json"))
	if len(rm["deleted"]) != 1 || rm["deleted"][0] != get.ID {
		t.Errorf("rm --json: %v", rm)
	}
	if code, _ := s.api(t, "GET", base, nil); code == 200 {
		t.Errorf("threads still served after rm")
	}
}

// A build that fails exits 3 and shows the failing step's log.
func TestDeployBuildFails(t *testing.T) {
	s := startServer(t)
	dir := filepath.Join(t.TempDir(), "broken")
	r := gittest.NewRepo(t, dir)
	r.Commit("broken", map[string]string{"langgraph.json": `{"graphs": `, "agent.py": "graph = None\n"})

	res := s.run(t, "deploy", dir, "--wait")
	if res.code != 3 {
		t.Fatalf("want exit 3:\n%s", res)
	}
	for _, want := range []string{"ended BUILD_FAILED", "log of the failing step ValidateConfig", "[ValidateConfig] Error: invalid graph configuration langgraph.json", "[MarkBUILD_FAILED]"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if !strings.Contains(res.stdout, "BUILD_FAILED") {
		t.Errorf("summary:\n%s", res.stdout)
	}
	// --json still prints the result (parseable), and still exits 3.
	res = s.run(t, "deploy", dir, "--wait", "--json")
	out := jsonOf[deployJSON](t, res)
	if res.code != 3 || out.Revision.Status != "BUILD_FAILED" || out.Deployment.Name != "broken" {
		t.Fatalf("--json: %+v\n%s", out, res)
	}
	// Without --wait the failure is not awaited: exit 0.
	s.ok(t, "deploy", "--name", "broken")
	// logs --follow of a failed revision ends with its status.
	if l := s.ok(t, "logs", "broken/latest", "--follow"); !strings.Contains(l.stdout, "Revision ends") && !strings.Contains(l.stdout, "[Queue]") {
		t.Errorf("logs --follow:\n%s", l)
	}
}

// On a terminal the progress is a spinner line rewritten in place.
func TestDeployTerminalProgress(t *testing.T) {
	s := startServer(t)
	_, dir := agentRepo(t)
	r := s.runWith(t, runOpts{tty: true}, "deploy", dir, "--wait")
	if r.code != 0 {
		t.Fatalf("deploy: %s", r)
	}
	for _, want := range []string{"\r\033[K", "✓ DEPLOYED in", "[FetchSource]"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("terminal progress lacks %q:\n%q", want, r.stderr)
		}
	}
	// --progress plain wins over the terminal.
	r = s.runWith(t, runOpts{tty: true}, "deploy", dir, "--wait", "--progress", "plain")
	if r.code != 0 || strings.Contains(r.stderr, "\r") {
		t.Errorf("--progress plain on a terminal:\n%q", r.stderr)
	}
}

// A build held at its fetch: --timeout gives up (exit 1) and an interrupt
// exits 130; a repository URL is passed on as repo_url.
func TestDeployWaitTimeoutAndInterrupt(t *testing.T) {
	s := startServer(t)
	_, dir := agentRepo(t)
	gs := gittest.NewServer(t)
	url := gs.Add("held", dir)
	gs.Hold()
	t.Cleanup(gs.Release) // runs before the git server closes

	r := s.run(t, "deploy", url, "--wait", "--timeout", "300ms")
	if r.code != 1 || !strings.Contains(r.stderr, "gave up after 300ms") || !strings.Contains(r.stderr, "--follow") {
		t.Fatalf("timeout:\n%s", r)
	}
	d := jsonOf[depJSON](t, s.ok(t, "deployments", "get", "held", "--json"))
	if *d.SourceConfig.RepoURL != url {
		t.Errorf("repo_url %s, want %s", *d.SourceConfig.RepoURL, url)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r = s.runWith(t, runOpts{ctx: ctx}, "logs", "held/latest", "--follow")
	if r.code != 130 || !strings.Contains(r.stderr, "interrupted") {
		t.Fatalf("interrupt:\n%s", r)
	}
	gs.Release()
	if r := s.ok(t, "logs", "held/latest", "--follow"); !strings.Contains(r.stdout, "Activating revision") {
		t.Errorf("follow after release:\n%s", r)
	}
}
