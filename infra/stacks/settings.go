package stacks

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/regions"
)

// Site is one hosted region's deployment settings: where it runs, the
// addresses it publishes, and the Elastic IPs of its network edge. Both
// stacks know both sites, because each publishes the other's addresses and
// calls the other's API: two stacks in two regions cannot read each other's
// outputs both ways, so these come from CDK context (SitesFromContext), with
// documented placeholders as defaults.
type Site struct {
	// Name is "us" or "eu".
	Name string
	// StackID is the region's stack; physical names shared across the
	// regions (the billing queue, the billing role) derive from it.
	StackID string
	// AWSRegion is the AWS region of the stack, e.g. us-east-1.
	AWSRegion string
	// APIURL, AppURL and BeaconURL are the published hosted addresses
	// (https://host, no path). APIURL is the platform API's custom domain:
	// its DNS name must resolve to the Ingress addresses.
	APIURL, AppURL, BeaconURL string
	// APICertificateARN is an ACM certificate (in AWSRegion) for the API's
	// host; empty: the stack requests one, validated by DNS.
	APICertificateARN string
	// AppCertificateARN is an ACM certificate in us-east-1 for the web
	// app's host, which CloudFront then serves; empty: the UI is served at
	// the distribution's own cloudfront.net name.
	AppCertificateARN string
	// AZs are the availability zones of the VPC (one NAT gateway and one
	// load balancer address per zone).
	AZs []string
	// CIDR is the VPC's address range.
	CIDR string
	// Egress are the NAT gateways' Elastic IPs: the first len(AZs) are the
	// gateways' primary addresses, the rest their secondary ones, dealt
	// out in turn. Empty: the stack allocates one per gateway.
	Egress []EIP
	// Ingress are the load balancer's Elastic IPs, one per zone. Empty:
	// the stack allocates them.
	Ingress []EIP
}

// EIP is an Elastic IP: its allocation id and its address (the address is
// what the other region publishes; it cannot be looked up at synthesis).
type EIP struct {
	AllocationID string `json:"allocationId"`
	IP           string `json:"ip"`
}

// Sites are the two hosted regions' settings.
type Sites struct {
	US, EU Site
}

// Of returns the site named n ("us" or "eu").
func (s Sites) Of(n string) Site {
	if n == "eu" {
		return s.EU
	}
	return s.US
}

// Context keys read by SitesFromContext, for region r in {us, eu}:
//
//	<r>Region              AWS region (us-east-1, eu-west-1)
//	<r>ApiUrl              platform API URL (https://api.<r>.example.com)
//	<r>AppUrl              web app URL (https://app.<r>.example.com)
//	<r>BeaconUrl           beacon URL (https://beacon.<r>.example.com)
//	<r>ApiCertificateArn   ACM certificate of the API host (default: requested, DNS-validated)
//	<r>AppCertificateArn   ACM certificate (us-east-1) of the app host (default: none)
//	<r>Azs                 availability zones (<region>a, <region>b)
//	<r>VpcCidr             VPC range (10.0.0.0/16)
//	<r>EgressEips          NAT Elastic IPs: "eipalloc-…=203.0.113.1,…" or [{"allocationId","ip"}]
//	<r>IngressEips         load balancer Elastic IPs, one per zone, same forms
const (
	ctxRegion      = "Region"
	ctxAPIURL      = "ApiUrl"
	ctxAppURL      = "AppUrl"
	ctxBeaconURL   = "BeaconUrl"
	ctxAPICert     = "ApiCertificateArn"
	ctxAppCert     = "AppCertificateArn"
	ctxAZs         = "Azs"
	ctxCIDR        = "VpcCidr"
	ctxEgressEIPs  = "EgressEips"
	ctxIngressEIPs = "IngressEips"
)

// ContextKeys lists every per-region context key, for the docs and tests.
func ContextKeys() []string {
	var out []string
	for _, r := range []string{"us", "eu"} {
		for _, k := range []string{ctxRegion, ctxAPIURL, ctxAppURL, ctxBeaconURL, ctxAPICert, ctxAppCert, ctxAZs, ctxCIDR, ctxEgressEIPs, ctxIngressEIPs} {
			out = append(out, r+k)
		}
	}
	return out
}

// DefaultAWSRegions are the AWS regions of the two stacks unless context
// says otherwise.
var DefaultAWSRegions = map[string]string{"us": "us-east-1", "eu": "eu-west-1"}

// PlaceholderDomain is the domain of the default hosted addresses: the
// interface writes them as placeholders ({us_api_url}, …), and example.com
// (RFC 2606) can never be someone's real host. A deployment sets the
// <r>ApiUrl, <r>AppUrl and <r>BeaconUrl context keys.
const PlaceholderDomain = "example.com"

