package stacks_test

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// region is one synthesized region stack of an app under test.
type region struct {
	name, awsRegion string
	stack           *stacks.RegionStack
	tpl             assertions.Template
	json            map[string]any
}

const account = "123456789012"

var (
	appOnce sync.Once
	regions []*region
	appErr  error
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

// synth defines one stack per region name of layout in a new app, then
// templates them (every stack must exist before the first template).
func synth(layout *stacks.Layout, prefix string, names ...string) ([]*region, error) {
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
	a, err := newApp()
	if err != nil {
		return nil, err
	}
	awsRegions := map[string]string{"us": "us-east-1", "eu": "eu-west-1"}
	var out []*region
	for _, n := range names {
		r := &region{name: n, awsRegion: awsRegions[n]}
		r.stack, err = stacks.NewRegionStack(a, prefix+"-"+strings.ToUpper(n), &stacks.RegionStackProps{
			StackProps: awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(r.awsRegion)}},
			RegionName: n,
			Layout:     layout,
			CodeDir:    code,
		})
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
	}
	return out, nil
}

// app is the product's catalog in both regions, synthesized once.
func app(t *testing.T) []*region {
	t.Helper()
	appOnce.Do(func() {
		layout, err := stacks.CatalogLayout()
		if err != nil {
			appErr = err
			return
		}
		regions, appErr = synth(layout, "Test", "us", "eu")
	})
	if appErr != nil {
		t.Fatal(appErr)
	}
	return regions
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
	el, ok := c.Node().DefaultChild().(awscdk.CfnElement)
	if !ok {
		el = c.(awscdk.CfnElement)
	}
	return *r.stack.GetLogicalId(el)
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
// allow (the template's AWS::IAM::Policy resources attached to it).
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
			if st["Effect"] != "Allow" || st["NotAction"] != nil || st["NotResource"] != nil || st["Condition"] != nil {
				t.Errorf("%s: policy %s has a statement this test does not read: %v", r.name, pid, st)
				continue
			}
			for _, a := range list(st["Action"]) {
				for _, res := range list(st["Resource"]) {
					out[flat(a)+" "+flat(res)] = true
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
			r.tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(2))
			r.tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
				"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
					map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}}}},
				"PublicAccessBlockConfiguration": map[string]any{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
				"VersioningConfiguration": map[string]any{"Status": "Enabled"},
				"LoggingConfiguration":    assertions.Match_ObjectLike(&map[string]any{"LogFilePrefix": "blobs/"}),
			})
		})
		must(t, r.name+" both buckets deny plain HTTP", func() {
			r.tpl.ResourcePropertiesCountIs(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
				"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}),
				})}),
			}, jsii.Number(2))
		})
		must(t, r.name+" secrets key", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{"EnableKeyRotation": true})
		})
	}
}

// The product's groups: the catalog the stacks are generated from must
// keep them (a group dropped or renamed would silently drop its function).
func TestCatalogGroups(t *testing.T) {
	want := map[string]bool{"platform": true, "controlplane": true, "build": true, "threads": true, "orgaccess": true, "scim": true}
	for _, g := range catalog.Groups() {
		delete(want, g.Name)
	}
	for g := range want {
		t.Errorf("group %s is not in the catalog", g)
	}
}

func TestQueues(t *testing.T)              { checkAll(t, app(t), checkQueues) }
func TestSchedules(t *testing.T)           { checkAll(t, app(t), checkSchedules) }
func TestFunctions(t *testing.T)           { checkAll(t, app(t), checkFunctions) }
func TestFunctionIAM(t *testing.T)         { checkAll(t, app(t), checkFunctionIAM) }
func TestWorkflowIAM(t *testing.T)         { checkAll(t, app(t), checkWorkflowIAM) }
func TestEveryRouteIsAMethod(t *testing.T) { checkAll(t, app(t), checkRoutes) }

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

