package ratelimits_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

func TestClientAddr(t *testing.T) {
	proxies, err := ratelimits.ParseProxies("10.0.0.0/8, 192.0.2.7 ,2001:db8::/32")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		remote  string
		xff     []string
		trusted ratelimits.Proxies
		want    string
	}{
		{"socket", "198.51.100.1:5000", nil, proxies, "198.51.100.1"},
		{"spoofed header from an untrusted peer", "198.51.100.1:5000", []string{"203.0.113.9"}, proxies, "198.51.100.1"},
		{"no trusted proxies", "10.0.0.1:5000", []string{"203.0.113.9"}, nil, "10.0.0.1"},
		{"trusted peer", "10.0.0.1:5000", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
		{"right to left, skipping trusted hops", "10.0.0.1:5000", []string{"1.1.1.1, 203.0.113.9, 10.2.3.4"}, proxies, "203.0.113.9"},
		{"a client cannot prepend itself", "10.0.0.1:5000", []string{"9.9.9.9, 203.0.113.9"}, proxies, "203.0.113.9"},
		{"several header lines", "192.0.2.7:80", []string{"9.9.9.9", "203.0.113.9, 10.0.0.5"}, proxies, "203.0.113.9"},
		{"all trusted: the leftmost", "10.0.0.1:5000", []string{"10.9.9.9, 10.0.0.2"}, proxies, "10.9.9.9"},
		{"garbage stops at the last trusted hop", "10.0.0.1:5000", []string{"203.0.113.9, nonsense, 10.0.0.2"}, proxies, "10.0.0.2"},
		{"empty header", "10.0.0.1:5000", []string{""}, proxies, "10.0.0.1"},
		{"ports and brackets", "[2001:db8::1]:443", []string{"[2001:db8:ffff::1]:1234, 203.0.113.9:80"}, proxies, "203.0.113.9"},
		{"mapped v4 peer", "[::ffff:10.0.0.1]:80", []string{"203.0.113.9"}, proxies, "203.0.113.9"},
		{"unparseable peer", "nonsense", []string{"203.0.113.9"}, proxies, "invalid IP"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := ratelimits.ClientAddr(r, c.trusted).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestParseProxiesRejects(t *testing.T) {
	for _, s := range []string{"10.0.0.0/33", "nope", "10.0.0.1/8/1"} {
		if _, err := ratelimits.ParseProxies(s); err == nil {
			t.Errorf("ParseProxies(%q) accepted", s)
		}
	}
	p, err := ratelimits.ParseProxies("")
	if err != nil || len(p) != 0 {
		t.Errorf("empty: %v %v", p, err)
	}
	p, _ = ratelimits.ParseProxies("10.1.2.3/8")
	if p[0] != netip.MustParsePrefix("10.0.0.0/8") {
		t.Errorf("not masked: %v", p)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ratelimits.ConfigFromEnv(env(nil), false)
	if err != nil || c.Enabled || c.Region != ratelimits.US || len(c.TrustedProxies) != 0 {
		t.Errorf("local default: %+v %v", c, err)
	}
	c, err = ratelimits.ConfigFromEnv(env(nil), true)
	if err != nil || !c.Enabled {
		t.Errorf("aws default: %+v %v", c, err)
	}
	c, err = ratelimits.ConfigFromEnv(env(map[string]string{
		"AGENTPLANE_RATE_LIMITS": "on", "AGENTPLANE_REGION_NAME": "EU", "AGENTPLANE_TRUSTED_PROXIES": "10.0.0.0/8",
	}), false)
	if err != nil || !c.Enabled || c.Region != ratelimits.EU || len(c.TrustedProxies) != 1 {
		t.Errorf("local on, eu: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"AGENTPLANE_RATE_LIMITS": "maybe"},
		{"AGENTPLANE_REGION_NAME": "ap"},
		{"AGENTPLANE_TRUSTED_PROXIES": "x"},
	} {
		if _, err := ratelimits.ConfigFromEnv(env(bad), false); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := ratelimits.ConfigFromEnv(env(map[string]string{"AGENTPLANE_RATE_LIMITS": "off"}), true); err == nil {
		t.Error("off accepted in AWS mode")
	}
}
