package identity_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const (
	operator = "operator-token-for-tests-0123456789abcdef"
	link     = "link-token-for-tests-0123456789abcdefghij"
)

// countingStore counts reads of organization records.
type countingStore struct {
	store.Store
	orgReads atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if strings.HasPrefix(k.PK, "org#") && k.SK == "#org" {
		c.orgReads.Add(1)
	}
	return c.Store.Get(ctx, k)
}

type regionEnv struct {
	t   *testing.T
	st  *countingStore
	ids *identity.Service
	srv *httptest.Server
}

// newRegionEnv serves identity's routes for region name over its own store;
// peer, when set, is the other region's URL.
func newRegionEnv(t *testing.T, name regions.Name, peer string) *regionEnv {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	st := &countingStore{Store: bs}
	ids := identity.New(st)
	cfg := regions.Config{Region: name, PeerURL: peer, LinkToken: link}
	cfg.Hosted.US.APIURL = "https://api.us.example.com"
	if peer != "" {
		cfg.Hosted.EU.APIURL = "https://api.eu.example.com"
	}
	r, err := regions.New(cfg, regions.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ids.SetRegion(r)
	h := sha256.Sum256([]byte(operator))
	ids.SetOperatorTokenHash(h[:])
	mux := web.NewMux()
	api.Mount(mux, identity.Routes, ids, api.Edge{Auth: ids})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &regionEnv{t: t, st: st, ids: ids, srv: srv}
}

func (e *regionEnv) do(method, path string, headers map[string]string, body string) (int, http.Header, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func TestSignUp(t *testing.T) {
	us := newRegionEnv(t, regions.US, "")
	status, _, body := us.do("POST", identity.OrganizationsPath, bearer(operator), `{"display_name":" Acme ","region":"us","sso_login_slug":"acme","invites_enabled":false}`)
	if status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	var out struct {
		Organization identity.Organization `json:"organization"`
		Workspace    identity.Workspace    `json:"workspace"`
		APIKey       struct {
			identity.APIKey
			Key string `json:"key"`
		} `json:"api_key"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	o := out.Organization
	if o.DisplayName != "Acme" || o.Region != "us" || o.SSOLoginSlug != "acme" || o.InvitesEnabled || !o.JITProvisioningEnabled ||
		out.Workspace.OrganizationID != o.ID || out.APIKey.OrgRole != identity.RoleAdmin || out.APIKey.Key == "" {
		t.Fatalf("signed up %s", body)
	}
	// The new key works, at organization scope and in the workspace.
	if status, _, body := us.do("GET", "/api/v1/workspaces", map[string]string{"X-Api-Key": out.APIKey.Key}, ""); status != 200 || !strings.Contains(body, out.Workspace.ID) {
		t.Fatalf("new key: %d %s", status, body)
	}

	before := orgCount(t, us.ids)
	cases := []struct {
		headers map[string]string
		body    string
		status  int
		want    string
	}{
		{nil, `{"display_name":"x","region":"us"}`, 401, "Missing operator token"},
		{bearer(operator + "x"), `{"display_name":"x","region":"us"}`, 401, "Invalid operator token"},
		{map[string]string{"X-Api-Key": operator}, `{"display_name":"x","region":"us"}`, 401, "Missing operator token"},
		{bearer(operator), `{"region":"us"}`, 422, `["body","display_name"]`},
		{bearer(operator), `{"display_name":"   ","region":"us"}`, 422, `["body","display_name"]`},
		{bearer(operator), `{"display_name":"x"}`, 422, `["body","region"]`},
		{bearer(operator), `{"display_name":"x","region":"ap"}`, 422, `["body","region"]`},
		{bearer(operator), `{"display_name":"x","region":"us","sso_login_slug":"Bad Slug"}`, 422, `["body","sso_login_slug"]`},
		{bearer(operator), `{"display_name":"x","region":"us","sso_login_slug":"-x"}`, 422, `["body","sso_login_slug"]`},
		{bearer(operator), `{"display_name":"x","region":"us","extra":1}`, 422, "extra"},
		{bearer(operator), `{"display_name":1,"region":"us"}`, 422, "display_name"},
		{bearer(operator), ``, 422, "body"},
		{bearer(operator), `{"display_name":"x","region":"us","sso_login_slug":"acme"}`, 409, "acme"},
		// An EU organization asked of the US: 421, nothing stored.
		{bearer(operator), `{"display_name":"x","region":"eu"}`, 421, "EU region"},
	}
	for _, c := range cases {
		status, _, body := us.do("POST", identity.OrganizationsPath, c.headers, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%v %s: %d %s, want %d with %q", c.headers, c.body, status, body, c.status, c.want)
		}
	}
	if after := orgCount(t, us.ids); after != before {
		t.Errorf("refused sign-ups stored organizations: %d → %d", before, after)
	}

	// Without an operator token sign-up is off.
	off := identity.New(us.st)
	mux := web.NewMux()
	api.Mount(mux, identity.Routes, off, api.Edge{Auth: off})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+identity.OrganizationsPath, strings.NewReader(`{"display_name":"x","region":"us"}`))
	req.Header.Set("Authorization", "Bearer "+operator)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("sign-up without an operator token configured: %d", resp.StatusCode)
	}
	// Nor does a region-unaware service publish regions.
	resp, err = http.Get(srv.URL + "/api/v1/regions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("regions without a region: %d", resp.StatusCode)
	}
}

func orgCount(t *testing.T, ids *identity.Service) int {
	t.Helper()
	orgs, err := ids.Organizations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(orgs)
}

func TestOrganizationRegion(t *testing.T) {
	us := newRegionEnv(t, regions.US, "")
	ctx := context.Background()
	o, err := us.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "A"})
	if err != nil || o.Region != "us" {
		t.Fatalf("%+v %v", o, err)
	}
	_, err = us.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "B", Region: "eu"})
	var me *regions.MisdirectedError
	if !errors.As(err, &me) || me.Home != regions.EU {
		t.Fatalf("EU organization in the US: %v", err)
	}
	if _, err := us.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "C", Region: "mars"}); !errors.Is(err, identity.ErrInvalidInput) {
		t.Fatalf("unknown region: %v", err)
	}
	// The bootstrap organization takes the region too.
	b, err := us.ids.Bootstrap(ctx, "ap_bootstrap_key_for_tests_0123")
	if err != nil || b.Organization.Region != "us" {
		t.Fatalf("bootstrap: %+v %v", b.Organization, err)
	}
	// A region-unaware service leaves it empty.
	plain := identity.New(us.st)
	if o, err := plain.CreateOrganization(ctx, identity.Organization{DisplayName: "D"}); err != nil || o.Region != "" {
		t.Fatalf("region-unaware: %+v %v", o, err)
	}
}

// TestAuthenticationChecksHome: a key of an organization whose record says
// another region (a replicated or restored table) is answered 421, and
// the organization's region is read once per process.
func TestAuthenticationChecksHome(t *testing.T) {
	us := newRegionEnv(t, regions.US, "https://api.eu.example.com")
	ctx := context.Background()
	// The EU organization's record written into this store by an EU
	// service, as a replicated table would.
	euIDs := identity.New(us.st)
	euCfg := regions.Config{Region: regions.EU}
	euRegion, err := regions.New(euCfg, regions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	euIDs.SetRegion(euRegion)
	euOrg, err := euIDs.CreateOrganization(ctx, identity.Organization{DisplayName: "EU"})
	if err != nil {
		t.Fatal(err)
	}
	_, euKey, err := euIDs.CreateAPIKey(ctx, identity.NewKey{OrganizationID: euOrg.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	usOrg, err := us.ids.CreateOrganization(ctx, identity.Organization{DisplayName: "US"})
	if err != nil {
		t.Fatal(err)
	}
	_, usKey, err := us.ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: usOrg.ID, OrgRole: identity.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	us.st.orgReads.Store(0)
	for range 3 {
		status, h, body := us.do("POST", "/api/v1/workspaces", map[string]string{"X-Api-Key": euKey}, `{"display_name":"w"}`)
		if status != 421 || !strings.Contains(body, "https://api.eu.example.com") || h.Get(regions.HeaderHomeRegion) != "eu" {
			t.Fatalf("EU key in the US: %d %s", status, body)
		}
		if status, _, body := us.do("GET", "/api/v1/workspaces", map[string]string{"X-Api-Key": usKey}, ""); status != 200 {
			t.Fatalf("US key: %d %s", status, body)
		}
	}
	if n := us.st.orgReads.Load(); n != 2 {
		t.Errorf("read organizations %d times for 6 requests of 2 organizations, want 2", n)
	}
	if wss, _ := us.ids.Workspaces(ctx, euOrg.ID); len(wss) != 0 {
		t.Errorf("a misdirected request stored %d workspaces", len(wss))
	}
}

// TestLocateRoutes: the other region asks this one where a key or a slug
// is; the key crosses as its hash only.
func TestLocateRoutes(t *testing.T) {
	eu := newRegionEnv(t, regions.EU, "https://api.us.example.com")
	ctx := context.Background()
	su, err := eu.ids.SignUpOrganization(ctx, identity.SignUp{DisplayName: "Acme", Region: "eu", SSOLoginSlug: "acme-eu"})
	if err != nil {
		t.Fatal(err)
	}
	auth := bearer(link)
	auth["Content-Type"] = "application/json"
	hash := identity.HashToken(su.APIKey.Key)
	cases := []struct {
		path, body string
		headers    map[string]string
		status     int
		want       string
	}{
		{regions.LocatePath(regions.KindAPIKey), `{"value":"` + hash + `"}`, auth, 200, `{"region":"eu"}`},
		{regions.LocatePath(regions.KindAPIKey), `{"value":"` + identity.HashToken("ap_other") + `"}`, auth, 404, "Not found"},
		{regions.LocatePath(regions.KindAPIKey), `{"value":"` + su.APIKey.Key + `"}`, auth, 422, "SHA-256"},
		{regions.LocatePath(regions.KindAPIKey), `{"value":"` + hash + `"}`, nil, 401, "link token"},
		{regions.LocatePath(regions.KindSSOSlug), `{"value":"acme-eu"}`, auth, 200, `{"region":"eu"}`},
		{regions.LocatePath(regions.KindSSOSlug), `{"value":"acme-us"}`, auth, 404, "Not found"},
	}
	for _, c := range cases {
		status, _, body := eu.do("POST", c.path, c.headers, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", c.path, c.body, status, body, c.status, c.want)
		}
	}

	// The US, linked to this EU server, answers the EU key with a 421
	// naming the EU's public API URL (not the link's URL).
	us := newRegionEnv(t, regions.US, eu.srv.URL)
	status, h, body := us.do("GET", "/api/v1/workspaces", map[string]string{"Authorization": "Bearer " + su.APIKey.Key}, "")
	if status != 421 || h.Get(regions.HeaderHomeAPIURL) != "https://api.eu.example.com" || !strings.Contains(body, "This API key's organization is in the EU region") {
		t.Errorf("EU key at the US: %d %v %s", status, h, body)
	}
	if status, _, _ := us.do("GET", "/api/v1/workspaces", map[string]string{"X-Api-Key": "ap_neither_region_0123456789"}, ""); status != 401 {
		t.Errorf("unknown key: %d", status)
	}
	if err := us.ids.LocateSlug(ctx, "acme-eu"); err == nil || !strings.Contains(err.Error(), "EU region") {
		t.Errorf("slug: %v", err)
	}
	if err := us.ids.LocateSlug(ctx, "nobody"); err != nil {
		t.Errorf("unknown slug: %v", err)
	}

	// The published document.
	status, _, body = us.do("GET", "/api/v1/regions", nil, "")
	var doc regions.Document
	if status != 200 || json.Unmarshal([]byte(body), &doc) != nil || doc.Region != regions.US || doc.Regions[1].APIURL != "https://api.eu.example.com" {
		t.Errorf("regions: %d %s", status, body)
	}
}

// BenchmarkAuthenticateRequest: a key's authentication with the region
// rule (the organization's region cached after the first request) and
// without it.
func BenchmarkAuthenticateRequest(b *testing.B) {
	for _, withRegion := range []bool{false, true} {
		name := "unaware"
		if withRegion {
			name = "region"
		}
		b.Run(name, func(b *testing.B) {
			bs, err := boltstore.Open(filepath.Join(b.TempDir(), "db"))
			if err != nil {
				b.Fatal(err)
			}
			defer bs.Close()
			ids := identity.New(bs)
			if withRegion {
				r, err := regions.New(regions.Config{Region: regions.US}, regions.Options{})
				if err != nil {
					b.Fatal(err)
				}
				ids.SetRegion(r)
			}
			ctx := context.Background()
			o, err := ids.CreateOrganization(ctx, identity.Organization{DisplayName: "B"})
			if err != nil {
				b.Fatal(err)
			}
			_, raw, err := ids.CreateAPIKey(ctx, identity.NewKey{OrganizationID: o.ID, OrgRole: identity.RoleAdmin})
			if err != nil {
				b.Fatal(err)
			}
			req := httptest.NewRequest("GET", "/api/v1/workspaces", nil)
			req.Header.Set("X-Api-Key", raw)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ids.AuthenticateRequest(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