// checkFunctions: one function per group on provided.al2023/arm64 with
// tracing, and the configuration shared/compose/config.go reads: the base
// variables for all, AGENTPLANE_TOPICS with exactly the published topics
// (each to its consumer's queue), the key only with secrets, and only the
// started state machines.
func checkFunctions(t *testing.T, r *region) {
	l := r.stack.Layout
	lambdas := r.resources("AWS::Lambda::Function")
	if len(lambdas) != len(l.Groups) {
		t.Errorf("%s: %d functions for %d groups", r.name, len(lambdas), len(l.Groups))
	}
	machines := map[string]string{}
	for wf, sm := range r.stack.StateMachines {
		name := r.resources("AWS::StepFunctions::StateMachine")[r.id(sm)]["StateMachineName"]
		machines[wf] = fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", r.awsRegion, account, name)
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
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		want := []string{"AGENTPLANE_BASE_URL", "AGENTPLANE_BUCKET", "AGENTPLANE_LOG_LEVEL", "AGENTPLANE_MODE", "AGENTPLANE_REGION_NAME", "AGENTPLANE_TABLE"}
		if len(g.Publishes) > 0 {
			want = append(want, "AGENTPLANE_TOPICS")
		}
		if g.Uses.Secrets {
			want = append(want, "AGENTPLANE_KMS_KEY_ID")
		}
		if len(g.Uses.StartsWorkflows) > 0 {
			want = append(want, "AGENTPLANE_STATE_MACHINES")
		}
		sort.Strings(want)
		if got := sortedKeys(env); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s %s: environment %v, want %v", r.name, g.Name, got, want)
		}
		if env["AGENTPLANE_MODE"] != "aws" || env["AGENTPLANE_REGION_NAME"] != r.name {
			t.Errorf("%s %s: mode %v, region name %v", r.name, g.Name, env["AGENTPLANE_MODE"], env["AGENTPLANE_REGION_NAME"])
		}
		if flat(env["AGENTPLANE_TABLE"]) != "${"+r.id(r.stack.Table)+"}" || flat(env["AGENTPLANE_BUCKET"]) != "${"+r.id(r.stack.Bucket)+"}" {
			t.Errorf("%s %s: table %v, bucket %v", r.name, g.Name, env["AGENTPLANE_TABLE"], env["AGENTPLANE_BUCKET"])
		}
		if env["AGENTPLANE_KMS_KEY_ID"] != nil && flat(env["AGENTPLANE_KMS_KEY_ID"]) != "${"+r.id(r.stack.SecretsKey)+".Arn}" {
			t.Errorf("%s %s: key %v", r.name, g.Name, env["AGENTPLANE_KMS_KEY_ID"])
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

// dataGrants is what a group's declaration entitles its code to, as
// "action resource" pairs over the template's logical ids; written out
// here rather than taken from the stacks package, so a broadened grant
// fails.
func dataGrants(r *region, g stacks.GroupPlan) map[string]bool {
	out := map[string]bool{}
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
	return out
}

// checkFunctionIAM: each function's role allows exactly its own log
// group, X-Ray, receiving from its own queue, and dataGrants; nothing
// else (so a group without Uses.Blobs has no S3 statement at all, one
// without Uses.Secrets no KMS statement, and so on).
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
			if res == "*" && !strings.HasPrefix(k, "xray:") {
				t.Errorf("%s %s: %s on every resource", r.name, g.Name, k)
			}
		}
	}
}

// checkWorkflowIAM: a state machine invokes only its runner's function;
// a CodeBuild step's project has the runner group's data grants and no
// other access to the table, the blob bucket, the queues or the state
// machines.
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
		}
	}
}

// apiRoutes reconstructs every "METHOD /path" of the template's REST API
// and the group whose function each method invokes.
func apiRoutes(t *testing.T, r *region) map[string]string {
	t.Helper()
	res := r.resources("AWS::ApiGateway::Resource")
	apis := r.resources("AWS::ApiGateway::RestApi")
	if len(apis) != 1 {
		t.Fatalf("%s: %d REST APIs", r.name, len(apis))
	}
	var pathOf func(ref any) string
	pathOf = func(ref any) string {
		m := ref.(map[string]any)
		if ga, ok := m["Fn::GetAtt"]; ok && ga.([]any)[1] == "RootResourceId" {
			return ""
		}
		p := res[m["Ref"].(string)]
		return pathOf(p["ParentId"]) + "/" + p["PathPart"].(string)
	}
	out := map[string]string{}
	for _, m := range r.resources("AWS::ApiGateway::Method") {
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
		out[m["HttpMethod"].(string)+" "+path] = target
	}
	return out
}

// checkRoutes: every route of every group is a method invoking its
// group's function, and the API has no other method.
func checkRoutes(t *testing.T, r *region) {
	want := map[string]string{}
	for _, rt := range r.stack.Layout.Routes() {
		want[rt.Method+" "+stacks.APIPath(rt.Path)] = rt.Group
	}
	got := apiRoutes(t, r)
	for route, group := range want {
		if fn, ok := got[route]; !ok {
			t.Errorf("%s: route %s is not on the API", r.name, route)
		} else if fn != group {
			t.Errorf("%s: route %s invokes %q, want the %s function", r.name, route, fn, group)
		}
	}
	for route := range got {
		if _, ok := want[route]; !ok {
			t.Errorf("%s: API method %s is in no group", r.name, route)
		}
	}
	must(t, r.name+" stage", func() {
		r.tpl.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), map[string]any{
			"StageName":        stacks.StageName,
			"TracingEnabled":   true,
			"AccessLogSetting": assertions.Match_ObjectLike(&map[string]any{"DestinationArn": assertions.Match_AnyValue()}),
			"MethodSettings": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
				"LoggingLevel": "ERROR", "ThrottlingRateLimit": 1000, "ThrottlingBurstLimit": 2000})}),
		})
	})
	// One invoke permission per routed group (not per method) and one per
	// schedule.
	routed, sweeps := 0, 0
	for _, g := range r.stack.Layout.Groups {
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
			fnEnv := fn["Environment"].(map[string]any)["Variables"].(map[string]any)
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