// MaxEIPsPerNAT is the most addresses a NAT gateway takes (one primary,
// seven secondary; beyond two needs a quota increase).
const MaxEIPsPerNAT = 8

var (
	allocationID = regexp.MustCompile(`^eipalloc-[0-9a-f]{8,17}$`)
	acmARN       = regexp.MustCompile(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]{36}$`)
	azName       = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9][a-z]$`)
)

// SitesFromContext reads both sites from CDK context (get returns a
// context value or nil), with the defaults above; stackIDs names each
// region's stack.
func SitesFromContext(get func(key string) any, stackIDs map[string]string) (Sites, error) {
	var out Sites
	for _, r := range []string{"us", "eu"} {
		str := func(k, def string) (string, error) {
			switch v := get(r + k).(type) {
			case nil:
				return def, nil
			case string:
				if v == "" {
					return def, nil
				}
				return v, nil
			default:
				return "", fmt.Errorf("context %s%s: want a string, not %T", r, k, v)
			}
		}
		s := Site{Name: r, StackID: stackIDs[r]}
		var err error
		fields := []struct {
			key, def string
			to       *string
		}{
			{ctxRegion, DefaultAWSRegions[r], &s.AWSRegion},
			{ctxAPIURL, "https://api." + r + "." + PlaceholderDomain, &s.APIURL},
			{ctxAppURL, "https://app." + r + "." + PlaceholderDomain, &s.AppURL},
			{ctxBeaconURL, "https://beacon." + r + "." + PlaceholderDomain, &s.BeaconURL},
			{ctxAPICert, "", &s.APICertificateARN},
			{ctxAppCert, "", &s.AppCertificateARN},
			{ctxCIDR, "10.0.0.0/16", &s.CIDR},
		}
		for _, f := range fields {
			if *f.to, err = str(f.key, f.def); err != nil {
				return out, err
			}
		}
		if s.AZs, err = stringList(get(r+ctxAZs), r+ctxAZs); err != nil {
			return out, err
		}
		if len(s.AZs) == 0 {
			s.AZs = []string{s.AWSRegion + "a", s.AWSRegion + "b"}
		}
		if s.Egress, err = eipList(get(r+ctxEgressEIPs), r+ctxEgressEIPs); err != nil {
			return out, err
		}
		if s.Ingress, err = eipList(get(r+ctxIngressEIPs), r+ctxIngressEIPs); err != nil {
			return out, err
		}
		if r == "eu" {
			out.EU = s
		} else {
			out.US = s
		}
	}
	return out, out.Check()
}

// stringList reads a context list: a JSON array of strings, or a string
// of comma-separated values (what `-c key=a,b` gives).
func stringList(v any, key string) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	case []any:
		var out []string
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("context %s: want strings, not %T", key, e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("context %s: want a list or a comma-separated string, not %T", key, v)
}

// eipList reads Elastic IPs: "eipalloc-…=203.0.113.1,…", or a JSON array
// of {"allocationId", "ip"} (cdk.json), or that array as a JSON string.
func eipList(v any, key string) ([]EIP, error) {
	if s, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(s), "[") {
		var arr []any
		if err := json.Unmarshal([]byte(s), &arr); err != nil {
			return nil, fmt.Errorf("context %s: %w", key, err)
		}
		v = arr
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		var out []EIP
		for _, pair := range strings.Split(v, ",") {
			if pair = strings.TrimSpace(pair); pair == "" {
				continue
			}
			id, ip, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, fmt.Errorf("context %s: %q is not allocationId=ip", key, pair)
			}
			out = append(out, EIP{AllocationID: strings.TrimSpace(id), IP: strings.TrimSpace(ip)})
		}
		return out, nil
	case []any:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var out []EIP
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("context %s: want [{\"allocationId\": …, \"ip\": …}]: %w", key, err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("context %s: want allocationId=ip pairs, not %T", key, v)
}

