package regions_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnvDefaults(t *testing.T) {
	c, err := regions.ConfigFromEnv(env(nil), regions.EU)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check("http://127.0.0.1:8000/", true); err != nil {
		t.Fatal(err)
	}
	def := regions.Defaults()
	if len(def.US.EgressIPs) != 8 || len(def.EU.EgressIPs) != 8 || len(def.US.IngressIPs) != 2 || len(def.EU.IngressIPs) != 2 {
		t.Fatalf("defaults: %+v", def)
	}
	eu := c.Hosted.Of(regions.EU)
	if eu.APIURL != "http://127.0.0.1:8000" || eu.AppURL != "http://127.0.0.1:8000" || eu.BeaconURL != "" {
		t.Errorf("this region's URLs: %+v", eu)
	}
	if us := c.Hosted.Of(regions.US); us.APIURL != "" || us.EgressIPs[7] != "104.198.162.55" {
		t.Errorf("the other region: %+v", us)
	}
	if c.PeerURL != "" {
		t.Errorf("no peer configured, got %q", c.PeerURL)
	}
	// Check is idempotent.
	before, _ := json.Marshal(c)
	if err := c.Check("http://127.0.0.1:8000", true); err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(c); string(after) != string(before) {
		t.Errorf("second Check changed %s to %s", before, after)
	}
	// A zero configuration gets the interface's tables too.
	z := regions.Config{Region: regions.US}
	if err := z.Check("", false); err != nil || len(z.Hosted.EU.EgressIPs) != 8 || z.Hosted.EU.Region != regions.EU {
		t.Errorf("zero config: %v %+v", err, z.Hosted)
	}
}

func TestConfigFromEnvOverrides(t *testing.T) {
	vars := map[string]string{
		"AGENTPLANE_US_API_URL":        "https://api.us.example.com/",
		"AGENTPLANE_US_APP_URL":        "https://app.us.example.com",
		"AGENTPLANE_US_BEACON_URL":     "https://beacon.us.example.com",
		"AGENTPLANE_EU_API_URL":        "https://api.eu.example.com",
		"AGENTPLANE_EU_EGRESS_IPS":     " 10.0.0.1, 2001:db8::1 ",
		"AGENTPLANE_US_INGRESS_IPS":    "192.0.2.10",
		"AGENTPLANE_REGION_LINK_TOKEN": strings.Repeat("k", 32),
	}
	c, err := regions.ConfigFromEnv(env(vars), regions.US)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check("https://base.example.com", false); err != nil {
		t.Fatal(err)
	}
	us, eu := c.Hosted.US, c.Hosted.EU
	if us.APIURL != "https://api.us.example.com" || us.AppURL != "https://app.us.example.com" || us.BeaconURL != "https://beacon.us.example.com" {
		t.Errorf("US: %+v", us)
	}
	if strings.Join(eu.EgressIPs, ",") != "10.0.0.1,2001:db8::1" || strings.Join(us.IngressIPs, ",") != "192.0.2.10" || len(us.EgressIPs) != 8 {
		t.Errorf("IPs: %+v %+v", us, eu)
	}
	// The peer defaults to the other region's API URL.
	if c.PeerURL != "https://api.eu.example.com" {
		t.Errorf("peer %q", c.PeerURL)
	}
	// Env gives back what ConfigFromEnv reads.
	back, _ := regions.ConfigFromEnv(env(c.Env()), regions.US)
	back.LinkToken = c.LinkToken
	if err := back.Check("https://base.example.com", false); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(c)
	b, _ := json.Marshal(back)
	if string(a) != string(b) {
		t.Errorf("Env round trip:\n%s\n%s", a, b)
	}
	if _, ok := c.Env()[regions.EnvLinkToken]; ok {
		t.Error("Env leaks the link token")
	}
	doc := c.Document()
	if doc.Region != regions.US || doc.BillingRegion != regions.US || len(doc.Regions) != 2 || doc.Regions[1].APIURL != "https://api.eu.example.com" {
		t.Errorf("document %+v", doc)
	}
	doc.Regions[0].EgressIPs[0] = "changed"
	if c.Hosted.US.EgressIPs[0] == "changed" {
		t.Error("the document shares the configuration's slices")
	}
	// Locally, the other region's URLs default to the peer URL.
	l := regions.Config{Region: regions.EU, PeerURL: "http://127.0.0.1:9001", LinkToken: strings.Repeat("k", 40)}
	if err := l.Check("http://127.0.0.1:9002", true); err != nil || l.Hosted.US.APIURL != "http://127.0.0.1:9001" || l.Hosted.US.AppURL != "http://127.0.0.1:9001" {
		t.Errorf("local peer defaults: %v %+v", err, l.Hosted.US)
	}
}

