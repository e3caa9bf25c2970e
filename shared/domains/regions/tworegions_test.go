package regions_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/agentplane/agentplane/shared/compose/orgaccessgroup"
	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/orgaccess"
	"github.com/agentplane/agentplane/shared/domains/regions"
)

// server is one region's all-in-one local process on 127.0.0.1.
type server struct {
	t       *testing.T
	name    regions.Name
	url     string
	dataDir string
	pr      *compose.Process
	stop    context.CancelFunc
	done    chan error
}

const (
	linkToken     = "link-token-0123456789abcdefghijklmnopqrstuv"
	operatorToken = "operator-token-0123456789abcdefghijklmnopq"
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startRegions starts a US and an EU server side by side, each configured
// from the environment as a deployment would be: its own data directory
// and port, AGENTPLANE_REGION_NAME, both regions' API URLs and the peer
// URL of the other.
func startRegions(t *testing.T) (us, eu *server) {
	t.Helper()
	lns := map[regions.Name]net.Listener{}
	urls := map[regions.Name]string{}
	for _, n := range regions.Names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[n], urls[n] = ln, "http://"+ln.Addr().String()
	}
	root := t.TempDir()
	start := func(n regions.Name) *server {
		s := &server{t: t, name: n, url: urls[n], dataDir: filepath.Join(root, string(n)), done: make(chan error, 1)}
		t.Setenv("AGENTPLANE_MODE", "local")
		t.Setenv("AGENTPLANE_REGION_NAME", string(n))
		t.Setenv("AGENTPLANE_DATA_DIR", s.dataDir)
		t.Setenv("AGENTPLANE_ADDR", lns[n].Addr().String())
		t.Setenv("AGENTPLANE_MCP_ADDR", "off")
		t.Setenv("AGENTPLANE_BOOTSTRAP_API_KEY", "ap_bootstrap_"+string(n)+"_0123456789abcdef")
		t.Setenv("AGENTPLANE_LOG_LEVEL", "error")
		t.Setenv("AGENTPLANE_US_API_URL", urls[regions.US])
		t.Setenv("AGENTPLANE_EU_API_URL", urls[regions.EU])
		t.Setenv("AGENTPLANE_PEER_URL", urls[n.Other()])
		t.Setenv("AGENTPLANE_REGION_LINK_TOKEN", linkToken)
		t.Setenv("AGENTPLANE_OPERATOR_TOKEN", operatorToken)
		cfg, err := compose.ConfigFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		pr, err := local.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		s.pr = pr
		ctx, cancel := context.WithCancel(context.Background())
		s.stop = cancel
		go func() { s.done <- local.Serve(ctx, pr, lns[n], io.Discard) }()
		t.Cleanup(s.shutdown)
		s.waitHealthy()
		return s
	}
	return start(regions.US), start(regions.EU)
}

func (s *server) waitHealthy() {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("%s server did not start", s.name)
}

func (s *server) shutdown() {
	if s.stop == nil {
		return
	}
	s.stop()
	s.stop = nil
	if err := <-s.done; err != nil {
		s.t.Errorf("%s server: %v", s.name, err)
	}
}

// storeBytes is the server's bbolt file (read after shutdown).
func (s *server) storeBytes() []byte {
	b, err := os.ReadFile(filepath.Join(s.dataDir, "agentplane.db"))
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("%d %s: %v", a.status, a.body, err)
	}
}

func (s *server) do(method, path string, headers map[string]string, body any) answer {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, b}
}

func key(k string) map[string]string { return map[string]string{"X-Api-Key": k} }

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// misdirected checks a 421 naming the EU region and its API URL.
func misdirected(t *testing.T, what string, a answer, home *server) {
	t.Helper()
	var d struct {
		Detail string `json:"detail"`
	}
	if a.status != http.StatusMisdirectedRequest || json.Unmarshal(a.body, &d) != nil ||
		!strings.Contains(d.Detail, home.url) || !strings.Contains(d.Detail, home.name.Label()+" region") {
		t.Errorf("%s: %d %s, want 421 naming %s", what, a.status, a.body, home.url)
	}
	if a.header.Get(regions.HeaderHomeRegion) != string(home.name) || a.header.Get(regions.HeaderHomeAPIURL) != home.url {
		t.Errorf("%s: headers %v", what, a.header)
	}
}

type signedUp struct {
	Organization struct {
		ID           string `json:"id"`
		Region       string `json:"region"`
		SSOLoginSlug string `json:"sso_login_slug"`
	} `json:"organization"`
	Workspace struct {
		ID string `json:"id"`
	} `json:"workspace"`
	APIKey struct {
		Key string `json:"key"`
	} `json:"api_key"`
}

