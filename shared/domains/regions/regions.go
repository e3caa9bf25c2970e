// Package regions holds the hosted platform's two regions: their names,
// their published addresses (web, API and beacon hosts, egress and ingress
// IP addresses), the rule that an organization's data is served only in its
// home region (the misdirected-request error), and the authenticated link
// between the two regions (locating a credential in the other region,
// billing calls to the billing home). See docs/regions.md.
package regions

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Name is a hosted region's name.
type Name string

const (
	US Name = "us"
	EU Name = "eu"
)

// BillingHome is the region that keeps payment and billing data (the
// interface: "Payment and billing data is stored only in the US").
const BillingHome = US

// Names lists the regions.
var Names = []Name{US, EU}

// ParseName accepts "us" or "eu".
func ParseName(s string) (Name, error) {
	switch n := Name(s); n {
	case US, EU:
		return n, nil
	}
	return "", fmt.Errorf("regions: unknown region %q (us or eu)", s)
}

// Other is the other region.
func (n Name) Other() Name {
	if n == US {
		return EU
	}
	return US
}

// Label is the name as people write it ("US", "EU").
func (n Name) Label() string { return strings.ToUpper(string(n)) }

// Addresses are one region's published addresses. A URL is empty when it
// is not configured (the interface gives placeholders only).
type Addresses struct {
	Region    Name   `json:"region"`
	AppURL    string `json:"app_url,omitempty"`
	APIURL    string `json:"api_url,omitempty"`
	BeaconURL string `json:"beacon_url,omitempty"`
	// EgressIPs are the NAT addresses all outbound traffic comes from.
	EgressIPs []string `json:"egress_ips"`
	// IngressIPs are the static addresses the API is reached at.
	IngressIPs []string `json:"ingress_ips"`
}

// Hosted is the interface's tables of hosted addresses, one entry per
// region.
type Hosted struct {
	US Addresses `json:"us"`
	EU Addresses `json:"eu"`
}

// Of returns the addresses of region n.
func (h Hosted) Of(n Name) Addresses {
	if n == EU {
		return h.EU
	}
	return h.US
}

func (h *Hosted) of(n Name) *Addresses {
	if n == EU {
		return &h.EU
	}
	return &h.US
}

// Defaults returns the interface's values: its egress (NAT) and ingress
// tables. It names no hosts: the interface writes them as placeholders
// ({us_api_url}, ...), so they are configuration. The CDK app reads these
// values to output them.
func Defaults() Hosted {
	return Hosted{
		US: Addresses{Region: US,
			EgressIPs: []string{"34.59.65.97", "34.67.51.221", "34.46.212.37", "34.132.150.88",
				"35.188.222.201", "34.58.194.127", "34.59.97.173", "104.198.162.55"},
			IngressIPs: []string{"34.8.121.39", "34.107.251.234"},
		},
		EU: Addresses{Region: EU,
			EgressIPs: []string{"34.13.192.67", "34.147.105.64", "34.90.22.166", "34.147.36.213",
				"34.32.137.113", "34.91.238.184", "35.204.101.241", "35.204.48.32"},
			IngressIPs: []string{"34.95.92.214", "34.13.73.122"},
		},
	}
}

// Config is a process's region configuration (ConfigFromEnv).
type Config struct {
	// Region is this process's region (AGENTPLANE_REGION_NAME).
	Region Name
	// Hosted are both regions' published addresses.
	Hosted Hosted
	// PeerURL is the base URL at which this region calls the other one
	// (AGENTPLANE_PEER_URL; default: the other region's API URL). Empty:
	// no link, a single-region installation.
	PeerURL string
	// LinkToken authenticates the calls between the regions: the same
	// secret in both (AGENTPLANE_REGION_LINK_TOKEN). Required with a peer.
	LinkToken string
}

// MinLinkTokenLen is the shortest accepted region link token.
const MinLinkTokenLen = 32

// Environment variables read by ConfigFromEnv.
const (
	EnvPeerURL   = "AGENTPLANE_PEER_URL"
	EnvLinkToken = "AGENTPLANE_REGION_LINK_TOKEN"
)

// EnvURL and EnvIPs name a region's address variables, e.g.
// AGENTPLANE_EU_API_URL, AGENTPLANE_US_EGRESS_IPS.
func EnvURL(n Name, what string) string { return "AGENTPLANE_" + n.Label() + "_" + what + "_URL" }

// EnvIPs names a region's IP list variable (what: EGRESS or INGRESS).
func EnvIPs(n Name, what string) string { return "AGENTPLANE_" + n.Label() + "_" + what + "_IPS" }

// ConfigFromEnv reads the addresses and the link of region from getenv
// (os.Getenv): the interface's values where a variable is unset. Call
// Check before use.
func ConfigFromEnv(getenv func(string) string, region Name) (Config, error) {
	c := Config{Region: region, Hosted: Defaults(),
		PeerURL: getenv(EnvPeerURL), LinkToken: getenv(EnvLinkToken)}
	for _, n := range Names {
		a := c.Hosted.of(n)
		a.AppURL = getenv(EnvURL(n, "APP"))
		a.APIURL = getenv(EnvURL(n, "API"))
		a.BeaconURL = getenv(EnvURL(n, "BEACON"))
		for what, list := range map[string]*[]string{"EGRESS": &a.EgressIPs, "INGRESS": &a.IngressIPs} {
			raw := getenv(EnvIPs(n, what))
			if raw == "" {
				continue
			}
			*list = nil
			for _, ip := range strings.Split(raw, ",") {
				*list = append(*list, strings.TrimSpace(ip))
			}
		}
	}
	return c, nil
}

