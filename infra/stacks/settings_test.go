package stacks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/infra/stacks"
)

var stackIDs = map[string]string{"us": "S-US", "eu": "S-EU"}

func sites(t *testing.T, ctx map[string]any) (stacks.Sites, error) {
	t.Helper()
	return stacks.SitesFromContext(func(k string) any { return ctx[k] }, stackIDs)
}

func TestSitesDefaults(t *testing.T) {
	s, err := sites(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		site                       stacks.Site
		name, region, api, app, az string
	}{
		{s.US, "us", "us-east-1", "https://api.us.example.com", "https://app.us.example.com", "us-east-1a,us-east-1b"},
		{s.EU, "eu", "eu-west-1", "https://api.eu.example.com", "https://app.eu.example.com", "eu-west-1a,eu-west-1b"},
	} {
		if c.site.Name != c.name || c.site.StackID != stackIDs[c.name] || c.site.AWSRegion != c.region || c.site.APIURL != c.api ||
			c.site.AppURL != c.app || strings.Join(c.site.AZs, ",") != c.az || c.site.CIDR != "10.0.0.0/16" ||
			c.site.Egress != nil || c.site.Ingress != nil || c.site.APICertificateARN != "" || c.site.AppCertificateARN != "" {
			t.Errorf("%s: %+v", c.name, c.site)
		}
	}
	// Without context, the other region's published addresses are the
	// interface's tables; this region's are the stack's own.
	c := s.Published("us", []string{"192.0.2.1"}, []string{"192.0.2.2"})
	if c.PeerURL != "https://api.eu.example.com" || strings.Join(c.Hosted.US.EgressIPs, ",") != "192.0.2.1" ||
		len(c.Hosted.EU.EgressIPs) != 8 || c.Hosted.EU.EgressIPs[0] != "34.13.192.67" || c.Hosted.EU.IngressIPs[1] != "34.13.73.122" {
		t.Errorf("published %+v", c)
	}
	if err := c.Check(c.Hosted.US.APIURL, false); err == nil {
		t.Error("the published configuration has no link token, and Check accepts it")
	}
	c.LinkToken = strings.Repeat("t", 64)
	if err := c.Check(c.Hosted.US.APIURL, false); err != nil {
		t.Errorf("the product refuses the published configuration: %v", err)
	}
}

func TestSitesFromContext(t *testing.T) {
	s, err := sites(t, map[string]any{
		"usRegion": "us-west-2", "usAzs": []any{"us-west-2a", "us-west-2c"},
		"usApiUrl": "https://api.example.org/", "usEgressEips": "eipalloc-0123456789abcdef0=198.51.100.7,eipalloc-0123456789abcdef1=198.51.100.8",
		"euIngressEips": `[{"allocationId":"eipalloc-aaaaaaaaaaaaaaaa1","ip":"198.51.100.9"},{"allocationId":"eipalloc-aaaaaaaaaaaaaaaa2","ip":"198.51.100.10"}]`,
		"euEgressEips": []any{map[string]any{"allocationId": "eipalloc-bbbbbbbbbbbbbbbb1", "ip": "198.51.100.11"},
			map[string]any{"allocationId": "eipalloc-bbbbbbbbbbbbbbbb2", "ip": "198.51.100.12"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.US.AWSRegion != "us-west-2" || fmt.Sprint(s.US.AZs) != "[us-west-2a us-west-2c]" || s.US.APIURL != "https://api.example.org/" ||
		fmt.Sprint(s.US.Egress) != "[{eipalloc-0123456789abcdef0 198.51.100.7} {eipalloc-0123456789abcdef1 198.51.100.8}]" ||
		len(s.EU.Ingress) != 2 || s.EU.Ingress[1].IP != "198.51.100.10" || s.EU.Egress[1].AllocationID != "eipalloc-bbbbbbbbbbbbbbbb2" {
		t.Errorf("sites %+v", s)
	}
	// Each stack publishes the other region's addresses from context and
	// its own as deployed.
	eu := s.Published("eu", []string{"192.0.2.1"}, nil)
	if strings.Join(eu.Hosted.US.EgressIPs, ",") != "198.51.100.7,198.51.100.8" || eu.Hosted.US.APIURL != "https://api.example.org" ||
		eu.PeerURL != "https://api.example.org" || strings.Join(eu.Hosted.EU.EgressIPs, ",") != "192.0.2.1" ||
		strings.Join(eu.Hosted.US.IngressIPs, ",") != "34.8.121.39,34.107.251.234" {
		t.Errorf("published in the EU %+v", eu)
	}
	us := s.Published("us", nil, nil)
	if strings.Join(us.Hosted.EU.IngressIPs, ",") != "198.51.100.9,198.51.100.10" || strings.Join(us.Hosted.EU.EgressIPs, ",") != "198.51.100.11,198.51.100.12" ||
		us.PeerURL != "https://api.eu.example.com" {
		t.Errorf("published in the US %+v", us)
	}
}

func TestSitesRejects(t *testing.T) {
	eip := func(n int, prefix string) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("eipalloc-%s%015x=198.51.100.%d", prefix, i, i+1))
		}
		return strings.Join(out, ",")
	}
	for name, ctx := range map[string]map[string]any{
		"http API":              {"usApiUrl": "http://api.example.org"},
		"API with a path":       {"euApiUrl": "https://example.org/api"},
		"API with a port":       {"euApiUrl": "https://example.org:8443"},
		"app with credentials":  {"usAppUrl": "https://u:p@app.example.org"},
		"same API twice":        {"usApiUrl": "https://api.example.org", "euApiUrl": "https://api.example.org"},
		"not a string":          {"usApiUrl": 42},
		"bad certificate":       {"usApiCertificateArn": "arn:aws:iam::123456789012:role/x"},
		"API cert elsewhere":    {"euApiCertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555"},
		"app cert not us-east":  {"euAppCertificateArn": "arn:aws:acm:eu-west-1:123456789012:certificate/11111111-2222-3333-4444-555555555555"},
		"one zone":              {"usAzs": "us-east-1a"},
		"zone of another":       {"euAzs": "eu-west-1a,us-east-1b"},
		"bad cidr":              {"usVpcCidr": "10.0.0.0/8"},
		"IPv6 cidr":             {"usVpcCidr": "fd00::/56"},
		"bad allocation":        {"usEgressEips": "eip-1=198.51.100.1,eip-2=198.51.100.2"},
		"bad address":           {"usEgressEips": "eipalloc-00000000000000001=1.2.3,eipalloc-00000000000000002=198.51.100.2"},
		"IPv6 address":          {"usEgressEips": "eipalloc-00000000000000001=2001:db8::1,eipalloc-00000000000000002=198.51.100.2"},
		"not a pair":            {"usEgressEips": "eipalloc-00000000000000001"},
		"fewer than the zones":  {"usEgressEips": eip(1, "a")},
		"more than eight each":  {"usEgressEips": eip(17, "a")},
		"ingress not per zone":  {"euIngressEips": eip(3, "b")},
		"same allocation twice": {"usEgressEips": eip(2, "c"), "euIngressEips": eip(2, "c")},
		"bad JSON":              {"euEgressEips": `[{"allocationId": }]`},
		"bad list":              {"usAzs": 7},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := sites(t, ctx); err == nil {
				t.Error("accepted")
			}
		})
	}
	if keys := stacks.ContextKeys(); len(keys) != 20 || keys[0] != "usRegion" || keys[19] != "euIngressEips" {
		t.Errorf("context keys %v", keys)
	}
}