// TestTwoRegions runs a US and an EU server side by side: an EU
// organization's data lands only in the EU store, its credentials used
// against the US answer 421 naming the EU API and store nothing there,
// and usage counted in the EU is recorded in the US and read through the
// EU, whose store holds no billing record.
func TestTwoRegions(t *testing.T) {
	us, eu := startRegions(t)
	mark := randomHex(8) // names written in this run, searched for in the stores

	// The published addresses.
	for _, s := range []*server{us, eu} {
		a := s.do("GET", "/api/v1/regions", nil, nil)
		var doc regions.Document
		a.json(t, &doc)
		if a.status != 200 || doc.Region != s.name || doc.BillingRegion != regions.US || len(doc.Regions) != 2 ||
			doc.Regions[0].APIURL != us.url || doc.Regions[1].APIURL != eu.url ||
			doc.Regions[0].EgressIPs[0] != "34.59.65.97" || doc.Regions[1].IngressIPs[1] != "34.13.73.122" {
			t.Fatalf("%s regions: %d %s", s.name, a.status, a.body)
		}
	}

	// The bootstrap organizations take their server's region.
	for _, s := range []*server{us, eu} {
		a := s.do("GET", "/api/v1/organizations/current/info", key("ap_bootstrap_"+string(s.name)+"_0123456789abcdef"), nil)
		if a.status != 200 || !strings.Contains(string(a.body), `"region":"`+string(s.name)+`"`) {
			t.Fatalf("%s bootstrap org: %d %s", s.name, a.status, a.body)
		}
	}

	// Sign-up: an EU organization is created in the EU only.
	a := us.do("POST", "/api/v1/organizations", bearer(operatorToken), map[string]any{"display_name": "Misdirected " + mark, "region": "eu"})
	misdirected(t, "EU sign-up at the US", a, eu)
	a = eu.do("POST", "/api/v1/organizations", bearer(operatorToken), map[string]any{"display_name": "Acme " + mark, "region": "eu", "sso_login_slug": "acme-" + mark})
	if a.status != 201 {
		t.Fatalf("sign-up: %d %s", a.status, a.body)
	}
	var org signedUp
	a.json(t, &org)
	if org.Organization.Region != "eu" || org.APIKey.Key == "" {
		t.Fatalf("sign-up: %s", a.body)
	}
	euKey, euWS, euOrg := org.APIKey.Key, org.Workspace.ID, org.Organization.ID

	// Its data lands in the EU.
	if a := eu.do("POST", "/api/v1/workspaces", key(euKey), map[string]any{"display_name": "eu-workspace-" + mark}); a.status != 201 {
		t.Fatalf("EU workspace: %d %s", a.status, a.body)
	}
	if a := eu.do("PATCH", "/api/v1/organizations/current/info", key(euKey), map[string]any{"invites_enabled": false}); a.status != 200 {
		t.Fatalf("EU org settings: %d %s", a.status, a.body)
	}
	tenant := map[string]string{"X-Api-Key": euKey, "X-Tenant-Id": euWS}
	if a := eu.do("POST", "/datasets", tenant, map[string]any{"name": "eu-dataset-" + mark}); a.status != 200 && a.status != 201 {
		t.Fatalf("EU dataset: %d %s", a.status, a.body)
	}

	// The same key at the US: 421 naming the EU API, for reads and writes
	// of every kind, and nothing is stored.
	misdirected(t, "list workspaces", us.do("GET", "/api/v1/workspaces", key(euKey), nil), eu)
	misdirected(t, "create workspace", us.do("POST", "/api/v1/workspaces", key(euKey), map[string]any{"display_name": "misdirected-" + mark}), eu)
	misdirected(t, "org settings", us.do("PATCH", "/api/v1/organizations/current/info", bearer(euKey), map[string]any{"invites_enabled": true}), eu)
	misdirected(t, "create dataset", us.do("POST", "/datasets", tenant, map[string]any{"name": "misdirected-" + mark}), eu)
	misdirected(t, "billing usage", us.do("GET", billing.UsagePath+"?starting_on=2025-01-01&ending_before=2025-02-01", key(euKey), nil), eu)
	// A key neither region knows stays a 401.
	if a := us.do("GET", "/api/v1/workspaces", key("ap_unknown_"+mark+"_0123456789"), nil); a.status != 401 {
		t.Errorf("unknown key: %d %s", a.status, a.body)
	}
	// The US bootstrap key still works at the US, and answers 421 in the EU.
	if a := us.do("GET", "/api/v1/workspaces", key("ap_bootstrap_us_0123456789abcdef"), nil); a.status != 200 {
		t.Errorf("US key at the US: %d %s", a.status, a.body)
	}
	misdirected(t, "US key at the EU", eu.do("GET", "/api/v1/workspaces", key("ap_bootstrap_us_0123456789abcdef"), nil), us)

	// SSO sign-in with the EU organization's slug at the US.
	misdirected(t, "SSO sign-in", us.do("POST", "/api/v1/sso/acme-"+mark+"/sign-in", key(euKey),
		map[string]any{"email": "a@example.com", "email_verified": true, "idp_subject": "s1"}), eu)

	// A SCIM token of the EU organization, presented to the US: the
	// organization-access service answers the misdirected error, and the
	// SCIM edge a SCIM-shaped 421 naming the EU API.
	a = eu.do("POST", "/api/v1/orgs/current/scim-tokens", key(euKey), map[string]any{"description": "idp"})
	var tok struct {
		Token string `json:"token"`
	}
	a.json(t, &tok)
	if a.status != 201 || tok.Token == "" {
		t.Fatalf("SCIM token: %d %s", a.status, a.body)
	}
	_, err := orgaccessgroup.NewService(us.pr.P).AuthenticateSCIM(context.Background(), tok.Token)
	var me *regions.MisdirectedError
	if !errors.As(err, &me) || me.Home != regions.EU || me.APIURL != eu.url || !errors.Is(err, orgaccess.ErrInvalidToken) {
		t.Errorf("SCIM token at the US: %v", err)
	}
	if a := us.do("GET", "/scim/v2/Users", bearer(tok.Token), nil); a.status != 421 || !strings.Contains(string(a.body), eu.url) {
		t.Errorf("SCIM at the US: %d %s", a.status, a.body)
	}
	if a := eu.do("GET", "/scim/v2/Users", bearer(tok.Token), nil); a.status != 200 {
		t.Errorf("SCIM at the EU: %d %s", a.status, a.body)
	}

	// The region link answers only its token.
	for _, h := range []map[string]string{nil, bearer("wrong-token-0123456789abcdefghijklmnop")} {
		if a := us.do("POST", regions.LocatePath(regions.KindAPIKey), h, map[string]any{"value": strings.Repeat("a", 64)}); a.status != 401 {
			t.Errorf("locate without the link token: %d %s", a.status, a.body)
		}
	}

	// Usage counted in the EU: events published through the EU process's
	// queue (one delivered twice) are forwarded to the US and recorded
	// there, and the EU's usage route reads them from the US.
	now := time.Now().UTC()
	for _, ev := range []billing.Event{
		{ID: "traces:" + mark + "-1", OrganizationID: euOrg, WorkspaceID: euWS, Metric: billing.MetricTraces, Quantity: 5, At: now},
		{ID: "traces:" + mark + "-1", OrganizationID: euOrg, WorkspaceID: euWS, Metric: billing.MetricTraces, Quantity: 5, At: now},
		{ID: "traces:" + mark + "-2", OrganizationID: euOrg, WorkspaceID: euWS, Metric: billing.MetricTraces, Quantity: 2, At: now},
	} {
		if err := eu.pr.P.Queue.Enqueue(context.Background(), billing.TopicUsage, ev); err != nil {
			t.Fatal(err)
		}
	}
	usage := billing.UsagePath + "?starting_on=" + now.Add(-24*time.Hour).Format("2006-01-02") + "&ending_before=" + now.Add(48*time.Hour).Format("2006-01-02")
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := eu.do("GET", usage, key(euKey), nil)
		var got []billing.MetricUsage
		a.json(t, &got)
		if a.status == 200 && len(got) == 1 && got[0].Value == 7 && got[0].Groups[euWS] == 7 && got[0].CustomerID == euOrg {
			break
		}
		if a.status != 200 || time.Now().After(deadline) {
			t.Fatalf("EU usage: %d %s, want 7 traces", a.status, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The stores, read after both servers stop.
	us.shutdown()
	eu.shutdown()
	usDB, euDB := us.storeBytes(), eu.storeBytes()
	for _, s := range []string{euOrg, euWS, "Acme " + mark, "eu-workspace-" + mark, "eu-dataset-" + mark} {
		if !bytes.Contains(euDB, []byte(s)) {
			t.Errorf("the EU store lacks %q", s)
		}
	}
	for _, s := range []string{"Acme " + mark, "eu-workspace-" + mark, "eu-dataset-" + mark, "misdirected-" + mark, "Misdirected " + mark} {
		if bytes.Contains(usDB, []byte(s)) {
			t.Errorf("the US store holds %q", s)
		}
	}
	// The only trace of the EU organization in the US: its billing records.
	if !bytes.Contains(usDB, []byte("billing#"+euOrg)) {
		t.Error("the US store has no billing record of the EU organization")
	}
	if bytes.Contains(euDB, []byte("billing#")) {
		t.Error("the EU store holds a billing record")
	}
}