// Env is c as the environment variables ConfigFromEnv reads (for the CDK
// app to give its functions); the link token is left out (it is a secret
// the deployment supplies).
func (c Config) Env() map[string]string {
	out := map[string]string{}
	if c.PeerURL != "" {
		out[EnvPeerURL] = c.PeerURL
	}
	for _, n := range Names {
		a := c.Hosted.Of(n)
		for what, v := range map[string]string{"APP": a.AppURL, "API": a.APIURL, "BEACON": a.BeaconURL} {
			if v != "" {
				out[EnvURL(n, what)] = v
			}
		}
		out[EnvIPs(n, "EGRESS")] = strings.Join(a.EgressIPs, ",")
		out[EnvIPs(n, "INGRESS")] = strings.Join(a.IngressIPs, ",")
	}
	return out
}

// Check validates c and fills the defaults that depend on the process:
// this region's API URL is baseURL (the installation's public URL) unless
// configured, and locally (local true) its web app too; the other region's
// API and web URLs default to the peer URL, and the peer URL to the other
// region's API URL. A zero Hosted gets Defaults(). Check is idempotent.
func (c *Config) Check(baseURL string, local bool) error {
	if _, err := ParseName(string(c.Region)); err != nil {
		return fmt.Errorf("AGENTPLANE_REGION_NAME must be us or eu, not %q", c.Region)
	}
	def := Defaults()
	for _, n := range Names {
		a := c.Hosted.of(n)
		a.Region = n
		if a.EgressIPs == nil {
			a.EgressIPs = def.Of(n).EgressIPs
		}
		if a.IngressIPs == nil {
			a.IngressIPs = def.Of(n).IngressIPs
		}
	}
	here, peer := c.Hosted.of(c.Region), c.Hosted.of(c.Region.Other())
	// Each URL is replaced only once it is valid, so a refused
	// configuration is refused again.
	clean := func(name string, v *string) error {
		u, err := cleanURL(name, *v)
		if err == nil {
			*v = u
		}
		return err
	}
	if err := clean(EnvPeerURL, &c.PeerURL); err != nil {
		return err
	}
	for _, n := range Names {
		a := c.Hosted.of(n)
		for what, v := range map[string]*string{"APP": &a.AppURL, "API": &a.APIURL, "BEACON": &a.BeaconURL} {
			if err := clean(EnvURL(n, what), v); err != nil {
				return err
			}
		}
		for what, list := range map[string][]string{"EGRESS": a.EgressIPs, "INGRESS": a.IngressIPs} {
			for _, ip := range list {
				if _, err := netip.ParseAddr(ip); err != nil {
					return fmt.Errorf("%s: %q is not an IP address", EnvIPs(n, what), ip)
				}
			}
		}
	}
	base, err := cleanURL("AGENTPLANE_BASE_URL", baseURL)
	if err != nil {
		return err
	}
	if here.APIURL == "" {
		here.APIURL = base
	}
	if local && here.AppURL == "" {
		here.AppURL = base
	}
	if c.PeerURL == "" {
		c.PeerURL = peer.APIURL
	}
	if peer.APIURL == "" {
		peer.APIURL = c.PeerURL
	}
	if local && peer.AppURL == "" {
		peer.AppURL = peer.APIURL
	}
	if c.PeerURL != "" {
		if c.PeerURL == here.APIURL {
			return fmt.Errorf("%s %s is this region's own API URL: it must reach the %s region", EnvPeerURL, c.PeerURL, c.Region.Other().Label())
		}
		if len(c.LinkToken) < MinLinkTokenLen {
			return fmt.Errorf("%s must be at least %d characters when the regions are linked (%s is %s)", EnvLinkToken, MinLinkTokenLen, EnvPeerURL, c.PeerURL)
		}
	}
	return nil
}

// cleanURL checks an absolute http(s) URL without query or fragment and
// drops its trailing slash; "" stays "".
func cleanURL(name, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s must be an absolute http or https URL without credentials, query or fragment, not %q", name, raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// Document is what GET /api/v1/regions publishes.
type Document struct {
	// Region is the region that answered.
	Region Name `json:"region"`
	// BillingRegion keeps payment and billing data.
	BillingRegion Name `json:"billing_region"`
	// Regions lists both regions' addresses.
	Regions []Addresses `json:"regions"`
}

// Document returns the published addresses.
func (c Config) Document() Document {
	d := Document{Region: c.Region, BillingRegion: BillingHome}
	for _, n := range Names {
		a := c.Hosted.Of(n)
		a.EgressIPs, a.IngressIPs = slices.Clone(a.EgressIPs), slices.Clone(a.IngressIPs)
		d.Regions = append(d.Regions, a)
	}
	return d
}
