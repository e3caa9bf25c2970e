package stacks_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/domains/ratelimits"
)

var update = flag.Bool("update", false, "rewrite the generated part of infra/README.md")

// ctxApp is the product's catalog synthesized with every site setting
// from context: hosts, certificates, three zones in the EU, and Elastic
// IPs for the NAT gateways (more than one per gateway) and the load
// balancer; no UI folder and no operator token.
var (
	ctxOnce    sync.Once
	ctxRegions []*region
	ctxErr     error
)

const (
	usCert  = "arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555"
	euCert  = "arn:aws:acm:eu-west-1:123456789012:certificate/66666666-7777-8888-9999-000000000000"
	appCert = "arn:aws:acm:us-east-1:123456789012:certificate/aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
)

// contextSites is the context of ctxApp.
func contextSites() map[string]any {
	eips := func(prefix string, n, first int) []any {
		var out []any
		for i := range n {
			out = append(out, map[string]any{"allocationId": fmt.Sprintf("eipalloc-%s%012x", prefix, first+i), "ip": fmt.Sprintf("198.51.100.%d", first+i)})
		}
		return out
	}
	return map[string]any{
		"usApiUrl": "https://api.us.agentplane.test", "usAppUrl": "https://app.us.agentplane.test", "usBeaconUrl": "https://beacon.us.agentplane.test",
		"euApiUrl": "https://api.eu.agentplane.test", "euAppUrl": "https://app.eu.agentplane.test", "euBeaconUrl": "https://beacon.eu.agentplane.test",
		"usApiCertificateArn": usCert, "euApiCertificateArn": euCert,
		"usAppCertificateArn": appCert, "euAppCertificateArn": appCert,
		"euAzs":        "eu-west-1a,eu-west-1b,eu-west-1c",
		"usVpcCidr":    "10.20.0.0/16",
		"usEgressEips": "eipalloc-00000000000000a1=203.0.113.11, eipalloc-00000000000000a2=203.0.113.12,eipalloc-00000000000000a3=203.0.113.13,eipalloc-00000000000000a4=203.0.113.14",
		"usIngressEips": `[{"allocationId": "eipalloc-00000000000000b1", "ip": "203.0.113.21"},
		                   {"allocationId": "eipalloc-00000000000000b2", "ip": "203.0.113.22"}]`,
		"euEgressEips":  eips("e", 8, 1),
		"euIngressEips": eips("f", 3, 101),
	}
}

func ctxApp(t *testing.T) []*region {
	t.Helper()
	ctxOnce.Do(func() {
		layout, err := stacks.CatalogLayout()
		if err != nil {
			ctxErr = err
			return
		}
		ctxRegions, ctxErr = synth(layout, "Ctx", appConfig{context: contextSites()}, "us", "eu")
	})
	if ctxErr != nil {
		t.Fatal(ctxErr)
	}
	return ctxRegions
}

// both runs check over both apps' stacks (both regions each).
func both(t *testing.T, check func(*testing.T, *region)) {
	t.Helper()
	checkAll(t, app(t), check)
	checkAll(t, ctxApp(t), check)
}

func TestContextFunctions(t *testing.T) {
	for _, check := range []func(*testing.T, *region){checkFunctions, checkFunctionIAM, checkWorkflowIAM, checkRoutes, checkProductConfig} {
		checkAll(t, ctxApp(t), check)
	}
}

func TestWAF(t *testing.T)          { both(t, checkWAF) }
func TestNetwork(t *testing.T)      { both(t, checkNetwork) }
func TestIngress(t *testing.T)      { both(t, checkIngress) }
func TestOutputs(t *testing.T)      { both(t, checkOutputs) }
func TestUI(t *testing.T)           { both(t, checkUI) }
func TestRegionLink(t *testing.T)   { both(t, checkRegionLink) }
func TestNoUsagePlans(t *testing.T) { both(t, checkNoUsagePlans) }

// wafFigures is WAF's limit and window for a row's figures, computed here
// from the rule documented in docs/rate-limits.md (never stricter than the
// interface): a window WAF has is kept; a shorter interval becomes 60 s
// with the count scaled up; a longer one 600 s with the count kept; then
// at least 10.
func wafFigures(r ratelimits.Rate) (limit, window int64) {
	iv := int64(r.Interval / time.Second)
	switch {
	case slices.Contains([]int64{60, 120, 300, 600}, iv):
		limit, window = r.Count, iv
	case iv > 600:
		limit, window = r.Count, 600
	default:
		window = 60
		for _, w := range []int64{60, 120, 300, 600} {
			if w >= iv {
				window = w
				break
			}
		}
		limit = (r.Count*window + iv - 1) / iv
	}
	return max(limit, 10), window
}

// wafRules maps the web ACL's rules by name.
func wafRules(t *testing.T, r *region) (map[string]map[string]any, map[string]any) {
	t.Helper()
	acls := r.resources("AWS::WAFv2::WebACL")
	if len(acls) != 1 {
		t.Fatalf("%s: %d web ACLs", r.name, len(acls))
	}
	var acl map[string]any
	for _, a := range acls {
		acl = a
	}
	rules := map[string]map[string]any{}
	for _, rule := range list(acl["Rules"]) {
		rule := rule.(map[string]any)
		rules[rule["Name"].(string)] = rule
	}
	return rules, acl
}