// Check validates both sites: what AWS or the product would refuse later,
// refused at synthesis with the context key to fix.
func (s Sites) Check() error {
	seenAlloc := map[string]string{}
	for _, site := range []Site{s.US, s.EU} {
		r := site.Name
		if site.StackID == "" || site.AWSRegion == "" {
			return fmt.Errorf("site %s: no stack id or AWS region", r)
		}
		for k, u := range map[string]string{ctxAPIURL: site.APIURL, ctxAppURL: site.AppURL, ctxBeaconURL: site.BeaconURL} {
			if _, err := hostOf(u); err != nil {
				return fmt.Errorf("context %s%s: %w", r, k, err)
			}
		}
		for k, arn := range map[string]string{ctxAPICert: site.APICertificateARN, ctxAppCert: site.AppCertificateARN} {
			if arn == "" {
				continue
			}
			m := acmARN.FindStringSubmatch(arn)
			if m == nil {
				return fmt.Errorf("context %s%s: %q is not an ACM certificate ARN", r, k, arn)
			}
			want := site.AWSRegion
			if k == ctxAppCert {
				want = "us-east-1" // CloudFront's certificates live there
			}
			if m[1] != want {
				return fmt.Errorf("context %s%s: the certificate must be in %s, not %s", r, k, want, m[1])
			}
		}
		if len(site.AZs) < 2 {
			return fmt.Errorf("context %s%s: at least two availability zones (one NAT gateway and load balancer address each)", r, ctxAZs)
		}
		for _, az := range site.AZs {
			if !azName.MatchString(az) || !strings.HasPrefix(az, site.AWSRegion) {
				return fmt.Errorf("context %s%s: %q is not a zone of %s", r, ctxAZs, az, site.AWSRegion)
			}
		}
		if p, err := netip.ParsePrefix(site.CIDR); err != nil || !p.Addr().Is4() || p.Bits() > 20 || p.Bits() < 16 {
			return fmt.Errorf("context %s%s: %q: want an IPv4 range from /16 to /20", r, ctxCIDR, site.CIDR)
		}
		for k, eips := range map[string][]EIP{ctxEgressEIPs: site.Egress, ctxIngressEIPs: site.Ingress} {
			for _, e := range eips {
				if !allocationID.MatchString(e.AllocationID) {
					return fmt.Errorf("context %s%s: %q is not an Elastic IP allocation id", r, k, e.AllocationID)
				}
				if a, err := netip.ParseAddr(e.IP); err != nil || !a.Is4() {
					return fmt.Errorf("context %s%s: %q is not an IPv4 address", r, k, e.IP)
				}
				if other, dup := seenAlloc[e.AllocationID]; dup {
					return fmt.Errorf("context %s%s: %s is also in %s", r, k, e.AllocationID, other)
				}
				seenAlloc[e.AllocationID] = r + k
			}
		}
		n := len(site.AZs)
		if e := len(site.Egress); e > 0 && (e < n || e > n*MaxEIPsPerNAT) {
			return fmt.Errorf("context %s%s: %d addresses for %d NAT gateways (one per zone): give %d to %d", r, ctxEgressEIPs, e, n, n, n*MaxEIPsPerNAT)
		}
		if i := len(site.Ingress); i > 0 && i != n {
			return fmt.Errorf("context %s%s: %d addresses for a load balancer in %d zones: give one per zone", r, ctxIngressEIPs, i, n)
		}
	}
	if s.US.APIURL == s.EU.APIURL {
		return fmt.Errorf("context usApiUrl and euApiUrl are both %s: each region has its own API", s.US.APIURL)
	}
	return nil
}

// hostOf checks an https URL without path, query or credentials (a host
// the stack serves at its root) and returns its host.
func hostOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Port() != "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: want https://host (no port, path, query or credentials)", raw)
	}
	return u.Hostname(), nil
}

// origin is an https URL without its trailing slash.
func origin(raw string) string { return strings.TrimRight(raw, "/") }

// Published is the hosted-address configuration the functions of region
// name get (regions.Config): both regions' URLs, and their egress and
// ingress addresses; own are this region's addresses as the stack deploys
// them (allocated ones are CloudFormation values), and the other region's
// come from context or, without it, the interface's tables.
func (s Sites) Published(name string, ownEgress, ownIngress []string) regions.Config {
	def := regions.Defaults()
	c := regions.Config{Region: regions.Name(name)}
	for _, site := range []Site{s.US, s.EU} {
		n := regions.Name(site.Name)
		a := regions.Addresses{Region: n, APIURL: origin(site.APIURL), AppURL: origin(site.AppURL), BeaconURL: origin(site.BeaconURL),
			EgressIPs: ips(site.Egress), IngressIPs: ips(site.Ingress)}
		if site.Name == name {
			a.EgressIPs, a.IngressIPs = ownEgress, ownIngress
		}
		if len(a.EgressIPs) == 0 {
			a.EgressIPs = def.Of(n).EgressIPs
		}
		if len(a.IngressIPs) == 0 {
			a.IngressIPs = def.Of(n).IngressIPs
		}
		if n == regions.EU {
			c.Hosted.EU = a
		} else {
			c.Hosted.US = a
		}
	}
	c.PeerURL = origin(s.Of(string(regions.Name(name).Other())).APIURL)
	return c
}

func ips(eips []EIP) []string {
	var out []string
	for _, e := range eips {
		out = append(out, e.IP)
	}
	return out
}
