package ratelimits_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/lambdaproxy"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// In AWS the client is API Gateway's requestContext.identity.sourceIp,
// read through the Lambda proxy adapter; headers cannot change it.
func TestLambdaSourceIP(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		clk := newClock()
		cfg := ratelimits.Config{Enabled: true}
		if trusted {
			cfg.TrustedProxies = mustProxies("10.0.0.0/8")
		}
		svc, err := ratelimits.New(ratelimits.Options{Config: cfg, Limiter: ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now})})
		if err != nil {
			t.Fatal(err)
		}
		fn := lambdaproxy.Handler(svc.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
		call := func(sourceIP, xff string) events.APIGatewayProxyResponse {
			t.Helper()
			ev := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/nowhere", Resource: "/{proxy+}",
				MultiValueHeaders: map[string][]string{"X-Forwarded-For": {xff}}}
			ev.RequestContext.Identity.SourceIP = sourceIP
			ev.RequestContext.Stage = "prod"
			resp, err := fn(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		remaining := func(resp events.APIGatewayProxyResponse) int {
			n, _ := strconv.Atoi(resp.MultiValueHeaders["Ratelimit-Remaining"][0])
			return n
		}
		if r := call("198.51.100.1", "203.0.113.1"); r.StatusCode != 200 || remaining(r) != 99 {
			t.Fatalf("first: %+v", r)
		}
		// Another X-Forwarded-For from the same source is the same client.
		if r := call("198.51.100.1", "203.0.113.2"); remaining(r) != 98 {
			t.Fatalf("spoofed header from a direct client: %+v", r)
		}
		// Another source is another client.
		if r := call("198.51.100.2", "203.0.113.1"); remaining(r) != 99 {
			t.Fatalf("second source: %+v", r)
		}
		// Behind a trusted proxy (a sourceIp in the list), the header counts.
		r1, r2 := call("10.1.1.1", "203.0.113.7"), call("10.1.1.1", "203.0.113.8")
		if trusted && (remaining(r1) != 99 || remaining(r2) != 99) || !trusted && remaining(r2) != 98 {
			t.Fatalf("trusted=%v: %d %d", trusted, remaining(r1), remaining(r2))
		}
	}
}

// testAuth adapts identity.Service to api.Authenticator.
type testAuth struct{ *identity.Service }

func (a testAuth) Authenticate(r *http.Request) (auth.Principal, error) {
	return a.AuthenticateRequest(r)
}

type queryHandler struct{}

func (queryHandler) query(w http.ResponseWriter, r *http.Request) error {
	web.WriteJSON(w, http.StatusOK, map[string]string{"org": api.Caller(r).OrganizationID})
	return nil
}

var queryRoutes = api.Group[queryHandler]{Name: "tracing", Mounts: []string{"/api/v1"}, Routes: []api.Route[queryHandler]{
	{Method: "POST", Path: "/runs/query", Auth: api.Key, Limit: "Run query (API)", Handle: queryHandler.query},
	{Method: "GET", Path: "/runs/{run_id}", Auth: api.Key, Limit: "Run lookup", Handle: queryHandler.query},
	{Method: "GET", Path: "/v2/things", Auth: api.Key, Handle: queryHandler.query},
}}

// The middleware as the composition wires it: Wrap on api.Mount's edge
// and Handler around the whole mux, over a real identity service. Each
// request is counted once, before authentication (bad keys are limited
// too), and paths outside the route table are limited as well.
func TestMountedEdge(t *testing.T) {
	ctx := context.Background()
	st := openBolt(t)
	idn := identity.New(st)
	const adminKey = "ap_ratelimits_admin_key_0123456789abcdef"
	if _, err := idn.Bootstrap(ctx, adminKey); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	svc, err := ratelimits.New(ratelimits.Options{Config: ratelimits.Config{Enabled: true},
		Limiter: ratelimits.NewMemoryLimiter(ratelimits.MemoryOptions{Now: clk.Now})})
	if err != nil {
		t.Fatal(err)
	}
	mux := web.NewMux()
	api.Mount(mux, queryRoutes, queryHandler{}, api.Edge{Auth: testAuth{idn}, Wrap: svc.Wrap})
	srv := httptest.NewServer(svc.Handler(mux))
	defer srv.Close()

	// The routes' declared categories agree with the table (the drift
	// check the composition runs over every group).
	if err := ratelimits.CheckLimits(queryRoutes.Specs()...); err != nil {
		t.Error(err)
	}
	wrong := queryRoutes.Specs()[0]
	wrong.Limit = "Run query (User)"
	if err := ratelimits.CheckLimits(wrong); err == nil || !strings.Contains(err.Error(), "POST /runs/query") {
		t.Errorf("a wrong Limit passed the check: %v", err)
	}

	send := func(method, path, key string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := 1; i <= 15; i++ {
		path := "/runs/query"
		if i%2 == 0 {
			path = "/api/v1/runs/query"
		}
		resp := send("POST", path, adminKey)
		if resp.StatusCode != 200 || resp.Header.Get("RateLimit-Remaining") != strconv.Itoa(15-i) {
			t.Fatalf("request %d: %d remaining %s", i, resp.StatusCode, resp.Header.Get("RateLimit-Remaining"))
		}
	}
	if resp := send("POST", "/runs/query", adminKey); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("16th: %d", resp.StatusCode)
	}
	// A bad key gets its 401 with the headers: it was counted first.
	resp := send("POST", "/runs/query", "ap_not_a_key")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("RateLimit-Remaining") != "14" {
		t.Fatalf("bad key: %d %s", resp.StatusCode, resp.Header.Get("RateLimit-Remaining"))
	}
	// 404 and 405 are limited: with a key by Default (API key), without by
	// the catch-all.
	if resp := send("GET", "/nowhere", adminKey); resp.StatusCode != 404 || resp.Header.Get("RateLimit-Limit") != "1000" {
		t.Fatalf("404 with a key: %d %s", resp.StatusCode, resp.Header.Get("RateLimit-Limit"))
	}
	if resp := send("DELETE", "/v2/things", ""); resp.StatusCode != 405 || resp.Header.Get("RateLimit-Limit") != "100" {
		t.Fatalf("405 without a key: %d %s", resp.StatusCode, resp.Header.Get("RateLimit-Limit"))
	}
	// A path no route serves yet (405 here: GET /runs/{run_id} exists) is
	// limited by its row already.
	if resp := send("POST", "/runs/stats", adminKey); resp.StatusCode != 405 || resp.Header.Get("RateLimit-Limit") != "1" {
		t.Fatalf("unserved /runs/stats: %d %s", resp.StatusCode, resp.Header.Get("RateLimit-Limit"))
	}
	if resp := send("POST", "/runs/stats", adminKey); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("unserved /runs/stats, 2nd: %d", resp.StatusCode)
	}
}

// Disabled (the local default), the middleware is the handler itself.
func TestDisabled(t *testing.T) {
	svc, err := ratelimits.New(ratelimits.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	rec := httptest.NewRecorder()
	svc.Handler(h).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	svc.Wrap(api.Spec{}, h).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if svc.Enabled() || rec.Header().Get("RateLimit-Limit") != "" {
		t.Fatal("disabled service limited")
	}
}
