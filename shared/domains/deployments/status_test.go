package deployments_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/domains/threads"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// threadTargets adapts the control plane's reader to the thread API, as
// the composition does (shared/compose/threadsgroup).
type threadTargets struct{ t *deployments.Targets }

func (a threadTargets) ThreadTarget(ctx context.Context, id string) (threads.Target, error) {
	d, err := a.t.ThreadTarget(ctx, id)
	if errors.Is(err, deployments.ErrDeploymentNotFound) {
		return threads.Target{}, threads.ErrDeploymentNotFound
	}
	if err != nil {
		return threads.Target{}, err
	}
	return threads.Target{DeploymentID: d.DeploymentID, WorkspaceID: d.WorkspaceID, Status: d.Status,
		ActiveRevisionID: d.ActiveRevisionID, Graphs: d.Graphs,
		FailedRevisionID: d.FailedRevisionID, FailedRevisionStatus: d.FailedRevisionStatus}, nil
}

// threadAPI serves the real thread API over e's store, resolving
// deployments with the control plane's reader.
func threadAPI(t *testing.T, e *env) *env {
	svc, err := threads.New(threads.Options{Store: e.app.P.Store, Blobs: e.app.P.Blobs, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	h := threads.NewHandler(svc, threadTargets{deployments.NewTargets(e.app.P.Store)}, e.app.P.Identity)
	api.Mount(mux, threads.Routes, h, api.Edge{Auth: e.app.P.Identity})
	srv := httptest.NewServer(web.Chain(mux, web.Observe(quiet())))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, ws: e.ws}
}

// A deployment whose only revision failed is UNUSED (nothing serves it,
// nothing is on its way), and its thread API answers 409 naming the
// failed revision instead of an endless 503. A new revision makes it
// AWAITING_DATABASE again; a deployed one READY, which a later failure
// does not change.
func TestDeploymentStatusFollowsItsRevisions(t *testing.T) {
	e := start(t, "")
	th := threadAPI(t, e)
	repo := agentRepo(t)
	repo.Branch("broken")
	repo.Commit("break config", map[string]string{"langgraph.json": `{"graphs": {"agent": "./agents/missing.py:graph"}}`})
	repo.Checkout("main")

	body := repoHostBody("status-walk", repo.Dir)
	body["source_revision_config"] = map[string]any{"repo_ref": "broken"}
	d := e.must(201, "POST", "/v2/deployments", body)
	id, first := str(d, "id"), str(d, "latest_revision_id")
	if d["status"] != "AWAITING_DATABASE" {
		t.Fatalf("new deployment: %v", d["status"])
	}
	e.waitRevision(id, first, "BUILD_FAILED")
	status := func() string { return str(e.must(200, "GET", "/v2/deployments/"+id, nil), "status") }
	if got := status(); got != "UNUSED" {
		t.Fatalf("after the only revision failed: %s", got)
	}
	if page := e.must(200, "GET", "/v2/deployments?status=UNUSED", nil); !strings.Contains(mustJSON(page), id) {
		t.Fatalf("status filter UNUSED: %v", page)
	}
	threadsPath := "/deployments/" + id + "/threads"
	for _, c := range []struct{ method, path string }{{"POST", threadsPath}, {"POST", threadsPath + "/search"}} {
		r := th.call(c.method, c.path, "{}")
		if r.Code != http.StatusConflict || !strings.Contains(r.Body, first) || !strings.Contains(r.Body, "BUILD_FAILED") {
			t.Fatalf("%s %s on a failed deployment: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}
	// A redeploy of the failed revision is on its way again, then fails
	// again.
	re := e.must(200, "POST", "/v2/deployments/"+id+"/revisions/"+first+"/redeploy", nil)
	second := str(re, "latest_revision_id")
	if re["status"] != "AWAITING_DATABASE" {
		t.Fatalf("redeploy of an UNUSED deployment: %v", re["status"])
	}
	e.waitRevision(id, second, "BUILD_FAILED")
	if got := status(); got != "UNUSED" {
		t.Fatalf("after the redeploy failed: %s", got)
	}
	if r := th.call("POST", threadsPath, "{}"); r.Code != http.StatusConflict || !strings.Contains(r.Body, second) {
		t.Fatalf("thread API names the latest failed revision: %d %s", r.Code, r.Body)
	}
	// A good revision: AWAITING_DATABASE, then READY, and threads work.
	p := e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"source_revision_config": map[string]any{"repo_ref": "main"}})
	if p["status"] != "AWAITING_DATABASE" {
		t.Fatalf("patch of an UNUSED deployment: %v", p["status"])
	}
	good := str(p, "latest_revision_id")
	e.waitRevision(id, good, "DEPLOYED")
	if got := status(); got != "READY" {
		t.Fatalf("after a revision deployed: %s", got)
	}
	if r := th.call("POST", threadsPath, "{}"); r.Code != 200 {
		t.Fatalf("threads of a READY deployment: %d %s", r.Code, r.Body)
	}
	// A later failure leaves the active revision serving.
	p = e.must(200, "PATCH", "/v2/deployments/"+id, map[string]any{"source_revision_config": map[string]any{"repo_ref": "broken"}})
	e.waitRevision(id, str(p, "latest_revision_id"), "BUILD_FAILED")
	if got := e.must(200, "GET", "/v2/deployments/"+id, nil); got["status"] != "READY" || got["active_revision_id"] != good {
		t.Fatalf("after a later failure: %v %v", got["status"], got["active_revision_id"])
	}
	if r := th.call("POST", threadsPath, "{}"); r.Code != 200 {
		t.Fatalf("threads after a later failure: %d %s", r.Code, r.Body)
	}
}

// A revision that is interrupted (the sweep's verdict on a build without
// progress) also leaves a deployment without an active revision UNUSED.
func TestInterruptedOnlyRevisionMakesDeploymentUnused(t *testing.T) {
	e := start(t, "")
	srv := gittest.NewServer(t)
	url := srv.Add("agent", agentRepo(t).Dir)
	srv.Hold()
	defer srv.Release()
	d := e.must(201, "POST", "/v2/deployments", repoHostBody("interrupted", url))
	id, rev := str(d, "id"), str(d, "latest_revision_id")
	e.waitRevision(id, rev, "BUILDING")
	if err := e.service().MarkFailed(context.Background(), id, rev, deployments.RevInterrupted, "No build progress"); err != nil {
		t.Fatal(err)
	}
	srv.Release()
	if r := e.revision(id, rev); r["status"] != "INTERRUPTED" {
		t.Fatalf("revision %v", r["status"])
	}
	if got := e.must(200, "GET", "/v2/deployments/"+id, nil); got["status"] != "UNUSED" {
		t.Fatalf("interrupted only revision: deployment %v", got["status"])
	}
}

// A repository URL whose server answers an error page fails the build with
// the status, and no part of the page reaches the status message, the
// build log or any API answer.
func TestCloneFailureDoesNotEchoTheServer(t *testing.T) {
	e := start(t, "")
	for _, status := range []int{404, 500} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "<html><body>internal admin console; token=SECRET-9c1d "+strings.Repeat("SECRET-9c1d ", 300)+"</body></html>")
		}))
		defer srv.Close()
		d := e.must(201, "POST", "/v2/deployments", repoHostBody("internal-"+http.StatusText(status)[:3], srv.URL+"/repo.git"))
		id, rev := str(d, "id"), str(d, "latest_revision_id")
		r := e.waitRevision(id, rev, "BUILD_FAILED")
		answers := []string{mustJSON(r), e.logText(id, rev),
			e.call("GET", "/v2/deployments/"+id, nil).Body,
			e.call("GET", "/v2/deployments/"+id+"/revisions", nil).Body,
			e.call("GET", "/v2/deployments/"+id+"/revisions/"+rev+"/logs", nil).Body}
		for _, a := range answers {
			if strings.Contains(a, "SECRET") || strings.Contains(a, "<html") {
				t.Fatalf("HTTP %d: the server's page leaked: %.400s", status, a)
			}
		}
		if msg := str(r, "status_message"); !strings.Contains(msg, fmt.Sprintf("HTTP %d", status)) {
			t.Fatalf("HTTP %d: status_message lacks the status: %q", status, msg)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