// checkWAF: the platform API's stage has one regional web ACL, allowing by
// default; in it, every one of the 29 rows of the interface's table is a
// rate-based rule with the region's figures (rounded as WAF allows),
// aggregated by the row's identity, scoped down to its label, blocking
// with a 429 whose JSON body states the row's limit; before them, the
// claim rules label each request with one row; nothing else. The rules
// are the stack's plan (ratelimits.Edge), which infra/README.md tabulates.
func checkWAF(t *testing.T, r *region) {
	rules, acl := wafRules(t, r)
	if acl["Scope"] != "REGIONAL" || fmt.Sprint(acl["DefaultAction"]) != "map[Allow:map[]]" {
		t.Errorf("%s: web ACL scope %v, default %v", r.name, acl["Scope"], acl["DefaultAction"])
	}
	assoc := r.resources("AWS::WAFv2::WebACLAssociation")
	if len(assoc) != 1 {
		t.Fatalf("%s: %d web ACL associations", r.name, len(assoc))
	}
	for _, a := range assoc {
		stage := ""
		for id, st := range r.resources("AWS::ApiGateway::Stage") {
			if flat(st["RestApiId"]) == "${"+r.restAPI("")+"}" {
				stage = id
			}
		}
		want := fmt.Sprintf("arn:aws:apigateway:%s::/restapis/${%s}/stages/${%s}", r.awsRegion, r.restAPI(""), stage)
		if flat(a["ResourceArn"]) != want || flat(a["WebACLArn"]) != "${"+r.id(r.stack.WebACL)+".Arn}" {
			t.Errorf("%s: association %v, %v; want the platform stage %s", r.name, flat(a["ResourceArn"]), a["WebACLArn"], want)
		}
	}

	plan := r.stack.Edge
	if !reflect.DeepEqual(plan, ratelimits.Edge(ratelimits.Region(r.name), stacks.EdgeOptions())) {
		t.Errorf("%s: the stack's plan is not ratelimits.Edge for its region", r.name)
	}
	rows := ratelimits.Rows()
	if len(rows) != 29 || len(rules) != len(plan.Claims)+29 {
		t.Fatalf("%s: %d rows, %d rules for %d claims", r.name, len(rows), len(rules), len(plan.Claims))
	}
	bodies := acl["CustomResponseBodies"].(map[string]any)
	if len(bodies) != 29 {
		t.Errorf("%s: %d response bodies", r.name, len(bodies))
	}
	firstRate := 1 << 30
	for _, row := range rows {
		rule := rules[row.Name()]
		if rule == nil {
			t.Errorf("%s: no rule for row %d (%s)", r.name, row.Seq, row.Name())
			continue
		}
		firstRate = min(firstRate, int(rule["Priority"].(float64)))
		rate := rule["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
		limit, window := wafFigures(row.Rate(ratelimits.Region(r.name)))
		if rate["Limit"] != float64(limit) || rate["EvaluationWindowSec"] != float64(window) {
			t.Errorf("%s: row %d: %v / %v s, want %d / %d s (%s)", r.name, row.Seq, rate["Limit"], rate["EvaluationWindowSec"], limit, window, row.Rate(ratelimits.Region(r.name)))
		}
		keys := fmt.Sprint(rate["CustomKeys"])
		switch row.Identity {
		case ratelimits.ByIP:
			if rate["AggregateKeyType"] != "IP" || rate["CustomKeys"] != nil {
				t.Errorf("%s: row %d aggregates %v %s", r.name, row.Seq, rate["AggregateKeyType"], keys)
			}
		case ratelimits.ByAPIKey:
			if rate["AggregateKeyType"] != "CUSTOM_KEYS" || keys != "[map[Header:map[Name:x-api-key TextTransformations:[map[Priority:0 Type:NONE]]]]]" {
				t.Errorf("%s: row %d aggregates %v %s", r.name, row.Seq, rate["AggregateKeyType"], keys)
			}
		case ratelimits.ByUserIP:
			if rate["AggregateKeyType"] != "CUSTOM_KEYS" || keys != "[map[Header:map[Name:x-user-id TextTransformations:[map[Priority:0 Type:NONE]]]] map[IP:map[]]]" {
				t.Errorf("%s: row %d aggregates %v %s", r.name, row.Seq, rate["AggregateKeyType"], keys)
			}
		}
		if fmt.Sprint(rate["ScopeDownStatement"]) != fmt.Sprintf("map[LabelMatchStatement:map[Key:agentplane:ratelimit:r%02d Scope:LABEL]]", row.Seq) {
			t.Errorf("%s: row %d scope-down %v", r.name, row.Seq, rate["ScopeDownStatement"])
		}
		key := fmt.Sprintf("r%02d", row.Seq)
		want := fmt.Sprintf("map[Block:map[CustomResponse:map[CustomResponseBodyKey:%s ResponseCode:429 ResponseHeaders:[map[Name:Retry-After Value:%d]]]]]", key, window)
		if got := fmt.Sprint(rule["Action"]); got != want {
			t.Errorf("%s: row %d action %s, want %s", r.name, row.Seq, got, want)
		}
		body, _ := bodies[key].(map[string]any)
		var detail struct{ Detail string }
		if body == nil || body["ContentType"] != "APPLICATION_JSON" || json.Unmarshal([]byte(fmt.Sprint(body["Content"])), &detail) != nil ||
			detail.Detail != fmt.Sprintf("Rate limit exceeded: %s allows %s requests per %s seconds.", row.Category,
				strings.Split(row.Rate(ratelimits.Region(r.name)).String(), " / ")[0], strings.Split(row.Rate(ratelimits.Region(r.name)).String(), " / ")[1]) {
			t.Errorf("%s: row %d body %v", r.name, row.Seq, body)
		}
	}
	// Spot checks of the figures, as the table states them.
	for _, c := range []struct {
		region, rule  string
		limit, window float64
	}{
		{"us", "r28-stats", 10, 60}, {"eu", "r28-stats", 120, 60},
		{"us", "r16-commits", 10000, 60}, {"eu", "r16-commits", 2000, 60}, {"eu", "r17-commits", 2000, 60},
		{"us", "r11-multipart-ingest", 36000, 60}, {"us", "r12-run-query-api", 90, 60}, {"eu", "r13-run-query-user", 1800, 60},
		{"us", "r14-generation", 30, 600}, {"eu", "r09-charts", 750, 600}, {"us", "r29-public-catch-all", 100, 60},
	} {
		if c.region != r.name {
			continue
		}
		rate := rules[c.rule]["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
		if rate["Limit"] != c.limit || rate["EvaluationWindowSec"] != c.window {
			t.Errorf("%s: %s is %v / %v s, want %v / %v s", r.name, c.rule, rate["Limit"], rate["EvaluationWindowSec"], c.limit, c.window)
		}
	}
	// The claim rules: the plan's, in its order, all before the rate rules.
	priorities := map[float64]string{}
	for name, rule := range rules {
		if other, dup := priorities[rule["Priority"].(float64)]; dup {
			t.Errorf("%s: rules %s and %s share a priority", r.name, name, other)
		}
		priorities[rule["Priority"].(float64)] = name
	}
	claimed := map[int]bool{}
	for _, c := range plan.Claims {
		rule := rules[c.Name]
		if rule == nil {
			t.Errorf("%s: no claim rule %s", r.name, c.Name)
			continue
		}
		claimed[c.Seq] = true
		if int(rule["Priority"].(float64)) >= firstRate || rule["Priority"] != float64(c.Priority) {
			t.Errorf("%s: claim %s has priority %v", r.name, c.Name, rule["Priority"])
		}
		want := fmt.Sprintf("[map[Name:%s] map[Name:%s]]", ratelimits.LabelClaimed, ratelimits.RowLabel(c.Seq))
		if fmt.Sprint(rule["Action"]) != "map[Count:map[]]" || fmt.Sprint(rule["RuleLabels"]) != want {
			t.Errorf("%s: claim %s: action %v, labels %v", r.name, c.Name, rule["Action"], rule["RuleLabels"])
		}
		if !strings.Contains(fmt.Sprint(rule["Statement"]), "NotStatement:map[Statement:map[LabelMatchStatement:map[Key:"+ratelimits.LabelClaimed+" Scope:LABEL]]]") {
			t.Errorf("%s: claim %s does not skip claimed requests: %v", r.name, c.Name, rule["Statement"])
		}
		if v := rule["VisibilityConfig"].(map[string]any); v["MetricName"] != c.Name || v["CloudWatchMetricsEnabled"] != true {
			t.Errorf("%s: claim %s visibility %v", r.name, c.Name, v)
		}
	}
	for _, row := range rows {
		if !claimed[row.Seq] {
			t.Errorf("%s: row %d has no claim rule", r.name, row.Seq)
		}
	}
	// A claim's path test, as deployed: row 12's is POST /runs/query
	// (with the stage and /api/v1 optional) for an API-key caller.
	c12 := fmt.Sprint(rules["rl-claim-r12-1"]["Statement"])
	for _, want := range []string{"SearchString:POST", `RegexString:^(/prod)?(/api/v1)?/runs/query$`, "SingleHeader:map[Name:x-api-key]", "SingleHeader:map[Name:authorization]"} {
		if !strings.Contains(c12, want) {
			t.Errorf("%s: claim r12 lacks %s: %s", r.name, want, c12)
		}
	}
}

// docsFigures reads the WAF table of docs/rate-limits.md (generated by the
// ratelimits package): rule name → [US limit, US window, EU limit, EU
// window].
func docsFigures(t *testing.T) map[string][4]float64 {
	t.Helper()
	raw, err := os.ReadFile("../../docs/rate-limits.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^\\| \\d+ \\| `(r\\d\\d-[a-z0-9-]+)` \\|[^\\n]*?\\| (\\d+) / (\\d+) s \\| (\\d+) / (\\d+) s \\|")
	out := map[string][4]float64{}
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		var f [4]float64
		for i := range 4 {
			f[i], _ = strconv.ParseFloat(m[i+2], 64)
		}
		out[m[1]] = f
	}
	return out
}

// TestWAFMatchesTheDocs: the figures of every deployed rate rule, in both
// regions, are those of docs/rate-limits.md's WAF table (the ratelimits
// engineer's generated table of the same plan).
func TestWAFMatchesTheDocs(t *testing.T) {
	docs := docsFigures(t)
	if len(docs) != 29 {
		t.Fatalf("docs/rate-limits.md: %d WAF rows", len(docs))
	}
	for _, r := range app(t) {
		rules, _ := wafRules(t, r)
		for name, f := range docs {
			rate := rules[name]["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
			limit, window := f[0], f[1]
			if r.name == "eu" {
				limit, window = f[2], f[3]
			}
			if rate["Limit"] != limit || rate["EvaluationWindowSec"] != window {
				t.Errorf("%s: %s deployed %v / %v s, docs/rate-limits.md %v / %v s", r.name, name, rate["Limit"], rate["EvaluationWindowSec"], limit, window)
			}
		}
	}
}

const (
	readme     = "../README.md"
	beginTable = "<!-- BEGIN GENERATED by stacks.WAFTable (go test ./stacks -run TestREADME -update) -->\n"
	endTable   = "<!-- END GENERATED -->"
)

// TestREADME: the WAF table of infra/README.md is the one of the plans the
// stacks deploy (TestWAF ties the template to the same plans).
func TestREADME(t *testing.T) {
	rs := app(t)
	want := stacks.WAFTable(rs[0].stack.Edge, rs[1].stack.Edge)
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, beginTable), strings.Index(doc, endTable)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated section", readme)
	}
	if got := doc[i+len(beginTable) : j]; got != want {
		if *update {
			if err := os.WriteFile(readme, []byte(doc[:i+len(beginTable)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the WAF table of %s is stale: run go test ./stacks -run TestREADME -update", readme)
	}
	// Every context key and every throttle row is documented.
	for _, k := range append(stacks.ContextKeys(), "operatorTokenSha256", "regionLinkSecretName", "uiAssetsDir") {
		if !strings.Contains(doc, "`"+k+"`") && !strings.Contains(doc, "`"+strings.Replace(strings.Replace(k, "us", "<r>", 1), "eu", "<r>", 1)+"`") {
			t.Errorf("%s does not document context key %s", readme, k)
		}
	}
	for _, th := range rs[0].stack.Edge.Throttles {
		if !strings.Contains(doc, fmt.Sprintf("| %d | %s | %s |", th.Seq, th.Category, th.Method)) {
			t.Errorf("%s does not list the throttle of row %d", readme, th.Seq)
		}
	}
}

// checkNoUsagePlans: the rows that name one method map onto per-key
// token buckets only in a usage plan, which needs API Gateway API keys
// (infra/README.md says why there are none); so no usage plan, API key or
// per-method stage throttle is deployed, and each such row is enforced per
// key by its WAF rule and the in-app limiter.
func checkNoUsagePlans(t *testing.T, r *region) {
	for _, typ := range []string{"AWS::ApiGateway::UsagePlan", "AWS::ApiGateway::ApiKey", "AWS::ApiGateway::UsagePlanKey"} {
		if n := len(r.resources(typ)); n != 0 {
			t.Errorf("%s: %d %s", r.name, n, typ)
		}
	}
	if len(r.stack.Edge.Throttles) != 7 {
		t.Errorf("%s: %d rows map onto one method", r.name, len(r.stack.Edge.Throttles))
	}
	rules, _ := wafRules(t, r)
	for _, th := range r.stack.Edge.Throttles {
		row, _ := ratelimits.RowBySeq(th.Seq)
		if rules[row.Name()] == nil || row.Identity != ratelimits.ByAPIKey {
			t.Errorf("%s: throttle row %d has no per-key WAF rule", r.name, th.Seq)
		}
	}
}

// checkNetwork: a VPC per region in the site's zones, one public and one
// private subnet per zone, a NAT gateway per zone on the context's Elastic
// IPs (primary and secondary, dealt out in turn) or, without them, on
// Elastic IPs the stack allocates and retains; each private subnet leaves
// through its zone's NAT gateway; gateway endpoints for DynamoDB and S3 on
// the private route tables; the execute-api interface endpoint in the
// private subnets without private DNS; flow logs to the access-log bucket.
func checkNetwork(t *testing.T, r *region) {
	site := r.stack.Site
	azs := len(site.AZs)
	vpcs := r.resources("AWS::EC2::VPC")
	if len(vpcs) != 1 {
		t.Fatalf("%s: %d VPCs", r.name, len(vpcs))
	}
	for _, v := range vpcs {
		if v["CidrBlock"] != site.CIDR {
			t.Errorf("%s: VPC %v", r.name, v["CidrBlock"])
		}
	}
	subnets := r.resources("AWS::EC2::Subnet")
	public, private := map[string]string{}, map[string]string{}
	for id, s := range subnets {
		if !slices.Contains(site.AZs, fmt.Sprint(s["AvailabilityZone"])) {
			t.Errorf("%s: subnet %s in %v", r.name, id, s["AvailabilityZone"])
		}
		if s["MapPublicIpOnLaunch"] == true {
			public[id] = s["AvailabilityZone"].(string)
		} else {
			private[id] = s["AvailabilityZone"].(string)
		}
	}
	if len(public) != azs || len(private) != azs {
		t.Errorf("%s: %d public and %d private subnets for %d zones", r.name, len(public), len(private), azs)
	}
	eips := r.resources("AWS::EC2::EIP")
	wantEIPs := 0
	if len(site.Egress) == 0 {
		wantEIPs += azs
	}
	if len(site.Ingress) == 0 {
		wantEIPs += azs
	}
	if len(eips) != wantEIPs {
		t.Errorf("%s: %d Elastic IPs allocated, want %d", r.name, len(eips), wantEIPs)
	}
	for id, e := range eips {
		if e["Domain"] != "vpc" || r.json["Resources"].(map[string]any)[id].(map[string]any)["DeletionPolicy"] != "Retain" {
			t.Errorf("%s: Elastic IP %s: %v, not retained", r.name, id, e)
		}
	}
	nats := r.resources("AWS::EC2::NatGateway")
	if len(nats) != azs {
		t.Fatalf("%s: %d NAT gateways for %d zones", r.name, len(nats), azs)
	}
	natOf := map[string]string{} // zone → NAT gateway id
	var alloc []string
	for id, n := range nats {
		zone := public[strings.Trim(flat(n["SubnetId"]), "${}")]
		if zone == "" {
			t.Errorf("%s: NAT gateway %s is not in a public subnet", r.name, id)
		}
		natOf[zone] = id
		i := slices.Index(site.AZs, zone)
		if len(site.Egress) == 0 {
			if flat(n["AllocationId"]) != fmt.Sprintf("${NatEip%d.AllocationId}", i+1) || n["SecondaryAllocationIds"] != nil {
				t.Errorf("%s: NAT gateway in %s: %v %v", r.name, zone, n["AllocationId"], n["SecondaryAllocationIds"])
			}
			continue
		}
		var want []string
		for j := i + azs; j < len(site.Egress); j += azs {
			want = append(want, site.Egress[j].AllocationID)
		}
		var got []string
		for _, s := range list(n["SecondaryAllocationIds"]) {
			if s != nil {
				got = append(got, s.(string))
			}
		}
		if n["AllocationId"] != site.Egress[i].AllocationID || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: NAT gateway in %s: %v + %v, want %s + %v", r.name, zone, n["AllocationId"], got, site.Egress[i].AllocationID, want)
		}
		alloc = append(alloc, n["AllocationId"].(string))
		alloc = append(alloc, got...)
	}
	if len(site.Egress) > 0 && len(alloc) != len(site.Egress) {
		t.Errorf("%s: NAT gateways hold %d of %d egress addresses", r.name, len(alloc), len(site.Egress))
	}
	// Routes: each private subnet's default route is its zone's NAT
	// gateway.
	assocs := r.resources("AWS::EC2::SubnetRouteTableAssociation")
	tableOf := map[string]string{}
	for _, a := range assocs {
		tableOf[strings.Trim(flat(a["SubnetId"]), "${}")] = strings.Trim(flat(a["RouteTableId"]), "${}")
	}
	privateTables := map[string]bool{}
	for sub, zone := range private {
		rt := tableOf[sub]
		privateTables[rt] = true
		found := false
		for _, route := range r.resources("AWS::EC2::Route") {
			if strings.Trim(flat(route["RouteTableId"]), "${}") == rt && route["DestinationCidrBlock"] == "0.0.0.0/0" {
				found = flat(route["NatGatewayId"]) == "${"+natOf[zone]+"}"
			}
		}
		if !found {
			t.Errorf("%s: private subnet %s (%s) does not leave through its zone's NAT gateway", r.name, sub, zone)
		}
	}
	endpoints := r.resources("AWS::EC2::VPCEndpoint")
	if len(endpoints) != 3 {
		t.Errorf("%s: %d VPC endpoints", r.name, len(endpoints))
	}
	gateways := map[string]bool{}
	for id, ep := range endpoints {
		service := flat(ep["ServiceName"])
		switch ep["VpcEndpointType"] {
		case "Gateway":
			gateways[service] = true
			var tables []string
			for _, tb := range list(ep["RouteTableIds"]) {
				tables = append(tables, strings.Trim(flat(tb), "${}"))
			}
			if len(tables) != azs {
				t.Errorf("%s: gateway endpoint %s on %v", r.name, service, tables)
			}
			for _, tb := range tables {
				if !privateTables[tb] {
					t.Errorf("%s: gateway endpoint %s on %s, not a private route table", r.name, service, tb)
				}
			}
		case "Interface":
			if id != r.id(r.stack.Network.APIEndpoint) || service != "com.amazonaws."+r.awsRegion+".execute-api" || ep["PrivateDnsEnabled"] != false {
				t.Errorf("%s: interface endpoint %s: %s, private DNS %v", r.name, id, service, ep["PrivateDnsEnabled"])
			}
			for _, sn := range list(ep["SubnetIds"]) {
				if private[strings.Trim(flat(sn), "${}")] == "" {
					t.Errorf("%s: execute-api endpoint in %v, not a private subnet", r.name, sn)
				}
			}
			if sgs := fmt.Sprint(list(ep["SecurityGroupIds"])); sgs != "[map[Fn::GetAtt:["+r.id(r.stack.Network.EndpointGroup)+" GroupId]]]" {
				t.Errorf("%s: execute-api endpoint groups %s", r.name, sgs)
			}
		}
	}
	for _, svc := range []string{"dynamodb", "s3"} {
		if !gateways["com.amazonaws."+r.awsRegion+"."+svc] && !gateways["${AWS::URLSuffix}"] {
			found := false
			for g := range gateways {
				found = found || strings.HasSuffix(g, "."+svc)
			}
			if !found {
				t.Errorf("%s: no gateway endpoint for %s (%v)", r.name, svc, gateways)
			}
		}
	}
	logs := r.resources("AWS::EC2::FlowLog")
	if len(logs) != 1 {
		t.Errorf("%s: %d flow logs", r.name, len(logs))
	}
	for _, fl := range logs {
		if fl["TrafficType"] != "ALL" || fl["LogDestinationType"] != "s3" || !strings.Contains(flat(fl["LogDestination"]), r.id(r.stack.LogBucket)) {
			t.Errorf("%s: flow log %v", r.name, fl)
		}
	}
	// Security groups: the functions' one has no inbound rule.
	eg := r.resources("AWS::EC2::SecurityGroup")[r.id(r.stack.Network.Egress)]
	if eg["SecurityGroupIngress"] != nil || !strings.Contains(fmt.Sprint(eg["SecurityGroupEgress"]), "CidrIp:0.0.0.0/0") {
		t.Errorf("%s: function egress group %v", r.name, eg)
	}
}

// checkIngress: the static ingress is an internet-facing Network Load
// Balancer on one Elastic IP per zone (from context, or allocated),
// passing TCP 443 to the execute-api endpoint's private addresses (read
// at deployment) with the clients' own addresses preserved; its group
// admits HTTPS from anywhere and reaches only the endpoint, whose group
// admits only the load balancer. Behind the endpoint, the platform API
// answers at its own host: a private domain name (TLS 1.2, the host of
// <r>ApiUrl, the context's certificate or one requested with DNS
// validation) mapped to the stage, reachable through this endpoint only.
func checkIngress(t *testing.T, r *region) {
	site := r.stack.Site
	lbs := r.resources("AWS::ElasticLoadBalancingV2::LoadBalancer")
	if len(lbs) != 1 {
		t.Fatalf("%s: %d load balancers", r.name, len(lbs))
	}
	subnets := r.resources("AWS::EC2::Subnet")
	for _, lb := range lbs {
		if lb["Type"] != "network" || lb["Scheme"] != "internet-facing" {
			t.Errorf("%s: load balancer %v %v", r.name, lb["Type"], lb["Scheme"])
		}
		maps := list(lb["SubnetMappings"])
		if len(maps) != len(site.AZs) {
			t.Fatalf("%s: %d subnet mappings", r.name, len(maps))
		}
		for i, m := range maps {
			m := m.(map[string]any)
			sub := subnets[strings.Trim(flat(m["SubnetId"]), "${}")]
			if sub["MapPublicIpOnLaunch"] != true || sub["AvailabilityZone"] != site.AZs[i] {
				t.Errorf("%s: mapping %d in %v", r.name, i, sub)
			}
			want := fmt.Sprintf("${IngressEip%d.AllocationId}", i+1)
			if len(site.Ingress) > 0 {
				want = site.Ingress[i].AllocationID
			}
			if flat(m["AllocationId"]) != want {
				t.Errorf("%s: mapping %d allocation %v, want %s", r.name, i, m["AllocationId"], want)
			}
		}
		if sgs := fmt.Sprint(list(lb["SecurityGroups"])); sgs != "[map[Fn::GetAtt:["+r.id(r.stack.Network.IngressGroup)+" GroupId]]]" {
			t.Errorf("%s: load balancer groups %s", r.name, sgs)
		}
	}
	listeners := r.resources("AWS::ElasticLoadBalancingV2::Listener")
	tgs := r.resources("AWS::ElasticLoadBalancingV2::TargetGroup")
	if len(listeners) != 1 || len(tgs) != 1 {
		t.Fatalf("%s: %d listeners, %d target groups", r.name, len(listeners), len(tgs))
	}
	for _, l := range listeners {
		if l["Port"] != float64(443) || l["Protocol"] != "TCP" || !strings.Contains(fmt.Sprint(l["DefaultActions"]), r.id(r.stack.Network.IngressTargets)) {
			t.Errorf("%s: listener %v", r.name, l)
		}
	}
	lookup := r.id(r.stack.Network.EndpointAddresses)
	for _, tg := range tgs {
		if tg["TargetType"] != "ip" || tg["Protocol"] != "TCP" || tg["Port"] != float64(443) ||
			fmt.Sprint(tg["TargetGroupAttributes"]) != "[map[Key:preserve_client_ip.enabled Value:true]]" {
			t.Errorf("%s: target group %v", r.name, tg)
		}
		var targets []string
		for _, tr := range list(tg["Targets"]) {
			targets = append(targets, flat(tr.(map[string]any)["Id"])+":"+fmt.Sprint(tr.(map[string]any)["Port"]))
		}
		var want []string
		for i := range site.AZs {
			want = append(want, fmt.Sprintf("${%s.NetworkInterfaces.%d.PrivateIpAddress}:443", lookup, i))
		}
		if fmt.Sprint(targets) != fmt.Sprint(want) {
			t.Errorf("%s: targets %v, want %v", r.name, targets, want)
		}
	}
	cr := r.json["Resources"].(map[string]any)[lookup].(map[string]any)["Properties"].(map[string]any)
	create := flat(cr["Create"])
	for _, want := range []string{`"action":"describeNetworkInterfaces"`, `"service":"EC2"`, "Fn::Select", r.id(r.stack.Network.APIEndpoint)} {
		if !strings.Contains(create, want) {
			t.Errorf("%s: the endpoint address lookup lacks %s: %s", r.name, want, create)
		}
	}
	groups := r.resources("AWS::EC2::SecurityGroup")
	lbg, epg := groups[r.id(r.stack.Network.IngressGroup)], groups[r.id(r.stack.Network.EndpointGroup)]
	if fmt.Sprint(lbg["SecurityGroupIngress"]) != "[map[CidrIp:0.0.0.0/0 Description:HTTPS clients of the public API FromPort:443 IpProtocol:tcp ToPort:443]]" {
		t.Errorf("%s: load balancer ingress %v", r.name, lbg["SecurityGroupIngress"])
	}
	for _, g := range []map[string]any{lbg, epg} {
		// No inline rule but CDK's "disallow all" placeholder: the one
		// rule out of the load balancer's group is the resource below.
		if e := fmt.Sprint(g["SecurityGroupEgress"]); e != "<nil>" && !strings.Contains(e, "255.255.255.255/32") {
			t.Errorf("%s: a group of the ingress path allows outbound traffic: %v", r.name, e)
		}
	}
	rules := map[string]bool{}
	for _, in := range r.resources("AWS::EC2::SecurityGroupIngress") {
		rules[fmt.Sprintf("in %s from %s %v", flat(in["GroupId"]), flat(in["SourceSecurityGroupId"]), in["FromPort"])] = true
	}
	for _, out := range r.resources("AWS::EC2::SecurityGroupEgress") {
		rules[fmt.Sprintf("out %s to %s %v", flat(out["GroupId"]), flat(out["DestinationSecurityGroupId"]), out["FromPort"])] = true
	}
	lbID, epID := "${"+r.id(r.stack.Network.IngressGroup)+".GroupId}", "${"+r.id(r.stack.Network.EndpointGroup)+".GroupId}"
	want := map[string]bool{"in " + epID + " from " + lbID + " 443": true, "out " + lbID + " to " + epID + " 443": true}
	if fmt.Sprint(rules) != fmt.Sprint(want) {
		t.Errorf("%s: group rules %v, want %v", r.name, rules, want)
	}

	host := strings.TrimPrefix(site.APIURL, "https://")
	domains := r.resources("AWS::ApiGateway::DomainNameV2")
	if len(domains) != 1 {
		t.Fatalf("%s: %d private domain names", r.name, len(domains))
	}
	for id, d := range domains {
		cert := flat(d["CertificateArn"])
		certs := r.resources("AWS::CertificateManager::Certificate")
		if site.APICertificateARN != "" {
			if cert != site.APICertificateARN || len(certs) != 0 {
				t.Errorf("%s: domain certificate %s, %d requested", r.name, cert, len(certs))
			}
		} else {
			c := certs[strings.Trim(cert, "${}")]
			if len(certs) != 1 || c["DomainName"] != host || c["ValidationMethod"] != "DNS" {
				t.Errorf("%s: requested certificate %v for %s", r.name, c, cert)
			}
		}
		if d["DomainName"] != host || fmt.Sprint(d["EndpointConfiguration"]) != "map[Types:[PRIVATE]]" || d["SecurityPolicy"] != "TLS_1_2" {
			t.Errorf("%s: domain %v", r.name, d)
		}
		checkEndpointPolicy(t, r, "domain name", d["Policy"])
		arn := "${" + id + ".DomainNameArn}"
		for _, m := range r.resources("AWS::ApiGateway::BasePathMappingV2") {
			if flat(m["DomainNameArn"]) != arn || flat(m["RestApiId"]) != "${"+r.restAPI("")+"}" || !strings.Contains(flat(m["Stage"]), "ApiDeploymentStage") || m["BasePath"] != nil {
				t.Errorf("%s: mapping %v", r.name, m)
			}
		}
		for _, a := range r.resources("AWS::ApiGateway::DomainNameAccessAssociation") {
			if flat(a["DomainNameArn"]) != arn || flat(a["AccessAssociationSource"]) != "${"+r.id(r.stack.Network.APIEndpoint)+"}" || a["AccessAssociationSourceType"] != "VPCE" {
				t.Errorf("%s: access association %v", r.name, a)
			}
		}
	}
	if len(r.resources("AWS::ApiGateway::BasePathMappingV2")) != 1 || len(r.resources("AWS::ApiGateway::DomainNameAccessAssociation")) != 1 {
		t.Errorf("%s: the private domain's mapping or access association is missing", r.name)
	}
}

// checkOutputs: the hosted addresses, the egress and ingress addresses,
// the tool server's and the UI's URLs, and the document GET
// /api/v1/regions publishes, with both regions.
func checkOutputs(t *testing.T, r *region) {
	outs := map[string]string{}
	for k, v := range r.json["Outputs"].(map[string]any) {
		outs[k] = flat(v.(map[string]any)["Value"])
	}
	site := r.stack.Site
	want := map[string]string{
		"ApiUrl": site.APIURL, "AppUrl": site.AppURL, "BeaconUrl": site.BeaconURL,
		"EgressIps":  publishedIPs(r, r.name, "EGRESS"),
		"IngressIps": publishedIPs(r, r.name, "INGRESS"),
		"McpUrl":     fmt.Sprintf("https://${%s}.execute-api.%s.${AWS::URLSuffix}/prod/mcp", r.restAPI("mcp"), r.awsRegion),
		"UiUrl":      "https://${" + r.id(r.stack.UI.Distribution) + ".DomainName}",
		"WebAclArn":  "${" + r.id(r.stack.WebACL) + ".Arn}",
	}
	for k, v := range want {
		if outs[k] != v {
			t.Errorf("%s: output %s = %q, want %q", r.name, k, outs[k], v)
		}
	}
	var doc struct {
		Region        string `json:"region"`
		BillingRegion string `json:"billing_region"`
		Regions       []struct {
			Region     string   `json:"region"`
			APIURL     string   `json:"api_url"`
			AppURL     string   `json:"app_url"`
			BeaconURL  string   `json:"beacon_url"`
			EgressIPs  []string `json:"egress_ips"`
			IngressIPs []string `json:"ingress_ips"`
		} `json:"regions"`
	}
	if err := json.Unmarshal([]byte(outs["HostedAddresses"]), &doc); err != nil {
		t.Fatalf("%s: HostedAddresses %s: %v", r.name, outs["HostedAddresses"], err)
	}
	if doc.Region != r.name || doc.BillingRegion != "us" || len(doc.Regions) != 2 {
		t.Errorf("%s: HostedAddresses %+v", r.name, doc)
	}
	for _, a := range doc.Regions {
		s := r.props.Sites.Of(a.Region)
		if a.APIURL != s.APIURL || a.AppURL != s.AppURL || a.BeaconURL != s.BeaconURL ||
			strings.Join(a.EgressIPs, ",") != publishedIPs(r, a.Region, "EGRESS") || strings.Join(a.IngressIPs, ",") != publishedIPs(r, a.Region, "INGRESS") {
			t.Errorf("%s: published %s addresses %+v", r.name, a.Region, a)
		}
	}
}

// assetDir is the staged directory of a deployment source object key
// ("<hash>.zip").
func assetDir(r *region, key string) string {
	return filepath.Join(r.outdir, "asset."+strings.TrimSuffix(key, ".zip"))
}

// checkUI: a private bucket (owner-enforced, TLS only, logged) read by
// CloudFront through origin access control only; a distribution with
// index.html as its root object, HTTPS only (redirect), compression, the
// security headers (the UI's content security policy naming its region's
// API, HSTS, no framing, no sniffing, no referrer), the page and its
// configuration never cached, logs in their own bucket, the app host and
// TLS 1.2 when a certificate is given; and a deployment of the UI folder
// followed by ui/config.json naming the region's API, invalidating the
// distribution.
func checkUI(t *testing.T, r *region) {
	site := r.stack.Site
	bucketID := r.id(r.stack.UI.Bucket)
	b := r.resources("AWS::S3::Bucket")[bucketID]
	if fmt.Sprint(b["OwnershipControls"]) != "map[Rules:[map[ObjectOwnership:BucketOwnerEnforced]]]" || b["WebsiteConfiguration"] != nil {
		t.Errorf("%s: UI bucket %v", r.name, b)
	}
	distID := r.id(r.stack.UI.Distribution)
	oac := r.resources("AWS::CloudFront::OriginAccessControl")
	if len(oac) != 1 {
		t.Fatalf("%s: %d origin access controls", r.name, len(oac))
	}
	var oacID string
	for id, o := range oac {
		oacID = id
		if fmt.Sprint(o["OriginAccessControlConfig"]) != "map[Name:"+fmt.Sprint(o["OriginAccessControlConfig"].(map[string]any)["Name"])+" OriginAccessControlOriginType:s3 SigningBehavior:always SigningProtocol:sigv4]" {
			t.Errorf("%s: origin access control %v", r.name, o)
		}
	}
	for _, p := range r.resources("AWS::S3::BucketPolicy") {
		if flat(p["Bucket"]) != "${"+bucketID+"}" {
			continue
		}
		doc := flat(p["PolicyDocument"])
		if !strings.Contains(doc, `"Service":"cloudfront.amazonaws.com"`) || !strings.Contains(doc, distID) || !strings.Contains(doc, `"s3:GetObject"`) {
			t.Errorf("%s: UI bucket policy %s", r.name, doc)
		}
		if strings.Contains(doc, `"Principal":{"AWS":"*"},"Action":"s3:GetObject"`) {
			t.Errorf("%s: the UI bucket is public: %s", r.name, doc)
		}
	}
	d := r.resources("AWS::CloudFront::Distribution")[distID]["DistributionConfig"].(map[string]any)
	origins := list(d["Origins"])
	if o, _ := origins[0].(map[string]any); len(origins) != 1 || flat(o["OriginAccessControlId"]) != "${"+oacID+".Id}" ||
		flat(o["DomainName"]) != "${"+bucketID+".RegionalDomainName}" || fmt.Sprint(o["S3OriginConfig"]) != "map[OriginAccessIdentity:]" {
		t.Errorf("%s: origins %v", r.name, origins)
	}
	def := d["DefaultCacheBehavior"].(map[string]any)
	headers := r.id(r.stack.UI.Headers)
	if d["DefaultRootObject"] != "index.html" || def["ViewerProtocolPolicy"] != "redirect-to-https" || def["Compress"] != true ||
		flat(def["ResponseHeadersPolicyId"]) != "${"+headers+"}" || d["HttpVersion"] != "http2and3" || d["Enabled"] != true {
		t.Errorf("%s: distribution %v", r.name, d)
	}
	noCache := map[string]bool{}
	for _, cb := range list(d["CacheBehaviors"]) {
		cb := cb.(map[string]any)
		if cb["CachePolicyId"] == "4135ea2d-6df8-44a3-9df3-4b5a84be39ad" && cb["ViewerProtocolPolicy"] == "redirect-to-https" &&
			flat(cb["ResponseHeadersPolicyId"]) == "${"+headers+"}" {
			noCache[cb["PathPattern"].(string)] = true
		}
	}
	if !noCache["/index.html"] || !noCache["/"+stacks.UIConfigPath] || len(noCache) != 2 {
		t.Errorf("%s: uncached paths %v", r.name, noCache)
	}
	if !strings.Contains(flat(d["Logging"]), r.id(r.stack.UI.LogBucket)) {
		t.Errorf("%s: distribution logging %v", r.name, d["Logging"])
	}
	if site.AppCertificateARN != "" {
		host := strings.TrimPrefix(site.AppURL, "https://")
		if fmt.Sprint(d["Aliases"]) != "["+host+"]" || fmt.Sprint(d["ViewerCertificate"]) !=
			"map[AcmCertificateArn:"+site.AppCertificateARN+" MinimumProtocolVersion:TLSv1.2_2021 SslSupportMethod:sni-only]" {
			t.Errorf("%s: aliases %v, certificate %v", r.name, d["Aliases"], d["ViewerCertificate"])
		}
	} else if d["Aliases"] != nil {
		t.Errorf("%s: aliases %v without a certificate", r.name, d["Aliases"])
	}
	h := r.resources("AWS::CloudFront::ResponseHeadersPolicy")[headers]["ResponseHeadersPolicyConfig"].(map[string]any)["SecurityHeadersConfig"].(map[string]any)
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' " + site.APIURL +
		"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	if fmt.Sprint(h["ContentSecurityPolicy"]) != "map[ContentSecurityPolicy:"+csp+" Override:true]" ||
		fmt.Sprintf("%.0f %v %v", h["StrictTransportSecurity"].(map[string]any)["AccessControlMaxAgeSec"], h["StrictTransportSecurity"].(map[string]any)["IncludeSubdomains"],
			h["StrictTransportSecurity"].(map[string]any)["Override"]) != "63072000 true true" ||
		fmt.Sprint(h["FrameOptions"]) != "map[FrameOption:DENY Override:true]" ||
		fmt.Sprint(h["ContentTypeOptions"]) != "map[Override:true]" ||
		fmt.Sprint(h["ReferrerPolicy"]) != "map[Override:true ReferrerPolicy:no-referrer]" {
		t.Errorf("%s: security headers %v", r.name, h)
	}
	deps := r.resources("Custom::CDKBucketDeployment")
	if len(deps) != 1 {
		t.Fatalf("%s: %d UI deployments", r.name, len(deps))
	}
	for _, dp := range deps {
		if flat(dp["DestinationBucketName"]) != "${"+bucketID+"}" || flat(dp["DistributionId"]) != "${"+distID+"}" ||
			fmt.Sprint(dp["DistributionPaths"]) != "[/*]" || dp["Prune"] != true {
			t.Errorf("%s: UI deployment %v", r.name, dp)
		}
		keys := list(dp["SourceObjectKeys"])
		wantKeys := 1
		if r.props.UIAssetsDir != "" {
			wantKeys = 2
		}
		if len(keys) != wantKeys {
			t.Fatalf("%s: UI deployment sources %v", r.name, keys)
		}
		// The last source is the configuration, written over any the
		// folder has.
		raw, err := os.ReadFile(filepath.Join(assetDir(r, keys[len(keys)-1].(string)), stacks.UIConfigPath))
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		var cfg map[string]string
		if err := json.Unmarshal(raw, &cfg); err != nil || fmt.Sprint(cfg) != "map[api_base_url:"+site.APIURL+"]" {
			t.Errorf("%s: %s is %s", r.name, stacks.UIConfigPath, raw)
		}
		if wantKeys == 2 {
			if _, err := os.Stat(filepath.Join(assetDir(r, keys[0].(string)), "index.html")); err != nil {
				t.Errorf("%s: the UI folder is not deployed: %v", r.name, err)
			}
		}
	}
}

// checkRegionLink: the billing home (US) creates the region link's secret
// (64 letters and digits, kept on deletion) with a replica in the EU's
// region, and names its billing queue so the EU can address it; the queue
// admits the EU billing role (named) by a condition on the principal. The
// EU creates no secret and leaves its own queue unnamed.
func checkRegionLink(t *testing.T, r *region) {
	secrets := r.resources("AWS::SecretsManager::Secret")
	queues := r.resources("AWS::SQS::Queue")
	billingQ := r.id(r.stack.Queues["billing"])
	named := map[string]string{}
	for id, q := range queues {
		if q["QueueName"] != nil {
			named[id] = q["QueueName"].(string)
		}
	}
	us, eu := r.props.Sites.US, r.props.Sites.EU
	if r.name == "eu" {
		if len(secrets) != 0 || len(named) != 0 {
			t.Errorf("eu: secrets %v, named queues %v", secrets, named)
		}
		roles := r.resources("AWS::IAM::Role")
		if roles[roleOf(r.resources("AWS::Lambda::Function")[fnID(r, "billing")], "Role")]["RoleName"] != eu.StackID+"-fn-billing" {
			t.Errorf("eu: the billing role is not named %s-fn-billing", eu.StackID)
		}
		for id, role := range roles {
			if role["RoleName"] != nil && id != roleOf(r.resources("AWS::Lambda::Function")[fnID(r, "billing")], "Role") {
				t.Errorf("eu: role %s is named %v", id, role["RoleName"])
			}
		}
		return
	}
	if len(secrets) != 1 {
		t.Fatalf("us: %d secrets", len(secrets))
	}
	for id, s := range secrets {
		if s["Name"] != stacks.DefaultLinkSecretName || fmt.Sprint(s["ReplicaRegions"]) != "[map[Region:"+eu.AWSRegion+"]]" ||
			fmt.Sprint(s["GenerateSecretString"]) != "map[ExcludePunctuation:true IncludeSpace:false PasswordLength:64]" ||
			r.json["Resources"].(map[string]any)[id].(map[string]any)["DeletionPolicy"] != "Retain" {
			t.Errorf("us: link secret %v", s)
		}
	}
	if fmt.Sprint(named) != fmt.Sprint(map[string]string{billingQ: us.StackID + "-billing"}) {
		t.Errorf("us: named queues %v", named)
	}
	found := false
	for _, p := range r.resources("AWS::SQS::QueuePolicy") {
		if fmt.Sprint(list(p["Queues"])) != "[map[Ref:"+billingQ+"]]" {
			continue
		}
		for _, st := range list(p["PolicyDocument"].(map[string]any)["Statement"]) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" {
				continue
			}
			found = true
			want := fmt.Sprintf("map[Action:sqs:SendMessage Condition:map[ArnEquals:map[aws:PrincipalArn:arn:aws:iam::%s:role/%s-fn-billing]] "+
				"Effect:Allow Principal:map[AWS:arn:aws:iam::%s:root] Resource:${%s.Arn} Sid:ForwardedUsageFromEU]", account, eu.StackID, account, billingQ)
			if got := flatMap(st); got != want {
				t.Errorf("us: billing queue statement\n%s\nwant %s", got, want)
			}
		}
	}
	if !found {
		t.Error("us: the billing queue admits no one from the EU")
	}
}

// flatMap renders a statement with its values flattened.
func flatMap(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		v := m[k]
		if sub, ok := v.(map[string]any); ok && sub["Ref"] == nil && sub["Fn::GetAtt"] == nil && sub["Fn::Join"] == nil {
			parts = append(parts, k+":"+flatMap(sub))
		} else {
			parts = append(parts, k+":"+flat(v))
		}
	}
	return "map[" + strings.Join(parts, " ") + "]"
}