func TestBadConfig(t *testing.T) {
	token := strings.Repeat("t", 32)
	cases := map[string]struct {
		vars   map[string]string
		region regions.Name
		base   string
		want   string
	}{
		"region":           {nil, "ap", "", "AGENTPLANE_REGION_NAME"},
		"uppercase region": {nil, "EU", "", "AGENTPLANE_REGION_NAME"},
		"relative url":     {map[string]string{"AGENTPLANE_EU_API_URL": "api.eu.example.com"}, regions.US, "", "AGENTPLANE_EU_API_URL"},
		"ftp url":          {map[string]string{"AGENTPLANE_US_APP_URL": "ftp://x"}, regions.US, "", "AGENTPLANE_US_APP_URL"},
		"url with query":   {map[string]string{"AGENTPLANE_US_BEACON_URL": "https://b.example.com/?a=1"}, regions.US, "", "AGENTPLANE_US_BEACON_URL"},
		"url with user":    {map[string]string{"AGENTPLANE_PEER_URL": "https://u:p@eu.example.com", "AGENTPLANE_REGION_LINK_TOKEN": token}, regions.US, "", "AGENTPLANE_PEER_URL"},
		"bad ip":           {map[string]string{"AGENTPLANE_US_EGRESS_IPS": "1.2.3.4,nope"}, regions.US, "", "AGENTPLANE_US_EGRESS_IPS"},
		"empty ip":         {map[string]string{"AGENTPLANE_EU_INGRESS_IPS": "1.2.3.4,,"}, regions.US, "", "AGENTPLANE_EU_INGRESS_IPS"},
		"no link token":    {map[string]string{"AGENTPLANE_PEER_URL": "https://eu.example.com"}, regions.US, "", "AGENTPLANE_REGION_LINK_TOKEN"},
		"short link token": {map[string]string{"AGENTPLANE_EU_API_URL": "https://eu.example.com", "AGENTPLANE_REGION_LINK_TOKEN": "short"}, regions.US, "", "AGENTPLANE_REGION_LINK_TOKEN"},
		"peer is self":     {map[string]string{"AGENTPLANE_PEER_URL": "http://127.0.0.1:8000/", "AGENTPLANE_REGION_LINK_TOKEN": token}, regions.US, "http://127.0.0.1:8000", "own API URL"},
		"bad base":         {nil, regions.US, "not a url", "AGENTPLANE_BASE_URL"},
	}
	for name, c := range cases {
		cfg, err := regions.ConfigFromEnv(env(c.vars), c.region)
		if err == nil {
			err = cfg.Check(c.base, true)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
		if err == nil || name == "bad base" {
			continue
		}
		if _, err := regions.New(cfg, regions.Options{}); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestNames(t *testing.T) {
	if regions.US.Other() != regions.EU || regions.EU.Other() != regions.US || regions.EU.Label() != "EU" {
		t.Error("Other/Label")
	}
	for _, bad := range []string{"", "US", "eu ", "ap"} {
		if _, err := regions.ParseName(bad); err == nil {
			t.Errorf("ParseName(%q) accepted", bad)
		}
	}
	if regions.BillingHome != regions.US {
		t.Error("billing home")
	}
}

func TestMisdirectedError(t *testing.T) {
	r := newRegion(t, regions.US, "http://127.0.0.1:1")
	cause := errors.New("local cause")
	err := error(r.Misdirected(regions.EU, "This API key's organization", cause))
	var he *web.Error
	if !errors.As(err, &he) || he.Status != http.StatusMisdirectedRequest ||
		!strings.Contains(he.Detail, "https://api.eu.example.com") || !strings.Contains(he.Detail, "EU region") ||
		he.Header.Get(regions.HeaderHomeAPIURL) != "https://api.eu.example.com" || he.Header.Get(regions.HeaderHomeRegion) != "eu" {
		t.Fatalf("%#v", he)
	}
	if !errors.Is(err, cause) {
		t.Error("does not unwrap to its cause")
	}
	rec := httptest.NewRecorder()
	web.WriteError(rec, httptest.NewRequest("GET", "/", nil), err)
	if rec.Code != 421 || !strings.Contains(rec.Body.String(), `"detail":"This API key's organization is in the EU region`) {
		t.Errorf("answered %d %s", rec.Code, rec.Body)
	}
	if r.CheckHome(regions.US, "x") != nil || r.CheckHome("", "x") != nil || r.CheckHome(regions.EU, "x") == nil {
		t.Error("CheckHome")
	}
	var nilRegion *regions.Region
	if nilRegion.CheckHome(regions.EU, "x") != nil {
		t.Error("a region-unaware process refuses")
	}
	// Without a configured URL the answer still names the region.
	bare := &regions.MisdirectedError{Home: regions.EU, Here: regions.US}
	if !strings.Contains(bare.Detail(), "EU region") || bare.Header().Get(regions.HeaderHomeAPIURL) != "" {
		t.Errorf("%s %v", bare.Detail(), bare.Header())
	}
}

// newRegion returns a region of name linked to peer; with peer "" the
// other region's API is unknown, so there is no link.
func newRegion(t *testing.T, name regions.Name, peer string, opts ...func(*regions.Options)) *regions.Region {
	t.Helper()
	cfg := regions.Config{Region: name, PeerURL: peer, LinkToken: strings.Repeat("L", 40)}
	cfg.Hosted.US.APIURL = "https://api.us.example.com"
	cfg.Hosted.EU.APIURL = "https://api.eu.example.com"
	if peer == "" {
		if name == regions.US {
			cfg.Hosted.EU.APIURL = ""
		} else {
			cfg.Hosted.US.APIURL = ""
		}
	}
	o := regions.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	r, err := regions.New(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// peer is the other region's locate routes over a table of known values.
type peer struct {
	srv     *httptest.Server
	calls   atomic.Int64
	known   map[string]regions.Name
	mu      sync.Mutex
	block   chan struct{}
	failing bool
}

func newPeer(t *testing.T, r *regions.Region, known map[string]regions.Name) *peer {
	p := &peer{known: known}
	mux := web.NewMux()
	for _, k := range []regions.Kind{regions.KindAPIKey, regions.KindSCIMToken, regions.KindSSOSlug} {
		mux.Handle("POST", regions.LocatePath(k), web.HandlerFunc(func(w http.ResponseWriter, req *http.Request) error {
			p.calls.Add(1)
			if p.block != nil {
				<-p.block
			}
			p.mu.Lock()
			failing := p.failing
			p.mu.Unlock()
			if failing {
				return web.Errorf(http.StatusBadGateway, "down")
			}
			return r.ServeLocate(w, req, k, func(_ context.Context, v string) (regions.Name, error) {
				if n, ok := p.known[v]; ok {
					return n, nil
				}
				return "", regions.ErrUnknown
			})
		}))
	}
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func TestLocate(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	euSide := newRegion(t, regions.EU, "http://127.0.0.1:1") // serves lookups; its own peer is unused
	p := newPeer(t, euSide, map[string]regions.Name{hash: regions.EU, "acme": regions.EU, other: regions.US})
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	us := newRegion(t, regions.US, p.srv.URL, func(o *regions.Options) { o.Now = now })
	ctx := context.Background()

	if home, ok := us.Locate(ctx, regions.KindAPIKey, hash); !ok || home != regions.EU {
		t.Fatalf("found: %s %v", home, ok)
	}
	if home, ok := us.Locate(ctx, regions.KindSSOSlug, "acme"); !ok || home != regions.EU {
		t.Fatalf("slug: %s %v", home, ok)
	}
	if _, ok := us.Locate(ctx, regions.KindSCIMToken, strings.Repeat("0", 64)); ok {
		t.Fatal("unknown token found")
	}
	// An answer naming the asking region itself is not a home elsewhere.
	if _, ok := us.Locate(ctx, regions.KindAPIKey, other); ok {
		t.Fatal("an answer naming this region")
	}
	calls := p.calls.Load()
	// Answers are cached: found ones for minutes, unknown ones briefly.
	us.Locate(ctx, regions.KindAPIKey, hash)
	us.Locate(ctx, regions.KindSCIMToken, strings.Repeat("0", 64))
	if p.calls.Load() != calls {
		t.Errorf("cached answers were asked again")
	}
	advance(time.Minute)
	us.Locate(ctx, regions.KindAPIKey, hash)
	us.Locate(ctx, regions.KindSCIMToken, strings.Repeat("0", 64))
	if got := p.calls.Load(); got != calls+1 {
		t.Errorf("after a minute: %d calls, want %d (only the unknown one again)", got, calls+1)
	}
	// Malformed values never cross the link.
	calls = p.calls.Load()
	for k, v := range map[regions.Kind]string{regions.KindAPIKey: "short", regions.KindSCIMToken: strings.Repeat("AB", 32),
		regions.KindSSOSlug: strings.Repeat("s", 201), "other": hash} {
		if _, ok := us.Locate(ctx, k, v); ok {
			t.Errorf("%s %q found", k, v)
		}
	}
	if p.calls.Load() != calls {
		t.Error("malformed values were sent")
	}
	// The link down: not found, and not cached as unknown for long.
	p.mu.Lock()
	p.failing = true
	p.mu.Unlock()
	fresh := strings.Repeat("ef", 32)
	p.known[fresh] = regions.EU
	if _, ok := us.Locate(ctx, regions.KindAPIKey, fresh); ok {
		t.Error("found through a failing link")
	}
	p.mu.Lock()
	p.failing = false
	p.mu.Unlock()
	if _, ok := us.Locate(ctx, regions.KindAPIKey, fresh); !ok {
		t.Error("a failure was cached")
	}
	// Without a link nothing is asked.
	alone := newRegion(t, regions.US, "")
	if alone.Linked() {
		t.Fatal("linked without a peer")
	}
	if _, ok := alone.Locate(ctx, regions.KindAPIKey, hash); ok {
		t.Error("found without a link")
	}
	var nilRegion *regions.Region
	if _, ok := nilRegion.Locate(ctx, regions.KindAPIKey, hash); ok {
		t.Error("found by a nil region")
	}
}

func TestLocateBounded(t *testing.T) {
	euSide := newRegion(t, regions.EU, "http://127.0.0.1:1")
	p := newPeer(t, euSide, map[string]regions.Name{})
	p.block = make(chan struct{})
	us := newRegion(t, regions.US, p.srv.URL, func(o *regions.Options) { o.MaxLookups = 2; o.LookupTimeout = 5 * time.Second })
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { us.Locate(ctx, regions.KindAPIKey, strings.Repeat(string(rune('a'+i)), 64)) })
	}
	for p.calls.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	// Both slots are taken: a third lookup answers at once, without a call.
	if _, ok := us.Locate(ctx, regions.KindAPIKey, strings.Repeat("c", 64)); ok || p.calls.Load() != 2 {
		t.Errorf("a saturated link was asked (%d calls)", p.calls.Load())
	}
	close(p.block)
	wg.Wait()
	// A slow peer is bounded by the lookup timeout.
	p.block = make(chan struct{})
	defer close(p.block)
	slow := newRegion(t, regions.US, p.srv.URL, func(o *regions.Options) { o.LookupTimeout = 50 * time.Millisecond })
	if _, ok := slow.Locate(ctx, regions.KindAPIKey, strings.Repeat("d", 64)); ok {
		t.Error("found through a stalled link")
	}
}

func TestServeLocate(t *testing.T) {
	eu := newRegion(t, regions.EU, "http://127.0.0.1:1")
	hash := strings.Repeat("12", 32)
	lookup := func(_ context.Context, v string) (regions.Name, error) {
		switch v {
		case hash:
			return "", nil // a record from before regions: this region's
		case "broken":
			return "", errors.New("store down")
		}
		return "", regions.ErrUnknown
	}
	serve := func(k regions.Kind, auth, body string) (int, string) {
		req := httptest.NewRequest("POST", regions.LocatePath(k), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error { return eu.ServeLocate(w, r, k, lookup) }).ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	good := "Bearer " + strings.Repeat("L", 40)
	cases := []struct {
		kind         regions.Kind
		auth, body   string
		status       int
		bodyContains string
	}{
		{regions.KindAPIKey, good, `{"value":"` + hash + `"}`, 200, `{"region":"eu"}`},
		{regions.KindAPIKey, good, `{"value":"` + strings.Repeat("34", 32) + `"}`, 404, "Not found in the EU region"},
		{regions.KindAPIKey, "", `{"value":"` + hash + `"}`, 401, "Missing region link token"},
		{regions.KindAPIKey, "Basic abc", `{"value":"` + hash + `"}`, 401, "Missing"},
		{regions.KindAPIKey, "Bearer " + strings.Repeat("L", 39), `{"value":"` + hash + `"}`, 401, "Invalid region link token"},
		{regions.KindAPIKey, good, `{"value":"xyz"}`, 422, `"loc":["body","value"]`},
		{regions.KindAPIKey, good, `{"value":"` + strings.ToUpper(hash[:2]) + hash[2:] + `"}`, 200, `"eu"`},
		{regions.KindSSOSlug, good, `{"value":""}`, 422, "login slug"},
		{regions.KindSSOSlug, good, `{"value":"broken"}`, 500, "Internal server error"},
		{regions.KindAPIKey, good, `{"value":1}`, 422, "loc"},
		{regions.KindAPIKey, good, `{"value":"` + hash + `","extra":1}`, 422, "extra"},
		{regions.KindAPIKey, good, `not json`, 422, "loc"},
	}
	for _, c := range cases {
		status, body := serve(c.kind, c.auth, c.body)
		if status != c.status || !strings.Contains(body, c.bodyContains) {
			t.Errorf("%s %q %s: %d %s, want %d with %q", c.kind, c.auth, c.body, status, body, c.status, c.bodyContains)
		}
	}
	// Without a link the routes do not exist.
	alone := newRegion(t, regions.EU, "")
	req := httptest.NewRequest("POST", "/", strings.NewReader(`{}`))
	req.Header.Set("Authorization", good)
	if err := alone.VerifyLink(req); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unlinked: %v", err)
	}
}

func TestCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+strings.Repeat("L", 40) || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(401)
			return
		}
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(`{"region":"eu"}`))
		case "/garbage":
			_, _ = w.Write([]byte(`<html>`))
		case "/long":
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"detail":"` + strings.Repeat("x", 2000) + `"}`))
		case "/list":
			w.WriteHeader(422)
			_, _ = w.Write([]byte(`{"detail":[{"loc":["body"],"msg":"bad","type":"x"}]}`))
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	r := newRegion(t, regions.US, srv.URL)
	ctx := context.Background()
	var ans regions.LocateAnswer
	if err := r.Call(ctx, "/ok", struct{}{}, &ans); err != nil || ans.Region != regions.EU {
		t.Errorf("ok: %v %+v", err, ans)
	}
	if err := r.Call(ctx, "/garbage", struct{}{}, &ans); err == nil {
		t.Error("garbage accepted")
	}
	var pe *regions.PeerError
	if err := r.Call(ctx, "/long", struct{}{}, nil); !errors.As(err, &pe) || pe.Status != 503 || len(pe.Detail) != 500 {
		t.Errorf("long: %v", err)
	}
	if err := r.Call(ctx, "/list", struct{}{}, nil); !errors.As(err, &pe) || pe.Status != 422 || !strings.Contains(pe.Detail, "bad") {
		t.Errorf("list detail: %v", err)
	}
	if err := r.Call(ctx, "/ok", make(chan int), nil); err == nil {
		t.Error("unencodable body sent")
	}
	if err := newRegion(t, regions.US, "").Call(ctx, "/ok", struct{}{}, nil); !errors.Is(err, regions.ErrNoLink) {
		t.Errorf("unlinked: %v", err)
	}
	down := newRegion(t, regions.US, "http://127.0.0.1:1")
	if err := down.Call(ctx, "/ok", struct{}{}, nil); err == nil || !strings.Contains(err.Error(), "calling the EU region") {
		t.Errorf("down: %v", err)
	}
}

// FuzzConfig: no configuration value panics Check, and an accepted one
// stays accepted and unchanged by a second Check.
func FuzzConfig(f *testing.F) {
	f.Add("https://api.eu.example.com", "10.0.0.1,10.0.0.2", "http://127.0.0.1:8000", "tok")
	f.Add("http://[::1]:80/", "2001:db8::1", "", strings.Repeat("t", 32))
	f.Add("%zz", ",", "https://", "")
	f.Add("https://a.example/?q", " 1.2.3.4 ", "http://x:y@z", strings.Repeat("t", 40))
	f.Fuzz(func(t *testing.T, apiURL, ips, base, token string) {
		vars := map[string]string{"AGENTPLANE_EU_API_URL": apiURL, "AGENTPLANE_EU_EGRESS_IPS": ips, "AGENTPLANE_REGION_LINK_TOKEN": token}
		c, err := regions.ConfigFromEnv(env(vars), regions.US)
		if err != nil {
			return
		}
		if err := c.Check(base, true); err != nil {
			return
		}
		before, _ := json.Marshal(c)
		if err := c.Check(base, true); err != nil {
			t.Fatalf("accepted once, refused twice: %v", err)
		}
		if after, _ := json.Marshal(c); string(after) != string(before) {
			t.Fatalf("Check is not idempotent: %s → %s", before, after)
		}
		if _, err := regions.New(c, regions.Options{}); err != nil {
			t.Fatalf("checked config refused by New: %v", err)
		}
	})
}
