package deployments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
)

// 20 concurrent PATCHes: exactly 20 new revisions, latest_revision_id names
// the newest, and every older revision ended by the supersede rules
// (SKIPPED while queued, INTERRUPTED once building) or DEPLOYED before the
// next one came.
func TestConcurrentPatches(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("busy", repo.Dir))
	id := str(d, "id")
	const n = 20
	var wg sync.WaitGroup
	latest := make([]string, n)
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.call("PATCH", "/v2/deployments/"+id, map[string]any{
				"secrets": []any{map[string]any{"name": "OPENAI_API_KEY", "value": fmt.Sprintf("sk-%d", i)}},
			})
			if r.Code != 200 {
				errs <- fmt.Sprintf("%d %s", r.Code, r.Body)
				return
			}
			var v map[string]any
			_ = json.Unmarshal([]byte(r.Body), &v)
			latest[i] = str(v, "latest_revision_id")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	revs := e.revisions(id)
	if len(revs) != n+1 {
		t.Fatalf("%d revisions, want %d", len(revs), n+1)
	}
	// Each PATCH answered with its own new revision.
	seen := map[string]bool{}
	for _, l := range latest {
		if seen[l] || l == str(d, "latest_revision_id") {
			t.Fatalf("two PATCHes answered revision %s", l)
		}
		seen[l] = true
	}
	newest := str(revs[0], "id")
	got := e.must(200, "GET", "/v2/deployments/"+id, nil)
	if str(got, "latest_revision_id") != newest || !seen[newest] {
		t.Fatalf("latest_revision_id %s, newest %s", got["latest_revision_id"], newest)
	}
	e.waitRevision(id, newest, "DEPLOYED")
	counts := map[string]int{}
	for _, r := range e.revisions(id)[1:] {
		st := str(r, "status")
		counts[st]++
		switch st {
		case "SKIPPED", "INTERRUPTED":
			if !strings.Contains(str(r, "status_message"), "Superseded") {
				t.Errorf("revision %s %s without reason: %v", r["id"], st, r["status_message"])
			}
		case "DEPLOYED":
		default:
			t.Errorf("older revision %s is %s", r["id"], st)
		}
	}
	t.Logf("older revisions: %v", counts)
	if str(e.must(200, "GET", "/v2/deployments/"+id, nil), "active_revision_id") != newest {
		t.Fatal("the newest revision is not active")
	}
	// The newest revision carries the secret of the PATCH that made it.
	env, err := e.service().OpenSecrets(context.Background(), id, newest)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range latest {
		if l == newest && env["OPENAI_API_KEY"] != fmt.Sprintf("sk-%d", i) {
			t.Fatalf("newest revision has secret %q, its PATCH sent sk-%d", env["OPENAI_API_KEY"], i)
		}
	}
}

// A restart in the middle of a build: the fetch is held by the git server,
// the app stops (as a process would), and on the same data directory the
// revision resumes and reaches DEPLOYED. It is never left unfinished.
func TestRestartMidBuild(t *testing.T) {
	dir := t.TempDir()
	repo := agentRepo(t)
	git := gittest.NewServer(t)
	url := git.Add("agent", repo.Dir)
	git.Hold()

	e := start(t, dir)
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("restart", url))
	id, rev := str(d, "id"), str(d, "latest_revision_id")
	e.waitRevision(id, rev, "BUILDING")
	deadline := time.Now().Add(20 * time.Second)
	for git.Waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the fetch never reached the git server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.stop()
	git.Release()

	e2 := start(t, dir)
	r := e2.waitRevision(id, rev, "DEPLOYED")
	if str(r, "source_revision_config", "repo_commit_sha") == "" {
		t.Fatalf("resumed revision without commit: %v", r)
	}
	if got := e2.must(200, "GET", "/v2/deployments/"+id, nil); str(got, "active_revision_id") != rev {
		t.Fatalf("after restart: %v", got)
	}
	if git.Fetches.Load() < 2 {
		t.Fatalf("the fetch was not retried after the restart (%d fetches)", git.Fetches.Load())
	}
}

