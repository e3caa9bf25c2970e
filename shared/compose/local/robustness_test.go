package local_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/kernel/api"
)

// badBodies are request bodies no handler expects: malformed, of the wrong
// JSON type, with wrong field types, out-of-range numbers, odd nesting.
var badBodies = []string{
	"",
	"{",
	"[]",
	"null",
	`"x"`,
	"12",
	`{"limit": "x", "offset": -1}`,
	`{"limit": 1e400}`,
	`{"limit": 99999999999999999999999}`,
	`{"thread_id": 5, "metadata": [1], "values": "x", "supersteps": {}}`,
	`{"metadata": {"a": [1, {"b": null}]}, "status": 7, "sort_by": {}}`,
	`{"values": {"messages": [1, "x", null, {"type": 5}]}, "as_node": ["a"]}`,
	`{"supersteps": [{"updates": [{"values": null}]}, null, 3]}`,
	`{"name": "", "source": "nope", "source_config": null, "secrets": [null]}`,
	`{"before": {"configurable": 3}, "limit": 0, "checkpoint": "x"}`,
	`{"schemas": 5, "Operations": [{"op": "bogus", "path": 1}]}`,
	strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
	`{"a": "` + strings.Repeat("\\u0000", 1000) + `"}`,
}

// badIDs replace path parameters the routes do not expect.
var badIDs = []string{"not-a-uuid", "00000000-0000-0000-0000-000000000000", strings.Repeat("a", 2000), "%00", "..%2F..%2Fetc%2Fpasswd"}

var badQueries = []string{"", "?limit=-1&offset=abc", "?limit=99999999999999999999&offset=1e9",
	"?status=&deployment_ids=,,x&name_contains=%00", "?filter=userName%20eq&startIndex=-5&count=x"}

// No input, on any route of the table, is answered with a 5xx other than
// the thread API's documented 503, and every error is a JSON body with a
// detail. This walks the whole route table, so a new route is covered the
// day it is added.
func TestNoInputGivesAServerError(t *testing.T) {
	if testing.Short() {
		t.Skip("walks every route with every bad input")
	}
	dir := t.TempDir()
	app := newApp(t, dir)
	srv := httptest.NewServer(app.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = app.RunBackground(ctx) }()
	defer func() {
		srv.Close()
		cancel()
		<-done
		_ = app.Close()
	}()
	c := client{t: t, url: srv.URL}

	// Real ids, so the checks also reach past the lookups: a deployed
	// external_container deployment, a thread on it, a listener.
	code, body := c.do("POST", "/v2/deployments", adminKey, `{"name":"robust","source":"external_container",
		"source_config":{},"source_revision_config":{"image_uri":"ghcr.io/acme/agent:1.0"},"secrets":[]}`)
	if code != 201 {
		t.Fatalf("create deployment: %d %s", code, body)
	}
	var dep struct {
		ID               string `json:"id"`
		LatestRevisionID string `json:"latest_revision_id"`
	}
	_ = json.Unmarshal([]byte(body), &dep)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, b := c.do("GET", "/v2/deployments/"+dep.ID, adminKey, "")
		if strings.Contains(b, `"status":"READY"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment not READY: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, body = c.do("POST", "/deployments/"+dep.ID+"/threads", adminKey, `{"metadata":{"k":"v"}}`)
	if code != 200 {
		t.Fatalf("create thread: %d %s", code, body)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	_ = json.Unmarshal([]byte(body), &th)
	_, sb := c.do("GET", "/deployments/"+dep.ID+"/threads/"+th.ThreadID+"/state", adminKey, "")
	var st struct {
		CheckpointID string `json:"checkpoint_id"`
	}
	_ = json.Unmarshal([]byte(sb), &st)
	code, body = c.do("POST", "/api/v1/orgs/current/scim-tokens", adminKey, `{"description":"robustness"}`)
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(body), &tok); code != 201 || err != nil || tok.Token == "" {
		t.Fatalf("create SCIM token: %d %s", code, body)
	}
	scimToken = tok.Token
	real := map[string]string{
		"deployment_id": dep.ID, "revision_id": dep.LatestRevisionID,
		"thread_id": th.ThreadID, "checkpoint_id": st.CheckpointID,
	}

	checked, statuses := 0, map[int]int{}
	for _, g := range catalog.Groups() {
		for _, r := range g.Routes {
			// Deletions go last so the other routes still see the real ids.
			if r.Method == "DELETE" {
				continue
			}
			checked += probe(t, c, r, real, statuses)
		}
	}
	for _, g := range catalog.Groups() {
		for _, r := range g.Routes {
			if r.Method == "DELETE" {
				checked += probe(t, c, r, real, statuses)
			}
		}
	}
	t.Logf("%d requests, none answered with a server error; statuses %v", checked, statuses)
	// The walk must reach past authentication and validation: some of it
	// succeeds, some of it is turned away by each kind of check.
	for _, want := range []int{200, 201, 204, 404, 422} {
		if statuses[want] == 0 {
			t.Errorf("no request answered %d: the walk does not reach that far", want)
		}
	}
}

// probe sends every bad body, id and query to route r, and reports a
// response that is a server error or an error without a JSON detail.
func probe(t *testing.T, c client, r api.Spec, real map[string]string, statuses map[int]int) int {
	t.Helper()
	paths := []string{fill(r.Path, func(name string) string { return real[name] })}
	for _, id := range badIDs {
		paths = append(paths, fill(r.Path, func(string) string { return id }))
	}
	n := 0
	for _, p := range paths {
		for _, q := range badQueries {
			for _, b := range badBodies {
				if r.Method == "GET" && b != "" {
					continue
				}
				code, body := send(t, c, r.Method, p+q, b)
				n++
				statuses[code]++
				what := fmt.Sprintf("%s %s%s body %.40q", r.Method, p, q, b)
				if code >= 500 && code != 503 {
					t.Errorf("%s: %d %s", what, code, body)
					continue
				}
				if code >= 400 && !hasDetail(body) {
					t.Errorf("%s: %d without a JSON detail: %.200s", what, code, body)
				}
			}
		}
	}
	return n
}

// scimToken authenticates the SCIM routes, which take no API key.
var scimToken string

// send is client.do with the credentials each route group takes.
func send(t *testing.T, c client, method, path, body string) (int, string) {
	t.Helper()
	if !strings.HasPrefix(path, "/scim/") {
		return c.do(method, path, adminKey, body)
	}
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+scimToken)
	req.Header.Set("Content-Type", "application/scim+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// fill replaces each {name} of a route path with value(name), or a fresh
// UUID when value has none.
func fill(path string, value func(string) string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			v := value(strings.Trim(p, "{}"))
			if v == "" {
				v = "11111111-2222-4333-8444-555555555555"
			}
			parts[i] = v
		}
	}
	return strings.Join(parts, "/")
}

func hasDetail(body string) bool {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return false
	}
	_, ok := m["detail"]
	return ok
}
