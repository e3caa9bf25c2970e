package orgaccess_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/domains/orgaccess"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

const linkToken = "orgaccess-link-token-0123456789abcdefgh"

// regional is one region's identity and organization access over a store.
type regional struct {
	ids *identity.Service
	svc *orgaccess.Service
	srv *httptest.Server
}

func newRegional(t *testing.T, st store.Store, name regions.Name, peer string) *regional {
	t.Helper()
	cfg := regions.Config{Region: name, PeerURL: peer, LinkToken: linkToken}
	cfg.Hosted.US.APIURL = "https://api.us.example.com"
	cfg.Hosted.EU.APIURL = "https://api.eu.example.com"
	r, err := regions.New(cfg, regions.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ids := identity.New(st)
	ids.SetRegion(r)
	svc := orgaccess.New(st, ids, orgaccess.Options{})
	mux := web.NewMux()
	api.Mount(mux, orgaccess.Routes, orgaccess.NewHandler(svc, nil), api.Edge{Auth: ids})
	api.Mount(mux, identity.Routes, ids, api.Edge{Auth: ids}) // the slug and key lookups
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &regional{ids: ids, svc: svc, srv: srv}
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func post(t *testing.T, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRegionOfSCIMAndSignIn: an organization homed in the other region is
// refused on the paths that do not authenticate with an API key, whether
// its records are here (a replicated table) or only there.
func TestRegionOfSCIMAndSignIn(t *testing.T) {
	ctx := context.Background()
	euStore := openStore(t)
	eu := newRegional(t, euStore, regions.EU, "https://link.us.example.com")
	su, err := eu.ids.SignUpOrganization(ctx, identity.SignUp{DisplayName: "Acme", Region: "eu", SSOLoginSlug: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	_, tok, err := eu.svc.CreateSCIMToken(ctx, su.Organization.ID, "idp", orgaccess.Actor{Type: "api_key", ID: su.APIKey.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := eu.svc.AuthenticateSCIM(ctx, tok); err != nil || got.OrganizationID != su.Organization.ID {
		t.Fatalf("home region: %+v %v", got, err)
	}

	// The EU records read by a US service (the same store): refused.
	replica := newRegional(t, euStore, regions.US, "https://link.eu.example.com")
	_, err = replica.svc.AuthenticateSCIM(ctx, tok)
	var me *regions.MisdirectedError
	if !errors.As(err, &me) || me.Home != regions.EU || me.APIURL != "https://api.eu.example.com" || !errors.Is(err, orgaccess.ErrInvalidToken) {
		t.Errorf("SCIM token of an EU organization in the US: %v", err)
	}
	signIn := `{"email":"a@example.com","email_verified":true,"idp_subject":"s1"}`
	status, body := post(t, replica.srv.URL+"/api/v1/sso/acme/sign-in", map[string]string{"X-Api-Key": su.APIKey.Key}, signIn)
	if status != 421 || !strings.Contains(body, "https://api.eu.example.com") {
		t.Errorf("sign-in of an EU organization in the US: %d %s", status, body)
	}
	if ms, err := eu.svc.Members(ctx, su.Organization.ID); err != nil || len(ms) != 0 {
		t.Errorf("a refused sign-in provisioned members: %d %v", len(ms), err)
	}

	// The locate route of the SCIM token, as the US asks the EU.
	auth := map[string]string{"Authorization": "Bearer " + linkToken, "Content-Type": "application/json"}
	if status, body := post(t, eu.srv.URL+regions.LocatePath(regions.KindSCIMToken), auth, `{"value":"`+identity.HashToken(tok)+`"}`); status != 200 || body != `{"region":"eu"}` {
		t.Errorf("locate: %d %s", status, body)
	}
	if status, _ := post(t, eu.srv.URL+regions.LocatePath(regions.KindSCIMToken), auth, `{"value":"`+identity.HashToken("scim_other")+`"}`); status != 404 {
		t.Errorf("locate unknown: %d", status)
	}
	if status, _ := post(t, eu.srv.URL+regions.LocatePath(regions.KindSCIMToken), nil, `{"value":"`+identity.HashToken(tok)+`"}`); status != 401 {
		t.Errorf("locate without the link token: %d", status)
	}

	// A US server with its own store, linked to the EU server: the token
	// and the slug are unknown there and located in the EU.
	us := newRegional(t, openStore(t), regions.US, eu.srv.URL)
	_, err = us.svc.AuthenticateSCIM(ctx, tok)
	if !errors.As(err, &me) || me.Home != regions.EU || !errors.Is(err, orgaccess.ErrInvalidToken) {
		t.Errorf("EU token at a linked US: %v", err)
	}
	if _, err := us.svc.AuthenticateSCIM(ctx, "scim_unknown_token_0123456789abcdef"); !errors.Is(err, orgaccess.ErrInvalidToken) || errors.As(err, &me) {
		t.Errorf("unknown token: %v", err)
	}
	status, body = post(t, us.srv.URL+"/api/v1/sso/acme/sign-in", map[string]string{"X-Api-Key": su.APIKey.Key}, signIn)
	if status != 421 || !strings.Contains(body, "The organization with this SSO login slug is in the EU region") {
		t.Errorf("EU slug at a linked US: %d %s", status, body)
	}
	if status, _ := post(t, us.srv.URL+"/api/v1/sso/nobody/sign-in", map[string]string{"X-Api-Key": su.APIKey.Key}, signIn); status != 404 {
		t.Errorf("unknown slug: %d", status)
	}
}