// Revisions whose queue message was lost with the process (the local queue
// is in memory) are enqueued again on start-up.
func TestRestartRecoversQueuedRevisions(t *testing.T) {
	dir := t.TempDir()
	repo := agentRepo(t)
	e := start(t, dir)
	e.cancel() // no consumer: messages stay in memory and are lost on stop
	<-e.done
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("lost", repo.Dir))
	img := e.must(201, "POST", "/v2/deployments", imageBody("lost-image"))
	if st := str(e.revision(str(d, "id"), str(d, "latest_revision_id")), "status"); st != "QUEUED" {
		t.Fatalf("status %s", st)
	}
	e.stop()
	e2 := start(t, dir)
	e2.waitRevision(str(d, "id"), str(d, "latest_revision_id"), "DEPLOYED")
	e2.waitRevision(str(img, "id"), str(img, "latest_revision_id"), "DEPLOYED")
}

// The sweep ends a revision that made no progress for too long INTERRUPTED.
func TestSweepInterruptsStaleRevisions(t *testing.T) {
	dir := t.TempDir()
	repo := agentRepo(t)
	e := start(t, dir)
	e.cancel()
	<-e.done
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("stale", repo.Dir))
	id, rev := str(d, "id"), str(d, "latest_revision_id")
	// A fresh service over the same store with a tiny StaleAfter.
	stale, err := deployments.New(deployments.Options{
		Store: e.app.P.Store, Blobs: e.app.P.Blobs, Queue: e.app.P.Queue,
		Keeper: mustLocalKeeper(t), StaleAfter: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := stale.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := e.revision(id, rev)
	if r["status"] != "INTERRUPTED" || !strings.Contains(str(r, "status_message"), "No build progress") {
		t.Fatalf("stale revision: %v", r)
	}
}

// Secrets: stored encrypted, shown redacted, and a PATCH that sends the
// redacted value back keeps the stored value.
func TestSecretsRedactionAndEncryption(t *testing.T) {
	e := start(t, "")
	body := imageBody("secretive")
	body["secrets"] = []any{
		map[string]any{"name": "OPENAI_API_KEY", "value": "sk-plaintext-one"},
		map[string]any{"name": "DB_PASSWORD", "value": "hunter2-plaintext"},
	}
	d := e.must(201, "POST", "/v2/deployments", body)
	id := str(d, "id")
	for _, s := range d["secrets"].([]any) {
		if s.(map[string]any)["value"] != deployments.Redacted {
			t.Fatalf("unredacted: %v", s)
		}
	}
	// PATCH: keep one (redacted value sent back), change one, drop none.
	p := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"secrets": []any{
		map[string]any{"name": "OPENAI_API_KEY", "value": deployments.Redacted},
		map[string]any{"name": "DB_PASSWORD", "value": "changed-plaintext"},
		map[string]any{"name": "NEW_ONE", "value": ""},
	}})
	rev := str(p, "latest_revision_id")
	env, err := e.service().OpenSecrets(context.Background(), id, rev)
	if err != nil {
		t.Fatal(err)
	}
	if env["OPENAI_API_KEY"] != "sk-plaintext-one" || env["DB_PASSWORD"] != "changed-plaintext" || env["NEW_ONE"] != "" || len(env) != 3 {
		t.Fatalf("secrets after patch: %v", env)
	}
	// GET and list never show values.
	for _, path := range []string{"/v2/deployments/" + id, "/v2/deployments"} {
		if r := e.call("GET", path, nil); strings.Contains(r.Body, "plaintext") {
			t.Fatalf("%s shows a secret: %s", path, r.Body)
		}
	}
	e.waitRevision(id, rev, "DEPLOYED")
	// Nothing on disk holds a plaintext value: store, blobs (logs), keys.
	err = filepath.Walk(e.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, plain := range []string{"sk-plaintext-one", "hunter2-plaintext", "changed-plaintext"} {
			if bytes.Contains(data, []byte(plain)) {
				t.Errorf("%s holds %s in plaintext", p, plain)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestListsAndFilters(t *testing.T) {
	e := start(t, "")
	e.cancel()
	<-e.done
	repo := agentRepo(t)
	var ids []string
	for i := 0; i < 5; i++ {
		body := repoHostBody(fmt.Sprintf("list-%d", i), repo.Dir)
		if i%2 == 1 {
			body = merge(body, map[string]any{"source_config.deployment_type": "prod"})
		}
		ids = append(ids, str(e.must(201, "POST", "/v2/deployments", body), "id"))
	}
	e.must(201, "POST", "/v2/deployments", imageBody("other-image"))
	names := func(q string) []string {
		page := e.must(200, "GET", "/v2/deployments"+q, nil)
		var out []string
		for _, r := range page["resources"].([]any) {
			out = append(out, r.(map[string]any)["name"].(string))
		}
		return out
	}
	if got := strings.Join(names("?name_contains=list-"), ","); got != "list-4,list-3,list-2,list-1,list-0" {
		t.Fatalf("newest first: %s", got)
	}
	if got := strings.Join(names("?deployment_type=prod"), ","); got != "list-3,list-1" {
		t.Fatalf("deployment_type: %s", got)
	}
	if got := strings.Join(names("?deployment_ids="+ids[0]+","+ids[2]), ","); got != "list-2,list-0" {
		t.Fatalf("deployment_ids: %s", got)
	}
	if got := names("?status=READY"); len(got) != 0 {
		t.Fatalf("status: %v", got)
	}
	if got := len(names("?status=AWAITING_DATABASE")); got != 6 {
		t.Fatalf("status: %d", got)
	}
	page := e.must(200, "GET", "/v2/deployments?limit=2&offset=2", nil)
	if page["offset"] != 4.0 || len(page["resources"].([]any)) != 2 {
		t.Fatalf("paging: %v", page)
	}
	page = e.must(200, "GET", "/v2/deployments?limit=20&offset=4", nil)
	if page["offset"] != 6.0 || len(page["resources"].([]any)) != 2 {
		t.Fatalf("last page: %v", page)
	}
	// Another workspace sees none of them, and its 404s look the same.
	ws := e.must(201, "POST", "/api/v1/workspaces", map[string]any{"display_name": "second"})
	other := e.call("GET", "/v2/deployments", nil, "X-Tenant-Id", str(ws, "id"))
	if other.Code != 200 || len(other.JSON(t)["resources"].([]any)) != 0 {
		t.Fatalf("other workspace: %d %s", other.Code, other.Body)
	}
	r := e.call("GET", "/v2/deployments/"+ids[0], nil, "X-Tenant-Id", str(ws, "id"))
	if r.Code != 404 || r.Body != `{"detail":"Deployment ID `+ids[0]+` not found."}` {
		t.Fatalf("cross-workspace read: %d %s", r.Code, r.Body)
	}
}

func TestListeners(t *testing.T) {
	e := start(t, "")
	l := e.must(201, "POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "cluster-a", "compute_config": map[string]any{"k8s_namespaces": []any{"agents", "staging"}}, "version": "0.1.0"})
	lid := str(l, "id")
	if r := e.call("POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "cluster-a", "compute_config": map[string]any{}}); r.Code != 409 || !strings.Contains(r.Body, "already exists") {
		t.Fatalf("duplicate compute id: %d %s", r.Code, r.Body)
	}
	hasLoc(t, e.call("POST", "/v2/listeners", map[string]any{"compute_type": "ecs", "compute_id": "x", "compute_config": map[string]any{}}), "body.compute_type")
	hasLoc(t, e.call("POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_config": map[string]any{}}), "body.compute_id")
	hasLoc(t, e.call("POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "y"}), "body.compute_config")
	hasLoc(t, e.call("POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "y", "compute_config": map[string]any{"k8s_namespaces": []any{"Bad NS"}}}), "body.compute_config.k8s_namespaces.0")
	hasLoc(t, e.call("PATCH", "/v2/listeners/"+lid, map[string]any{"compute_id": "z"}), "body.compute_id")

	// A deployment on the listener: the namespace must be one it offers.
	body := merge(imageBody("on-listener"), map[string]any{"source_config.listener_id": lid, "source_config.listener_config": map[string]any{"k8s_namespace": "prod"}})
	hasLoc(t, e.call("POST", "/v2/deployments", body), "body.source_config.listener_config.k8s_namespace")
	body = merge(body, map[string]any{"source_config.listener_config": map[string]any{"k8s_namespace": "agents"}})
	d := e.must(201, "POST", "/v2/deployments", body)
	if str(d, "source_config", "listener_id") != lid || str(d, "source_config", "listener_config", "k8s_namespace") != "agents" {
		t.Fatalf("deployment: %v", d)
	}
	e.waitRevision(str(d, "id"), str(d, "latest_revision_id"), "DEPLOYED")

	p := e.must(200, "PATCH", "/v2/listeners/"+lid, map[string]any{"version": "0.2.0"})
	if p["version"] != "0.2.0" || p["compute_id"] != "cluster-a" {
		t.Fatalf("patch: %v", p)
	}
	list := e.must(200, "GET", "/v2/listeners", nil)
	if len(list["resources"].([]any)) != 1 || list["offset"] != 1.0 {
		t.Fatalf("list: %v", list)
	}
	if r := e.call("DELETE", "/v2/listeners/"+lid, nil); r.Code != 409 {
		t.Fatalf("delete of a used listener: %d %s", r.Code, r.Body)
	}
	e.must(204, "DELETE", "/v2/deployments/"+str(d, "id"), nil)
	if r := e.call("DELETE", "/v2/listeners/"+lid, nil); r.Code != 204 {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	if r := e.call("GET", "/v2/listeners/"+lid, nil); r.Code != 404 {
		t.Fatalf("get after delete: %d", r.Code)
	}
	// The compute id is free again.
	e.must(201, "POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "cluster-a", "compute_config": map[string]any{"k8s_namespaces": nil}})
}

// Hosted mode (no local repositories): only https URLs to public hosts;
// listeners and images are for self-hosted installations.
func TestHostedRules(t *testing.T) {
	e := start(t, "", func(c *compose.Config) { c.AllowLocalRepos = false })
	repo := agentRepo(t)
	ints := e.call("GET", "/v1/integrations/repo_host/install", nil)
	var list []deployments.Integration
	if err := json.Unmarshal([]byte(ints.Body), &list); err != nil || len(list) != 1 || list[0].AllowsLocalRepositories {
		t.Fatalf("integrations: %s", ints.Body)
	}
	for _, u := range []string{repo.Dir, "file://" + repo.Dir, "http://github.com/a/b", "https://127.0.0.1/a.git", "https://10.0.0.8/a.git", "https://[::1]/a.git", "https://localhost/a.git", "https://169.254.169.254/latest"} {
		hasLoc(t, e.call("POST", "/v2/deployments", repoHostBody("hosted", u)), "body.source_config.repo_url")
	}
	// A name that passes the static check but resolves to loopback is
	// refused when the build connects: BUILD_FAILED, the server untouched.
	git := gittest.NewServer(t)
	url := git.Add("agent", repo.Dir)
	port := strings.TrimPrefix(url, "http://127.0.0.1:")
	host, _ := os.Hostname()
	if addrs, err := netLookup(host); err == nil && len(addrs) > 0 && !anyPublic(addrs) {
		d := e.must(201, "POST", "/v2/deployments", repoHostBody("resolves-private", "https://"+host+":"+port))
		r := e.waitRevision(str(d, "id"), str(d, "latest_revision_id"), "BUILD_FAILED")
		if !strings.Contains(str(r, "status_message"), "non-public") {
			t.Fatalf("reason: %v", r["status_message"])
		}
		if git.Fetches.Load() != 0 {
			t.Fatal("the private server was reached")
		}
	} else {
		t.Logf("host name %q does not resolve to a private address here; the dial check is covered in package builds", host)
	}
}

// Both sources and listeners follow the installation kind in AWS mode; the
// rule is applied by the service, so it is checked here on the service.
func TestSourceAvailability(t *testing.T) {
	e := start(t, "")
	hosted, err := deployments.New(deployments.Options{Store: e.app.P.Store, Blobs: e.app.P.Blobs,
		Queue: e.app.P.Queue, Keeper: mustLocalKeeper(t), RepoHost: true})
	if err != nil {
		t.Fatal(err)
	}
	h := httptestHandler(t, hosted, e)
	r := h.call("POST", "/v2/deployments", imageBody("img"))
	if r.Code != 400 || !strings.Contains(r.Body, "self-hosted") {
		t.Fatalf("image on hosted: %d %s", r.Code, r.Body)
	}
	if r := h.call("POST", "/v2/listeners", map[string]any{"compute_type": "k8s", "compute_id": "c", "compute_config": map[string]any{}}); r.Code != 403 {
		t.Fatalf("listener on hosted: %d %s", r.Code, r.Body)
	}
}

// A revision superseded while it builds ends INTERRUPTED at once; its
// build stops at its next step and never activates it.
func TestSupersedeInterruptsBuilding(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	git := gittest.NewServer(t)
	url := git.Add("agent", repo.Dir)
	git.Hold()
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("superseded", url))
	id, old := str(d, "id"), str(d, "latest_revision_id")
	e.waitRevision(id, old, "BUILDING")
	p := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"source_revision_config": map[string]any{"graph_config_path": "langgraph.json"}})
	r := e.revision(id, old)
	if r["status"] != "INTERRUPTED" {
		t.Fatalf("building revision superseded: %v", r["status"])
	}
	git.Release()
	e.waitRevision(id, str(p, "latest_revision_id"), "DEPLOYED")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(e.logText(id, old), "Stopping") {
		if time.Now().After(deadline) {
			t.Fatalf("the old build did not stop:\n%s", e.logText(id, old))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.revision(id, old); r["status"] != "INTERRUPTED" {
		t.Fatalf("old revision changed after it was superseded: %v", r["status"])
	}
	if got := e.must(200, "GET", "/v2/deployments/"+id, nil); str(got, "active_revision_id") != str(p, "latest_revision_id") {
		t.Fatalf("active: %v", got["active_revision_id"])
	}
}

func TestIntegrations(t *testing.T) {
	e := start(t, "")
	r := e.call("GET", "/v1/integrations/repo_host/install", nil)
	var list []map[string]any
	if r.Code != 200 || json.Unmarshal([]byte(r.Body), &list) != nil || len(list) != 1 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	in := list[0]
	if in["kind"] != "local" || in["allows_local_repositories"] != true || str(in, "id") == "" || in["installation_id"] == nil || in["name"] == "" {
		t.Fatalf("integration %v", in)
	}
	// Stable across calls and restarts (seeded once).
	again := e.call("GET", "/v1/integrations/repo_host/install", nil)
	if again.Body != r.Body {
		t.Fatalf("integration changed: %s", again.Body)
	}
	// Using it explicitly works; an integration of another workspace is
	// refused like a missing one.
	repo := agentRepo(t)
	e.must(201, "POST", "/v2/deployments", merge(repoHostBody("explicit", repo.Dir), map[string]any{"source_config.integration_id": in["id"]}))
	ws := e.must(201, "POST", "/api/v1/workspaces", map[string]any{"display_name": "elsewhere"})
	hasLoc(t, e.call("POST", "/v2/deployments", merge(repoHostBody("foreign", repo.Dir), map[string]any{"source_config.integration_id": in["id"]}), "X-Tenant-Id", str(ws, "id")), "body.source_config.integration_id")
}

// Push webhooks: a bad signature changes nothing; a signed push to the
// configured branch builds deployments with build_on_push; tags never do.
func TestWebhook(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	onPush := e.must(201, "POST", "/v2/deployments", merge(repoHostBody("on-push", repo.Dir), map[string]any{"source_config.build_on_push": true}))
	noPush := e.must(201, "POST", "/v2/deployments", repoHostBody("no-push", repo.Dir))
	push := func(ref string, repoURL string) []byte {
		b, _ := json.Marshal(map[string]any{"ref": ref, "after": strings.Repeat("a", 40), "repository": map[string]any{
			"clone_url": repoURL, "html_url": repoURL, "default_branch": "main"}})
		return b
	}
	send := func(body []byte, sig, event string) resp {
		return e.call("POST", "/v1/integrations/repo_host/webhook", string(body), "X-Api-Key", "", deployments.SignatureHeader, sig, deployments.EventHeader, event)
	}
	count := func(id string) int { return len(e.revisions(id)) }
	body := push("refs/heads/main", repo.Dir)
	secret := e.cfg.WebhookSecret
	for _, c := range []struct{ sig, why string }{
		{"", "missing"},
		{"sha256=" + strings.Repeat("0", 64), "wrong"},
		{deployments.Sign("other-secret", body), "other secret"},
		{"sha1=abc", "other algorithm"},
		{deployments.Sign(secret, append([]byte(" "), body...)), "signature of another body"},
	} {
		if r := send(body, c.sig, "push"); r.Code != 401 {
			t.Fatalf("%s signature: %d %s", c.why, r.Code, r.Body)
		}
	}
	if count(str(onPush, "id")) != 1 || count(str(noPush, "id")) != 1 {
		t.Fatal("a badly signed webhook created revisions")
	}
	// Signed: ping, other events, tags, deletions and other branches build nothing.
	if r := send(body, deployments.Sign(secret, body), "ping"); r.Code != 200 {
		t.Fatalf("ping: %d %s", r.Code, r.Body)
	}
	for _, b := range [][]byte{push("refs/tags/v1", repo.Dir), push("refs/heads/other", repo.Dir), push("refs/heads/main", "https://github.com/acme/unrelated")} {
		if r := send(b, deployments.Sign(secret, b), "push"); r.Code != 200 || strings.Contains(r.Body, "revision_id") {
			t.Fatalf("no-op push: %d %s", r.Code, r.Body)
		}
	}
	if r := send([]byte("{"), deployments.Sign(secret, []byte("{")), "push"); r.Code != 400 {
		t.Fatalf("bad JSON: %d %s", r.Code, r.Body)
	}
	if count(str(onPush, "id")) != 1 {
		t.Fatal("a no-op push created a revision")
	}
	// A push to main builds the build_on_push deployment only.
	repo.Commit("pushed", map[string]string{"agents/agent.py": "graph = 'pushed'\n"})
	r := send(body, deployments.Sign(secret, body), "push")
	if r.Code != 200 {
		t.Fatalf("push: %d %s", r.Code, r.Body)
	}
	var res deployments.WebhookResult
	_ = json.Unmarshal([]byte(r.Body), &res)
	if len(res.Revisions) != 1 || res.Revisions[0].DeploymentID != str(onPush, "id") {
		t.Fatalf("push result: %s", r.Body)
	}
	rv := e.waitRevision(str(onPush, "id"), res.Revisions[0].RevisionID, "DEPLOYED")
	if rv["trigger"] != "push" {
		t.Fatalf("trigger %v", rv["trigger"])
	}
	if count(str(noPush, "id")) != 1 {
		t.Fatal("build_on_push false deployment was built")
	}
	// Webhooks are refused when no secret is configured.
	e2 := start(t, "", func(c *compose.Config) { c.WebhookSecret = "" })
	if r := e2.call("POST", "/v1/integrations/repo_host/webhook", string(body), deployments.SignatureHeader, deployments.Sign("", body), deployments.EventHeader, "push"); r.Code != 403 {
		t.Fatalf("no secret: %d %s", r.Code, r.Body)
	}
}
