package stacks_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/infra/asl"
	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/compose/mcpgroup"
	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/builds"
	apregions "github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// region is one synthesized region stack of an app under test.
type region struct {
	name, awsRegion string
	stack           *stacks.RegionStack
	tpl             assertions.Template
	json            map[string]any
	// outdir is the app's cloud assembly (staged assets).
	outdir string
	// props are the stack's inputs.
	props *stacks.RegionStackProps
}

const account = "123456789012"

// operatorDigest is the product app's operator token digest (a SHA-256 of
// nothing in particular: only its shape matters to the stacks).
const operatorDigest = "9f86d081884c7d659a2feb3bb21b6c8f8f7a4a87c55d2c3a2f8e0b2b1b6d4d11"

var (
	appOnce        sync.Once
	productRegions []*region
	appErr         error
)

// fixtureCode writes a small deployment zip per function, standing in for
// dist/ (the real zips are built by scripts/build-lambdas.sh).
func fixtureCode(dir string, names []string) error {
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n+".zip"))
		if err != nil {
			return err
		}
		zw := zip.NewWriter(f)
		w, err := zw.Create("bootstrap")
		if err == nil {
			_, err = w.Write([]byte("#!/bin/sh\necho " + n + "\n"))
		}
		if err == nil {
			err = zw.Close()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fixtureUI writes a small web UI (a page, a module and the UI's own
// config file, which the deployment must override).
func fixtureUI() (string, error) {
	dir, err := os.MkdirTemp("", "infra-ui-")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(dir, "ui"), 0o755); err != nil {
		return "", err
	}
	for name, body := range map[string]string{
		"index.html":        "<!doctype html><title>agentplane</title><script type=module src=ui/app.js></script>",
		"ui/app.js":         "export {};\n",
		stacks.UIConfigPath: `{"api_base_url": ""}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// newApp is an app with the context of the repository's cdk.json, feature
// flags included (@aws-cdk/aws-iam:minimizePolicies merges statements, for
// one), so the tests see the templates `cdk synth` writes.
func newApp() (awscdk.App, error) {
	ctx, err := stacks.CDKContext("../../cdk.json")
	if err != nil {
		return nil, err
	}
	return awscdk.NewApp(&awscdk.AppProps{Context: &ctx}), nil
}

// appConfig is what an app under test is synthesized with.
type appConfig struct {
	// context holds the site context keys (SitesFromContext).
	context  map[string]any
	ui       bool
	operator string
}

// synth defines one stack per region name of layout in a new app, then
// templates them (every stack must exist before the first template).
func synth(layout *stacks.Layout, prefix string, cfg appConfig, names ...string) ([]*region, error) {
	var groups []string
	for _, g := range layout.Groups {
		groups = append(groups, g.Name)
	}
	code, err := os.MkdirTemp("", "infra-code-")
	if err != nil {
		return nil, err
	}
	if err := fixtureCode(code, groups); err != nil {
		return nil, err
	}
	uiDir := ""
	if cfg.ui {
		if uiDir, err = fixtureUI(); err != nil {
			return nil, err
		}
	}
	sites, err := stacks.SitesFromContext(func(k string) any { return cfg.context[k] },
		map[string]string{"us": prefix + "-US", "eu": prefix + "-EU"})
	if err != nil {
		return nil, err
	}
	a, err := newApp()
	if err != nil {
		return nil, err
	}
	var out []*region
	for _, n := range names {
		site := sites.Of(n)
		r := &region{name: n, awsRegion: site.AWSRegion}
		r.props = &stacks.RegionStackProps{
			StackProps:          awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(site.AWSRegion)}},
			RegionName:          n,
			Sites:               sites,
			Layout:              layout,
			CodeDir:             code,
			UIAssetsDir:         uiDir,
			OperatorTokenSHA256: cfg.operator,
		}
		r.stack, err = stacks.NewRegionStack(a, site.StackID, r.props)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	for _, r := range out {
		r.tpl = assertions.Template_FromStack(r.stack.Stack, nil)
		raw, _ := json.Marshal(r.tpl.ToJSON())
		if err := json.Unmarshal(raw, &r.json); err != nil {
			return nil, err
		}
		r.outdir = *a.Outdir()
	}
	return out, nil
}

// app is the product's catalog in both regions, synthesized once, with
// the default context (placeholder hosts, Elastic IPs allocated by the
// stacks), a web UI folder and an operator token.
func app(t *testing.T) []*region {
	t.Helper()
	appOnce.Do(func() {
		layout, err := stacks.CatalogLayout()
		if err != nil {
			appErr = err
			return
		}
		productRegions, appErr = synth(layout, "Test", appConfig{ui: true, operator: operatorDigest}, "us", "eu")
	})
	if appErr != nil {
		t.Fatal(appErr)
	}
	return productRegions
}

// must turns an assertion's panic (jsii reports mismatches that way) into
// a test error.
func must(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: %v", what, p)
		}
	}()
	f()
}

func (r *region) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, v := range r.json["Resources"].(map[string]any) {
		res := v.(map[string]any)
		if res["Type"] == typ {
			props, _ := res["Properties"].(map[string]any)
			out[id] = props
		}
	}
	return out
}

// id is the logical id of a construct (its CloudFormation resource) in r.
func (r *region) id(c constructs.IConstruct) string {
	if c == nil {
		return "<missing>"
	}
	// Down the default children to the CloudFormation element (an
	// AwsCustomResource holds a CustomResource holding it).
	for {
		if el, ok := c.(awscdk.CfnElement); ok {
			return *r.stack.GetLogicalId(el)
		}
		child := c.Node().DefaultChild()
		if child == nil {
			return "<no resource>"
		}
		c = child
	}
}

// fnID is the logical id of a group's function.
func fnID(r *region, group string) string {
	fn, ok := r.stack.Functions[group]
	if !ok {
		return "missing-function-" + group
	}
	return r.id(fn)
}

// flat renders a CloudFormation value as a string: Ref X as ${X},
// Fn::GetAtt [X, A] as ${X.A}, Fn::Join joined; so policies, environment
// values and ARNs compare as text.
func flat(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return fmt.Sprint(v)
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			return "${" + ref + "}"
		}
		if ga, ok := v["Fn::GetAtt"].([]any); ok {
			return "${" + flat(ga[0]) + "." + flat(ga[1]) + "}"
		}
		if j, ok := v["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, flat(p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// grants returns every "action resource" an IAM role's inline policies
// allow (the template's AWS::IAM::Policy resources attached to it); a
// statement with a condition gives "action resource if {condition}".
func (r *region) grants(t *testing.T, roleID string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for pid, p := range r.resources("AWS::IAM::Policy") {
		attached := false
		for _, role := range list(p["Roles"]) {
			if flat(role) == "${"+roleID+"}" {
				attached = true
			}
		}
		if !attached {
			continue
		}
		for _, st := range list(p["PolicyDocument"].(map[string]any)["Statement"]) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" || st["NotAction"] != nil || st["NotResource"] != nil {
				t.Errorf("%s: policy %s has a statement this test does not read: %v", r.name, pid, st)
				continue
			}
			cond := ""
			if st["Condition"] != nil {
				cond = " if " + flat(st["Condition"])
			}
			for _, a := range list(st["Action"]) {
				for _, res := range list(st["Resource"]) {
					out[flat(a)+" "+flat(res)+cond] = true
				}
			}
		}
	}
	return out
}

// roleOf is the logical id of a function's or project's role.
func roleOf(props map[string]any, key string) string {
	s := flat(props[key])
	s = strings.TrimPrefix(s, "${")
	s = strings.TrimSuffix(s, ".Arn}")
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRegions(t *testing.T) {
	for _, r := range app(t) {
		if got := *r.stack.Region(); got != r.awsRegion {
			t.Errorf("%s stack in %s, want %s", r.name, got, r.awsRegion)
		}
	}
}

func TestTable(t *testing.T) {
	for _, r := range app(t) {
		var gsis []any
		for _, ix := range store.IndexNames {
			gsis = append(gsis, map[string]any{
				"IndexName": ix,
				"KeySchema": []any{
					map[string]any{"AttributeName": store.IndexPKAttr(ix), "KeyType": "HASH"},
					map[string]any{"AttributeName": store.IndexSKAttr(ix), "KeyType": "RANGE"},
				},
				"Projection": map[string]any{"ProjectionType": "ALL"},
			})
		}
		must(t, r.name+" table", func() {
			r.tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1))
			r.tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
				"KeySchema": []any{
					map[string]any{"AttributeName": store.AttrPK, "KeyType": "HASH"},
					map[string]any{"AttributeName": store.AttrSK, "KeyType": "RANGE"},
				},
				"BillingMode":                      "PAY_PER_REQUEST",
				"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
				"TimeToLiveSpecification":          map[string]any{"AttributeName": store.AttrTTL, "Enabled": true},
				"SSESpecification":                 map[string]any{"SSEEnabled": true},
				"DeletionProtectionEnabled":        true,
				"GlobalSecondaryIndexes":           gsis,
			})
		})
		for _, props := range r.resources("AWS::DynamoDB::Table") {
			defs := props["AttributeDefinitions"].([]any)
			if len(defs) != 2+2*len(store.IndexNames) {
				t.Errorf("%s: %d attribute definitions", r.name, len(defs))
			}
			for _, d := range defs {
				if d.(map[string]any)["AttributeType"] != "S" {
					t.Errorf("%s: attribute %v is not a string", r.name, d)
				}
			}
		}
	}
}

func TestBucketsAndKey(t *testing.T) {
	for _, r := range app(t) {
		must(t, r.name+" blob bucket", func() {
			r.tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(4))
			r.tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
				"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
					map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}},
				"PublicAccessBlockConfiguration": map[string]any{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
				"VersioningConfiguration": map[string]any{"Status": "Enabled"},
				"LoggingConfiguration":    assertions.Match_ObjectLike(&map[string]any{"LogFilePrefix": "blobs/"}),
			})
		})
		// Every bucket (blobs, access logs, UI files, CDN logs): encrypted,
		// private, TLS only; all but the access-log bucket log to it.
		for id, b := range r.resources("AWS::S3::Bucket") {
			enc := fmt.Sprint(b["BucketEncryption"])
			pab := fmt.Sprint(b["PublicAccessBlockConfiguration"])
			if !strings.Contains(enc, "AES256") || pab != "map[BlockPublicAcls:true BlockPublicPolicy:true IgnorePublicAcls:true RestrictPublicBuckets:true]" {
				t.Errorf("%s: bucket %s: encryption %s, public access %s", r.name, id, enc, pab)
			}
			if id != r.id(r.stack.LogBucket) && flat(b["LoggingConfiguration"].(map[string]any)["DestinationBucketName"]) != "${"+r.id(r.stack.LogBucket)+"}" {
				t.Errorf("%s: bucket %s logs to %v", r.name, id, b["LoggingConfiguration"])
			}
		}
		must(t, r.name+" every bucket denies plain HTTP", func() {
			r.tpl.ResourcePropertiesCountIs(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
				"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}),
				})}),
			}, jsii.Number(4))
		})
		must(t, r.name+" secrets key", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{"EnableKeyRotation": true})
		})
	}
}

// The product's groups: the catalog the stacks are generated from must
// keep them (a group dropped or renamed would silently drop its function).
func TestCatalogGroups(t *testing.T) {
	want := map[string]bool{"platform": true, "controlplane": true, "build": true, "threads": true, "orgaccess": true, "scim": true,
		"tracing": true, "datasets": true, "prompts": true, "billing": true, "mcp": true}
	for _, g := range catalog.Groups() {
		delete(want, g.Name)
	}
	for g := range want {
		t.Errorf("group %s is not in the catalog", g)
	}
}

func TestQueues(t *testing.T)                       { checkAll(t, app(t), checkQueues) }
func TestSchedules(t *testing.T)                    { checkAll(t, app(t), checkSchedules) }
func TestFunctions(t *testing.T)                    { checkAll(t, app(t), checkFunctions) }
func TestFunctionIAM(t *testing.T)                  { checkAll(t, app(t), checkFunctionIAM) }
func TestWorkflowIAM(t *testing.T)                  { checkAll(t, app(t), checkWorkflowIAM) }
func TestEveryRouteReachesItsGroup(t *testing.T)    { checkAll(t, app(t), checkRoutes) }
func TestProductAcceptsTheEnvironment(t *testing.T) { checkAll(t, app(t), checkProductConfig) }

func checkAll(t *testing.T, rs []*region, check func(*testing.T, *region)) {
	t.Helper()
	for _, r := range rs {
		check(t, r)
	}
}

// checkQueues: a queue and a dead-letter queue per consuming group, both
// encrypted and TLS-only, the queue redriving to its own dead-letter queue
// after stacks.MaxReceives, with a visibility timeout 6x its consumer's
// timeout, and one event source mapping with partial batch failures onto
// that group's function; none for the other groups.
func checkQueues(t *testing.T, r *region) {
	l := r.stack.Layout
	queues := r.resources("AWS::SQS::Queue")
	lambdas := r.resources("AWS::Lambda::Function")
	mappings := r.resources("AWS::Lambda::EventSourceMapping")
	consumers := 0
	for _, g := range l.Groups {
		q, dlq := r.stack.Queues[g.Name], r.stack.DeadLetters[g.Name]
		if !g.HasQueue() {
			if q != nil || dlq != nil {
				t.Errorf("%s: group %s consumes nothing but has a queue", r.name, g.Name)
			}
			continue
		}
		consumers++
		qp, dp := queues[r.id(q)], queues[r.id(dlq)]
		if qp == nil || dp == nil {
			t.Errorf("%s: group %s: queue %v, dead-letter queue %v", r.name, g.Name, qp, dp)
			continue
		}
		timeout := lambdas[fnID(r, g.Name)]["Timeout"].(float64)
		if qp["VisibilityTimeout"] != 6*timeout {
			t.Errorf("%s: group %s: visibility %v for a %v s function", r.name, g.Name, qp["VisibilityTimeout"], timeout)
		}
		wantRedrive := fmt.Sprint(map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{r.id(dlq), "Arn"}}, "maxReceiveCount": float64(stacks.MaxReceives)})
		if fmt.Sprint(qp["RedrivePolicy"]) != wantRedrive {
			t.Errorf("%s: group %s: redrive %v", r.name, g.Name, qp["RedrivePolicy"])
		}
		if dp["RedrivePolicy"] != nil {
			t.Errorf("%s: group %s: the dead-letter queue redrives", r.name, g.Name)
		}
		n := 0
		for _, m := range mappings {
			if flat(m["EventSourceArn"]) != "${"+r.id(q)+".Arn}" {
				continue
			}
			n++
			if flat(m["FunctionName"]) != "${"+fnID(r, g.Name)+"}" || fmt.Sprint(m["FunctionResponseTypes"]) != "[ReportBatchItemFailures]" {
				t.Errorf("%s: group %s: mapping %v", r.name, g.Name, m)
			}
		}
		if n != 1 {
			t.Errorf("%s: group %s: %d mappings on its queue", r.name, g.Name, n)
		}
	}
	for id, p := range queues {
		if p["SqsManagedSseEnabled"] != true {
			t.Errorf("%s: queue %s is not encrypted", r.name, id)
		}
	}
	if len(queues) != 2*consumers || len(mappings) != consumers {
		t.Errorf("%s: %d queues and %d mappings for %d consuming groups", r.name, len(queues), len(mappings), consumers)
	}
	must(t, r.name+" queues deny plain HTTP", func() {
		r.tpl.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
			"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
				assertions.Match_ObjectLike(&map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}),
			})}),
		}, jsii.Number(float64(2*consumers)))
	})
}

// checkSchedules: one rule per sweeping group, every minute, onto that
// group's function, without retries.
func checkSchedules(t *testing.T, r *region) {
	rules := r.resources("AWS::Events::Rule")
	sweepers := 0
	for _, g := range r.stack.Layout.Groups {
		rule := r.stack.Schedules[g.Name]
		if !g.Sweeps {
			if rule != nil {
				t.Errorf("%s: group %s does not sweep but has a schedule", r.name, g.Name)
			}
			continue
		}
		sweepers++
		p := rules[r.id(rule)]
		if p == nil {
			t.Errorf("%s: group %s has no schedule", r.name, g.Name)
			continue
		}
		targets := list(p["Targets"])
		if p["ScheduleExpression"] != "rate(1 minute)" || p["State"] != "ENABLED" || len(targets) != 1 {
			t.Errorf("%s: group %s: schedule %v", r.name, g.Name, p)
			continue
		}
		tg := targets[0].(map[string]any)
		if flat(tg["Arn"]) != "${"+fnID(r, g.Name)+".Arn}" || fmt.Sprint(tg["RetryPolicy"]) != "map[MaximumEventAgeInSeconds:60 MaximumRetryAttempts:0]" {
			t.Errorf("%s: group %s: target %v", r.name, g.Name, tg)
		}
	}
	if len(rules) != sweepers {
		t.Errorf("%s: %d rules for %d sweeping groups", r.name, len(rules), sweepers)
	}
}

// otherOf is the other region's name.
func otherOf(name string) string {
	if name == "eu" {
		return "us"
	}
	return "eu"
}

// cdkProviders are the functions CDK adds for deployment-time work, by
// logical id prefix: the UI file deployment, the lookup of the execute-api
// endpoint's addresses, and the default security group lockdown.
var cdkProviders = []string{"CustomCDKBucketDeployment", "AWS679f53fac002430cb0da5b7982bd2287", "CustomVpcRestrictDefaultSGCustomResourceProvider"}

// publishedIPs is what region r's functions must be told of region n's
// egress or ingress addresses: the context's, or r's own allocated ones,
// or the interface's tables.
func publishedIPs(r *region, n, what string) string {
	site := r.props.Sites.Of(n)
	eips := site.Egress
	if what == "INGRESS" {
		eips = site.Ingress
	}
	var ips []string
	for _, e := range eips {
		ips = append(ips, e.IP)
	}
	if len(ips) == 0 && n == r.name {
		prefix := "NatEip"
		if what == "INGRESS" {
			prefix = "IngressEip"
		}
		for i := range site.AZs {
			ips = append(ips, fmt.Sprintf("${%s%d.PublicIp}", prefix, i+1))
		}
	}
	if len(ips) == 0 {
		def := apregions.Defaults().Of(apregions.Name(n))
		ips = def.EgressIPs
		if what == "INGRESS" {
			ips = def.IngressIPs
		}
	}
	return strings.Join(ips, ",")
}

// wantEnv is the environment a group's function must have, written out
// from the sites and the group's declaration (not from the stacks
// package), as name → value; "" stands for a value checked elsewhere.
func wantEnv(r *region, g stacks.GroupPlan) map[string]string {
	site, other := r.props.Sites.Of(r.name), r.props.Sites.Of(otherOf(r.name))
	env := map[string]string{"AGENTPLANE_MODE": "aws", "AGENTPLANE_REGION_NAME": r.name, "AGENTPLANE_LOG_LEVEL": "info"}
	if !g.Store {
		env["AGENTPLANE_MCP_ENDPOINT"] = site.APIURL
		env["AGENTPLANE_MCP_ALLOWED_ENDPOINTS"] = other.APIURL
		return env
	}
	env["AGENTPLANE_TABLE"] = "${" + r.id(r.stack.Table) + "}"
	env["AGENTPLANE_BASE_URL"] = site.APIURL
	env["AGENTPLANE_PEER_URL"] = other.APIURL
	for _, n := range []string{"us", "eu"} {
		s := r.props.Sites.Of(n)
		N := strings.ToUpper(n)
		env["AGENTPLANE_"+N+"_API_URL"] = s.APIURL
		env["AGENTPLANE_"+N+"_APP_URL"] = s.AppURL
		env["AGENTPLANE_"+N+"_BEACON_URL"] = s.BeaconURL
		env["AGENTPLANE_"+N+"_EGRESS_IPS"] = publishedIPs(r, n, "EGRESS")
		env["AGENTPLANE_"+N+"_INGRESS_IPS"] = publishedIPs(r, n, "INGRESS")
	}
	if r.name == "us" {
		env["AGENTPLANE_REGION_LINK_TOKEN"] = "{{resolve:secretsmanager:${" + r.id(r.stack.LinkSecret) + "}:SecretString:::}}"
	} else {
		env["AGENTPLANE_REGION_LINK_TOKEN"] = "{{resolve:secretsmanager:" + stacks.DefaultLinkSecretName + ":SecretString:::}}"
	}
	if g.Uses.Blobs {
		env["AGENTPLANE_BUCKET"] = "${" + r.id(r.stack.Bucket) + "}"
	}
	if len(g.Publishes) > 0 {
		env["AGENTPLANE_TOPICS"] = ""
	}
	if g.Uses.Secrets {
		env["AGENTPLANE_KMS_KEY_ID"] = "${" + r.id(r.stack.SecretsKey) + ".Arn}"
	}
	if len(g.Uses.StartsWorkflows) > 0 {
		env["AGENTPLANE_STATE_MACHINES"] = ""
	}
	for _, rt := range g.Routes {
		if rt.Pattern() == stacks.SignUpRoute && r.props.OperatorTokenSHA256 != "" {
			env["AGENTPLANE_OPERATOR_TOKEN_SHA256"] = r.props.OperatorTokenSHA256
		}
	}
	if r.name == "eu" && slices.Contains(g.Consumes, billing.TopicUsage) {
		us := r.props.Sites.US
		env["AGENTPLANE_BILLING_QUEUE_URL"] = "https://sqs." + us.AWSRegion + ".${AWS::URLSuffix}/" + account + "/" + us.StackID + "-" + g.Name
		env["AGENTPLANE_BILLING_QUEUE_REGION"] = us.AWSRegion
	}
	return env
}

// checkFunctions: one function per group on provided.al2023/arm64 with
// tracing (and no other function but CDK's deployment-time providers), the
// group's timeout, and exactly the configuration shared/compose/config.go
// (or, for a group with its own host, mcpgroup.FromEnv) reads: wantEnv,
// with AGENTPLANE_TOPICS naming exactly the published topics (each to its
// consumer's queue) and only the started state machines. The functions that
// call user endpoints run in the VPC's private subnets; the others not.
func checkFunctions(t *testing.T, r *region) {
	l := r.stack.Layout
	lambdas := r.resources("AWS::Lambda::Function")
	for id := range lambdas {
		mine := false
		for _, g := range l.Groups {
			mine = mine || id == fnID(r, g.Name)
		}
		for _, p := range cdkProviders {
			mine = mine || strings.HasPrefix(id, p)
		}
		if !mine {
			t.Errorf("%s: function %s is neither a group's nor a known CDK provider", r.name, id)
		}
	}
	machines := map[string]string{}
	for wf, sm := range r.stack.StateMachines {
		name := r.resources("AWS::StepFunctions::StateMachine")[r.id(sm)]["StateMachineName"]
		machines[wf] = fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", r.awsRegion, account, name)
	}
	private := map[string]bool{}
	for id, sub := range r.resources("AWS::EC2::Subnet") {
		if sub["MapPublicIpOnLaunch"] != true {
			private[id] = true
		}
	}
	for _, g := range l.Groups {
		p, ok := lambdas[fnID(r, g.Name)]
		if !ok {
			t.Errorf("%s: no function for group %s", r.name, g.Name)
			continue
		}
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || fmt.Sprint(p["Architectures"]) != "[arm64]" {
			t.Errorf("%s %s: runtime %v, handler %v, architectures %v", r.name, g.Name, p["Runtime"], p["Handler"], p["Architectures"])
		}
		if fmt.Sprint(p["TracingConfig"]) != "map[Mode:Active]" {
			t.Errorf("%s %s: tracing %v", r.name, g.Name, p["TracingConfig"])
		}
		if p["Timeout"] != float64(g.TimeoutSeconds) {
			t.Errorf("%s %s: timeout %v", r.name, g.Name, p["Timeout"])
		}
		vpc, _ := p["VpcConfig"].(map[string]any)
		if (vpc != nil) != (g.Egress != "") {
			t.Errorf("%s %s: in the VPC %v, calls user endpoints %q", r.name, g.Name, vpc != nil, g.Egress)
		}
		if vpc != nil {
			subnets := list(vpc["SubnetIds"])
			if len(subnets) != len(r.stack.Site.AZs) {
				t.Errorf("%s %s: subnets %v", r.name, g.Name, subnets)
			}
			for _, sn := range subnets {
				if !private[strings.Trim(flat(sn), "${}")] {
					t.Errorf("%s %s: subnet %v is not private", r.name, g.Name, sn)
				}
			}
			if sgs := list(vpc["SecurityGroupIds"]); len(sgs) != 1 || flat(sgs[0]) != "${"+r.id(r.stack.Network.Egress)+".GroupId}" {
				t.Errorf("%s %s: security groups %v", r.name, g.Name, sgs)
			}
		}
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		want := wantEnv(r, g)
		if got := sortedKeys(env); fmt.Sprint(got) != fmt.Sprint(sortedKeys(want)) {
			t.Errorf("%s %s: environment %v\nwant %v", r.name, g.Name, got, sortedKeys(want))
		}
		for k, v := range want {
			if v != "" && flat(env[k]) != v {
				t.Errorf("%s %s: %s = %s, want %s", r.name, g.Name, k, flat(env[k]), v)
			}
		}
		if len(g.Publishes) > 0 {
			var topics map[string]string
			if err := json.Unmarshal([]byte(flat(env["AGENTPLANE_TOPICS"])), &topics); err != nil {
				t.Errorf("%s %s: AGENTPLANE_TOPICS %v: %v", r.name, g.Name, env["AGENTPLANE_TOPICS"], err)
			}
			want := map[string]string{}
			for _, topic := range g.Publishes {
				want[topic] = "${" + r.id(r.stack.Queues[l.Consumers[topic]]) + "}"
			}
			if fmt.Sprint(topics) != fmt.Sprint(want) {
				t.Errorf("%s %s: AGENTPLANE_TOPICS %v, want %v", r.name, g.Name, topics, want)
			}
		}
		if len(g.Uses.StartsWorkflows) > 0 {
			var got map[string]string
			if err := json.Unmarshal([]byte(flat(env["AGENTPLANE_STATE_MACHINES"])), &got); err != nil {
				t.Errorf("%s %s: AGENTPLANE_STATE_MACHINES %v: %v", r.name, g.Name, env["AGENTPLANE_STATE_MACHINES"], err)
			}
			want := map[string]string{}
			for _, wf := range g.Uses.StartsWorkflows {
				want[wf] = machines[wf]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s %s: AGENTPLANE_STATE_MACHINES %v, want %v", r.name, g.Name, got, want)
			}
		}
	}
}

var token = regexp.MustCompile(`\$\{[^}]*\}`)

// deployedEnv is a function's environment as it would be after
// deployment: CloudFormation values replaced by values of their kind.
func deployedEnv(env map[string]any) map[string]string {
	out := map[string]string{}
	ip := 0
	for k, v := range env {
		s := flat(v)
		switch {
		case strings.HasPrefix(s, "{{resolve:secretsmanager:"):
			s = strings.Repeat("k", 64)
		case strings.HasSuffix(k, "_IPS"):
			s = token.ReplaceAllStringFunc(s, func(string) string { ip++; return fmt.Sprintf("203.0.113.%d", ip) })
		default:
			s = token.ReplaceAllString(s, "x")
		}
		out[k] = s
	}
	return out
}

// checkProductConfig: the product accepts each function's configuration as
// deployed: compose.ConfigFromEnv for the groups over the store (so no
// variable is misnamed or malformed, the region link is complete and, in
// the EU, the billing function has its queue), mcpgroup.FromEnv for the
// tool server.
func checkProductConfig(t *testing.T, r *region) {
	lambdas := r.resources("AWS::Lambda::Function")
	for _, g := range r.stack.Layout.Groups {
		env := deployedEnv(lambdas[fnID(r, g.Name)]["Environment"].(map[string]any)["Variables"].(map[string]any))
		getenv := func(k string) string { return env[k] }
		if !g.Store {
			if _, err := mcpgroup.FromEnv(getenv, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
				t.Errorf("%s %s: mcpgroup.FromEnv: %v", r.name, g.Name, err)
			}
			continue
		}
		for _, k := range os.Environ() {
			if name, _, _ := strings.Cut(k, "="); strings.HasPrefix(name, "AGENTPLANE_") {
				t.Setenv(name, "")
				os.Unsetenv(name)
			}
		}
		for k, v := range env {
			t.Setenv(k, v)
		}
		c, err := compose.ConfigFromEnv()
		if err != nil {
			t.Errorf("%s %s: compose.ConfigFromEnv: %v", r.name, g.Name, err)
			continue
		}
		if string(c.Mode) != "aws" || c.Region != r.name || c.Regions.PeerURL != r.props.Sites.Of(otherOf(r.name)).APIURL ||
			c.Regions.Hosted.Of(apregions.Name(r.name)).APIURL != r.props.Sites.Of(r.name).APIURL {
			t.Errorf("%s %s: configuration %+v", r.name, g.Name, c.Regions)
		}
		if (c.Bucket != "") != g.Uses.Blobs {
			t.Errorf("%s %s: bucket %q with blobs %v", r.name, g.Name, c.Bucket, g.Uses.Blobs)
		}
		if (c.BillingQueueURL != "") != (r.name == "eu" && slices.Contains(g.Consumes, billing.TopicUsage)) {
			t.Errorf("%s %s: billing queue %q", r.name, g.Name, c.BillingQueueURL)
		}
	}
}

// dataGrants is what a group's declaration entitles its code to, as
// "action resource" pairs over the template's logical ids; written out
// here rather than taken from the stacks package, so a broadened grant
// fails. A group with its own host opens no store: nothing.
func dataGrants(r *region, g stacks.GroupPlan) map[string]bool {
	out := map[string]bool{}
	if !g.Store {
		return out
	}
	add := func(res string, actions ...string) {
		for _, a := range actions {
			out[a+" "+res] = true
		}
	}
	table := "${" + r.id(r.stack.Table) + ".Arn}"
	add(table, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem", "dynamodb:Query")
	for _, ix := range g.Uses.Indexes {
		add(table+"/index/"+ix, "dynamodb:Query")
	}
	if g.Uses.Blobs {
		bucket := "${" + r.id(r.stack.Bucket) + ".Arn}"
		add(bucket+"/*", "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload")
		add(bucket, "s3:ListBucket")
	}
	if g.Uses.Secrets {
		add("${"+r.id(r.stack.SecretsKey)+".Arn}", "kms:Decrypt", "kms:GenerateDataKey")
	}
	for _, wf := range g.Uses.StartsWorkflows {
		name := r.resources("AWS::StepFunctions::StateMachine")[r.id(r.stack.StateMachines[wf])]["StateMachineName"]
		add(fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", r.awsRegion, account, name), "states:StartExecution")
	}
	for _, topic := range g.Publishes {
		add("${"+r.id(r.stack.Queues[r.stack.Layout.Consumers[topic]])+".Arn}", "sqs:SendMessage")
	}
	if r.name == "eu" && slices.Contains(g.Consumes, billing.TopicUsage) {
		// Forwarding usage to the US billing queue.
		us := r.props.Sites.US
		add(fmt.Sprintf("arn:aws:sqs:%s:%s:%s-%s", us.AWSRegion, account, us.StackID, g.Name), "sqs:SendMessage")
	}
	return out
}

// checkFunctionIAM: each function's role allows exactly its own log
// group, X-Ray, receiving from its own queue, the network interface
// actions when it runs in the VPC, and dataGrants; nothing else (so a
// group without Uses.Blobs has no S3 statement at all, one without
// Uses.Secrets no KMS statement, the tool server no data at all).
func checkFunctionIAM(t *testing.T, r *region) {
	lambdas := r.resources("AWS::Lambda::Function")
	for _, g := range r.stack.Layout.Groups {
		p := lambdas[fnID(r, g.Name)]
		if p == nil {
			t.Errorf("%s: no function for group %s", r.name, g.Name)
			continue
		}
		if r.resources("AWS::IAM::Role")[roleOf(p, "Role")]["ManagedPolicyArns"] != nil {
			t.Errorf("%s %s: the role has managed policies", r.name, g.Name)
		}
		want := dataGrants(r, g)
		logs := "${" + strings.Trim(flat(p["LoggingConfig"].(map[string]any)["LogGroup"]), "${}") + ".Arn}"
		for _, a := range []string{"logs:CreateLogStream", "logs:PutLogEvents"} {
			want[a+" "+logs] = true
		}
		for _, a := range []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"} {
			want[a+" *"] = true
		}
		if g.Egress != "" {
			for _, a := range []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
				"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"} {
				want[a+" *"] = true
			}
		}
		if g.HasQueue() {
			q := "${" + r.id(r.stack.Queues[g.Name]) + ".Arn}"
			for _, a := range []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"} {
				want[a+" "+q] = true
			}
		}
		got := r.grants(t, roleOf(p, "Role"))
		for k := range got {
			if !want[k] {
				t.Errorf("%s %s: the role allows %s, which the group does not declare", r.name, g.Name, k)
			}
		}
		for k := range want {
			if !got[k] {
				t.Errorf("%s %s: the role lacks %s", r.name, g.Name, k)
			}
		}
		for k := range got {
			res := k[strings.Index(k, " ")+1:]
			if strings.Contains(res, "*") && res != "*" && res != "${"+r.id(r.stack.Bucket)+".Arn}/*" {
				t.Errorf("%s %s: wildcard resource in %s", r.name, g.Name, k)
			}
			if res == "*" && !strings.HasPrefix(k, "xray:") && !(g.Egress != "" && strings.HasPrefix(k, "ec2:")) {
				t.Errorf("%s %s: %s on every resource", r.name, g.Name, k)
			}
		}
	}
}

// checkWorkflowIAM: a state machine invokes only its runner's function;
// a CodeBuild step's project has the runner group's data grants and no
// other access to the table, the blob bucket, the queues or the state
// machines; it runs in the VPC when its runner calls user endpoints, and
// reads the region link's token from Secrets Manager, never from its own
// configuration.
func checkWorkflowIAM(t *testing.T, r *region) {
	l := r.stack.Layout
	machines := r.resources("AWS::StepFunctions::StateMachine")
	projects := r.resources("AWS::CodeBuild::Project")
	for _, w := range l.Workflows {
		sm := machines[r.id(r.stack.StateMachines[w.Definition.Name])]
		if sm == nil {
			t.Errorf("%s: no state machine for %s", r.name, w.Definition.Name)
			continue
		}
		runner := "${" + fnID(r, w.Group) + ".Arn}"
		for k := range r.grants(t, roleOf(sm, "RoleArn")) {
			if strings.HasPrefix(k, "lambda:") && k != "lambda:InvokeFunction "+runner && k != "lambda:InvokeFunction "+runner+":*" {
				t.Errorf("%s: state machine %s: %s", r.name, w.Definition.Name, k)
			}
		}
		g, _ := l.Group(w.Group)
		want := dataGrants(r, g)
		data := []string{r.id(r.stack.Table), r.id(r.stack.Bucket), ":states:"}
		for _, q := range r.stack.Queues {
			data = append(data, r.id(q))
		}
		for _, st := range w.Definition.Steps {
			if st.AWSService != stacks.ServiceCodeBuild {
				continue
			}
			p := projects[r.id(r.stack.Projects[w.Definition.Name+"/"+st.Name])]
			if p == nil {
				t.Errorf("%s: no project for %s/%s", r.name, w.Definition.Name, st.Name)
				continue
			}
			if (p["VpcConfig"] != nil) != (g.Egress != "") {
				t.Errorf("%s: project %s/%s: VPC %v, runner calls user endpoints %q", r.name, w.Definition.Name, st.Name, p["VpcConfig"], g.Egress)
			}
			got := r.grants(t, roleOf(p, "ServiceRole"))
			for k := range want {
				if !got[k] {
					t.Errorf("%s: project %s/%s lacks %s", r.name, w.Definition.Name, st.Name, k)
				}
			}
			for k := range got {
				for _, d := range data {
					if strings.Contains(k, d) && !want[k] {
						t.Errorf("%s: project %s/%s allows %s, beyond its group's declaration", r.name, w.Definition.Name, st.Name, k)
					}
				}
			}
			secret := false
			for k := range got {
				if strings.HasPrefix(k, "secretsmanager:GetSecretValue ") && strings.Contains(k, ":secret:"+stacks.DefaultLinkSecretName+"-") {
					secret = true
				}
			}
			if !secret {
				t.Errorf("%s: project %s/%s cannot read the region link secret: %v", r.name, w.Definition.Name, st.Name, sortedKeys(got))
			}
			for _, v := range list(p["Environment"].(map[string]any)["EnvironmentVariables"]) {
				v := v.(map[string]any)
				if v["Name"] == "AGENTPLANE_REGION_LINK_TOKEN" && (v["Type"] != "SECRETS_MANAGER" || v["Value"] != stacks.DefaultLinkSecretName) {
					t.Errorf("%s: project %s/%s: link token %v", r.name, w.Definition.Name, st.Name, v)
				}
			}
		}
	}
}

// restAPI returns the logical id of the REST API of host.
func (r *region) restAPI(host string) string { return r.id(r.stack.APIs[host]) }

// apiMethods reconstructs the template's REST API of host: resource path
// → method → the group whose function the method invokes.
func apiMethods(t *testing.T, r *region, host string) map[string]map[string]string {
	t.Helper()
	apiID := r.restAPI(host)
	res := r.resources("AWS::ApiGateway::Resource")
	var pathOf func(ref any) string
	pathOf = func(ref any) string {
		m := ref.(map[string]any)
		if ga, ok := m["Fn::GetAtt"]; ok && ga.([]any)[1] == "RootResourceId" {
			return ""
		}
		p := res[m["Ref"].(string)]
		return pathOf(p["ParentId"]) + "/" + p["PathPart"].(string)
	}
	out := map[string]map[string]string{}
	for _, m := range r.resources("AWS::ApiGateway::Method") {
		if flat(m["RestApiId"]) != "${"+apiID+"}" {
			continue
		}
		path := pathOf(m["ResourceId"])
		if path == "" {
			path = "/"
		}
		uri := flat(m["Integration"].(map[string]any)["Uri"])
		target := ""
		for _, g := range r.stack.Layout.Groups {
			if strings.Contains(uri, "${"+fnID(r, g.Name)+".Arn}") {
				target = g.Name
			}
		}
		if typ := m["Integration"].(map[string]any)["Type"]; typ != "AWS_PROXY" {
			t.Errorf("%s %s %s: integration %v", r.name, m["HttpMethod"], path, typ)
		}
		if m["AuthorizationType"] != "NONE" {
			t.Errorf("%s %s %s: authorization %v", r.name, m["HttpMethod"], path, m["AuthorizationType"])
		}
		if out[path] == nil {
			out[path] = map[string]string{}
		}
		out[path][m["HttpMethod"].(string)] = target
	}
	return out
}

// gatewayMatch is API Gateway's choice of resource and method for a
// request, over the resource paths of methods: at each path part a literal
// part before a {variable} before a greedy {name+}; then the method itself
// before ANY. A trailing slash is ignored.
func gatewayMatch(methods map[string]map[string]string, method, path string) (resource, group string) {
	children := map[string][]string{}
	for p := range methods {
		for cur := p; cur != "/"; {
			parent := cur[:strings.LastIndex(cur, "/")]
			if parent == "" {
				parent = "/"
			}
			if !slices.Contains(children[parent], cur) {
				children[parent] = append(children[parent], cur)
			}
			cur = parent
		}
	}
	var walk func(node string, segs []string) string
	walk = func(node string, segs []string) string {
		if len(segs) == 0 {
			if methods[node] != nil {
				return node
			}
			return ""
		}
		var lit, variable, greedy string
		for _, c := range children[node] {
			part := c[strings.LastIndex(c, "/")+1:]
			switch {
			case part == segs[0]:
				lit = c
			case strings.HasSuffix(part, "+}"):
				greedy = c
			case strings.HasPrefix(part, "{"):
				variable = c
			}
		}
		for _, c := range []string{lit, variable} {
			if c != "" {
				if found := walk(c, segs[1:]); found != "" {
					return found
				}
			}
		}
		if greedy != "" && methods[greedy] != nil {
			return greedy
		}
		return ""
	}
	trimmed := strings.Trim(path, "/")
	var segs []string
	if trimmed != "" {
		segs = strings.Split(trimmed, "/")
	}
	resource = walk("/", segs)
	if resource == "" {
		return "", ""
	}
	if g, ok := methods[resource][method]; ok {
		return resource, g
	}
	return resource, methods[resource]["ANY"]
}

// samplePath is a request path that a ServeMux pattern path matches.
func samplePath(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		switch {
		case s == "{$}":
			segs[i] = ""
		case strings.HasSuffix(s, "...}"):
			segs[i] = "a/b"
		case strings.HasPrefix(s, "{"):
			segs[i] = "x" + strings.Trim(s, "{}")
		}
	}
	return strings.Join(segs, "/")
}

// checkRoutes: every route of every group reaches its group's function
// on its host's API (as API Gateway matches requests), the platform API
// invokes no function of a group with its own host and a host's API no
// other group's; every method of an API is reached by a route of its group
// (none is stray), subtrees of one group being ANY on the subtree's
// resource and on a greedy {proxy+} below it. The platform API is private
// (its execute-api endpoint only, by policy); a host API is regional.
func checkRoutes(t *testing.T, r *region) {
	l := r.stack.Layout
	if len(r.resources("AWS::ApiGateway::RestApi")) != len(l.Hosts()) {
		t.Errorf("%s: %d REST APIs for hosts %q", r.name, len(r.resources("AWS::ApiGateway::RestApi")), l.Hosts())
	}
	for _, host := range l.Hosts() {
		methods := apiMethods(t, r, host)
		used := map[string]bool{}
		for _, rt := range l.Routes(host) {
			res, g := gatewayMatch(methods, rt.Method, samplePath(rt.Path))
			if g != rt.Group {
				t.Errorf("%s host %q: %s (%s) reaches %s on %q, want the %s function", r.name, host, rt.Pattern(), samplePath(rt.Path), g, res, rt.Group)
			}
			used[res] = true
		}
		for path, ms := range methods {
			greedy := strings.TrimSuffix(path, "/") + "/" + stacks.GreedyPart
			collapsedTop := ms["ANY"] != "" && methods[greedy]["ANY"] == ms["ANY"] && used[greedy]
			if !used[path] && !collapsedTop {
				t.Errorf("%s host %q: resource %s (%v) is reached by no route", r.name, host, path, ms)
			}
			for m, g := range ms {
				grp, _ := l.Group(g)
				if grp.Host != host {
					t.Errorf("%s host %q: %s %s invokes %q, a group of host %q", r.name, host, m, path, g, grp.Host)
				}
			}
		}
		p := r.resources("AWS::ApiGateway::RestApi")[r.restAPI(host)]
		types := fmt.Sprint(p["EndpointConfiguration"].(map[string]any)["Types"])
		if host == "" {
			if types != "[PRIVATE]" || fmt.Sprint(list(p["EndpointConfiguration"].(map[string]any)["VpcEndpointIds"])) != "[map[Ref:"+r.id(r.stack.Network.APIEndpoint)+"]]" {
				t.Errorf("%s: platform API endpoint %v", r.name, p["EndpointConfiguration"])
			}
			checkEndpointPolicy(t, r, "platform API", p["Policy"])
		} else if types != "[REGIONAL]" || p["Policy"] != nil {
			t.Errorf("%s: API of host %s: endpoint %v, policy %v", r.name, host, types, p["Policy"])
		}
	}
	// A path a group with its own host serves (the tool server's
	// /health) never reaches it on the platform API.
	platform := apiMethods(t, r, "")
	for _, g := range l.Groups {
		if g.Host == "" {
			continue
		}
		for _, rt := range g.Routes {
			if _, got := gatewayMatch(platform, rt.Method, samplePath(rt.Path)); got == g.Name {
				t.Errorf("%s: %s reaches %s on the platform API", r.name, rt.Pattern(), g.Name)
			}
		}
	}
	must(t, r.name+" stages", func() {
		r.tpl.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
			"StageName":        stacks.StageName,
			"RestApiId":        map[string]any{"Ref": r.restAPI("")},
			"TracingEnabled":   true,
			"AccessLogSetting": assertions.Match_ObjectLike(&map[string]any{"DestinationArn": assertions.Match_AnyValue()}),
			"MethodSettings": []any{map[string]any{"HttpMethod": "*", "ResourcePath": "/*", "DataTraceEnabled": false,
				"LoggingLevel": "ERROR", "MetricsEnabled": true, "ThrottlingRateLimit": 1000, "ThrottlingBurstLimit": 2000}},
		})
		for _, host := range l.Hosts() {
			if host == "" {
				continue
			}
			r.tpl.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
				"StageName": stacks.StageName,
				"RestApiId": map[string]any{"Ref": r.restAPI(host)},
				"MethodSettings": []any{map[string]any{"HttpMethod": "*", "ResourcePath": "/*", "DataTraceEnabled": false,
					"LoggingLevel": "ERROR", "MetricsEnabled": true, "ThrottlingRateLimit": 100, "ThrottlingBurstLimit": 200}},
			})
		}
	})
	// One account setting for API Gateway's CloudWatch role, which every
	// stage (all log) waits for.
	accounts := r.resources("AWS::ApiGateway::Account")
	if len(accounts) != 1 {
		t.Errorf("%s: %d API Gateway account settings", r.name, len(accounts))
	}
	for id, v := range r.json["Resources"].(map[string]any) {
		res := v.(map[string]any)
		if res["Type"] != "AWS::ApiGateway::Stage" {
			continue
		}
		for acct := range accounts {
			if !slices.Contains(list(res["DependsOn"]), any(acct)) {
				t.Errorf("%s: stage %s does not wait for the account's CloudWatch role (%v)", r.name, id, res["DependsOn"])
			}
		}
	}
	// One invoke permission per routed group (not per method) and one per
	// schedule.
	routed, sweeps := 0, 0
	for _, g := range l.Groups {
		if len(g.Routes) > 0 {
			routed++
		}
		if g.Sweeps {
			sweeps++
		}
	}
	if n := len(r.resources("AWS::Lambda::Permission")); n != routed+sweeps {
		t.Errorf("%s: %d Lambda permissions for %d routed groups and %d schedules", r.name, n, routed, sweeps)
	}
}

// checkEndpointPolicy: a resource policy that allows execute-api:Invoke
// and denies it to any request not through the region's execute-api
// endpoint.
func checkEndpointPolicy(t *testing.T, r *region, what string, policy any) {
	t.Helper()
	want := `[map[Action:execute-api:Invoke Effect:Allow Principal:map[AWS:*] Resource:execute-api:/*] ` +
		`map[Action:execute-api:Invoke Condition:map[StringNotEquals:map[aws:SourceVpce:map[Ref:` + r.id(r.stack.Network.APIEndpoint) + `]]] ` +
		`Effect:Deny Principal:map[AWS:*] Resource:execute-api:/*]]`
	doc, _ := policy.(map[string]any)
	if got := fmt.Sprint(doc["Statement"]); got != want {
		t.Errorf("%s: %s policy %s\nwant %s", r.name, what, got, want)
	}
}

func TestStateMachine(t *testing.T) {
	def := builds.Definition()
	for _, r := range app(t) {
		must(t, r.name+" state machine", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::StepFunctions::StateMachine"), map[string]any{
				"StateMachineName":     "Test-" + strings.ToUpper(r.name) + "-build",
				"TracingConfiguration": map[string]any{"Enabled": true},
				"LoggingConfiguration": assertions.Match_ObjectLike(&map[string]any{"Level": "ALL", "IncludeExecutionData": false}),
			})
			r.tpl.HasResourceProperties(jsii.String("AWS::CodeBuild::Project"), map[string]any{
				"Environment": assertions.Match_ObjectLike(&map[string]any{"Type": "ARM_CONTAINER"}),
				"Source":      assertions.Match_ObjectLike(&map[string]any{"Type": "S3"}),
			})
		})
		raw, _ := json.Marshal(r.json)
		sms, err := asl.StateMachines(raw, r.awsRegion)
		if err != nil || len(sms) != 1 {
			t.Fatalf("%s: %d state machines, %v", r.name, len(sms), err)
		}
		states := sms[0].Definition["States"].(map[string]any)
		succeeded, failed := stacks.EndStateNames(def)
		var want []string
		for _, s := range def.Steps {
			want = append(want, s.Name)
		}
		want = append(want, succeeded, failed)
		sort.Strings(want)
		if got := sortedKeys(states); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: states %v, want %v", r.name, got, want)
		}
		first, _ := def.First()
		if sms[0].Definition["StartAt"] != first {
			t.Errorf("%s: StartAt %v", r.name, sms[0].Definition["StartAt"])
		}
		for _, s := range def.Steps {
			st := states[s.Name].(map[string]any)
			if s.AWSService == stacks.ServiceCodeBuild {
				if st["Resource"] != "arn:aws:states:::codebuild:startBuild.sync" {
					t.Errorf("%s: step %s resource %v", r.name, s.Name, st["Resource"])
				}
			} else if fn := st["Parameters"].(map[string]any)["FunctionName"]; !strings.HasSuffix(fmt.Sprint(fn), ":function:"+fnID(r, "build")) {
				t.Errorf("%s: step %s invokes %v", r.name, s.Name, fn)
			} else if p := fmt.Sprint(st["Parameters"].(map[string]any)["Payload"]); p != fmt.Sprintf("map[state.$:$ step:%s workflow:%s]", s.Name, def.Name) {
				t.Errorf("%s: step %s payload %s", r.name, s.Name, p)
			}
			checkFlow(t, r.name, def, s, st)
		}
		// The CodeBuild steps run the build group's deployment zip.
		for _, id := range sortedKeys(r.stack.Projects) {
			p := r.resources("AWS::CodeBuild::Project")[r.id(r.stack.Projects[id])]
			env := map[string]any{}
			for _, v := range list(p["Environment"].(map[string]any)["EnvironmentVariables"]) {
				v := v.(map[string]any)
				env[v["Name"].(string)] = v["Value"]
			}
			fn := r.resources("AWS::Lambda::Function")[fnID(r, "build")]
			fnEnv := maps.Clone(fn["Environment"].(map[string]any)["Variables"].(map[string]any))
			// The link token is read from Secrets Manager by CodeBuild
			// (checkWorkflowIAM), not written into the project.
			fnEnv["AGENTPLANE_REGION_LINK_TOKEN"] = stacks.DefaultLinkSecretName
			if fmt.Sprint(env) != fmt.Sprint(fnEnv) {
				t.Errorf("%s: project %s environment %v, want the build function's %v", r.name, id, env, fnEnv)
			}
		}
	}
}

// checkFlow checks one step's Task state against the definition: where it
// goes next, its Retry on transient errors and its Catch into the failure
// step that records the matching *_FAILED status.
func checkFlow(t *testing.T, region string, def workflow.Definition, s workflow.Step, st map[string]any) {
	t.Helper()
	succeeded, failed := stacks.EndStateNames(def)
	wantNext := succeeded
	if s.FailureOnly {
		wantNext = failed
	} else if n, ok := def.Next(s.Name); ok {
		wantNext = n
	}
	if st["Next"] != wantNext {
		t.Errorf("%s: step %s goes to %v, want %s", region, s.Name, st["Next"], wantNext)
	}
	if st["Comment"] != s.Comment {
		t.Errorf("%s: step %s comment %v", region, s.Name, st["Comment"])
	}

	retries, _ := st["Retry"].([]any)
	var transient map[string]any
	for _, r := range retries {
		r := r.(map[string]any)
		if fmt.Sprint(r["ErrorEquals"]) == "["+workflow.TransientErrorName+"]" {
			transient = r
		}
	}
	switch {
	case s.AWSService == stacks.ServiceCodeBuild:
		// The build retries transient errors itself; the state retries
		// CodeBuild's own errors.
		if transient != nil || len(retries) == 0 {
			t.Errorf("%s: CodeBuild step %s retries %v", region, s.Name, retries)
		}
	case s.MaxAttempts > 1:
		if transient == nil {
			t.Errorf("%s: step %s does not retry %s: %v", region, s.Name, workflow.TransientErrorName, retries)
		} else if transient["MaxAttempts"] != float64(s.MaxAttempts-1) || transient["BackoffRate"] != float64(2) {
			t.Errorf("%s: step %s transient retry %v, want %d retries", region, s.Name, transient, s.MaxAttempts-1)
		}
	}

	catches, _ := st["Catch"].([]any)
	wantCatch := s.OnFailure
	if s.FailureOnly {
		wantCatch = failed
	}
	if wantCatch == "" {
		if len(catches) != 0 {
			t.Errorf("%s: step %s catches %v", region, s.Name, catches)
		}
		return
	}
	want := fmt.Sprint([]any{map[string]any{"ErrorEquals": []any{"States.ALL"}, "Next": wantCatch, "ResultPath": "$." + workflow.ErrorKey}})
	if fmt.Sprint(catches) != want {
		t.Errorf("%s: step %s catches %v, want %s", region, s.Name, catches, want)
	}
}

// TestBuildFailuresAreCaught: every step of the build workflow that can
// fail is caught into a failure step, so no revision is left in a
// transitional status when a step gives up.
func TestBuildFailuresAreCaught(t *testing.T) {
	def := builds.Definition()
	handlers := map[string]bool{}
	for _, s := range def.Steps {
		if s.FailureOnly {
			handlers[s.Name] = true
			continue
		}
		if s.OnFailure == "" {
			t.Errorf("step %s has no failure step", s.Name)
		}
	}
	for _, s := range def.Steps {
		delete(handlers, s.OnFailure)
	}
	for h := range handlers {
		t.Errorf("failure step %s is the handler of no step", h)
	}
}
