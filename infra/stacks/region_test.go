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
	"github.com/aws/jsii-runtime-go"

	"github.com/agentplane/agentplane/infra/asl"
	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/routes"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// region is one synthesized region stack of the app under test.
type region struct {
	name, awsRegion string
	stack           *stacks.RegionStack
	tpl             assertions.Template
	json            map[string]any
}

var (
	appOnce sync.Once
	regions []*region
	appErr  error
	fns     []string
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

// app defines both region stacks once (every stack must exist before the
// first template is taken) and templates them.
func app(t *testing.T) []*region {
	t.Helper()
	appOnce.Do(func() {
		appErr = func() error {
			var err error
			if fns, err = stacks.FunctionNames("../../functions"); err != nil {
				return err
			}
			code, err := os.MkdirTemp("", "infra-code-")
			if err != nil {
				return err
			}
			if err := fixtureCode(code, fns); err != nil {
				return err
			}
			a := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
				"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": true,
			}})
			for _, r := range []*region{{name: "us", awsRegion: "us-east-1"}, {name: "eu", awsRegion: "eu-west-1"}} {
				r.stack, err = stacks.NewRegionStack(a, "Test-"+strings.ToUpper(r.name), &stacks.RegionStackProps{
					StackProps: awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String(r.awsRegion)}},
					RegionName: r.name,
					Functions:  fns,
					CodeDir:    code,
					Groups:     routes.Groups(),
					Workflows:  []workflow.Definition{builds.Definition()},
				})
				if err != nil {
					return err
				}
				regions = append(regions, r)
			}
			for _, r := range regions {
				r.tpl = assertions.Template_FromStack(r.stack.Stack, nil)
				raw, _ := json.Marshal(r.tpl.ToJSON())
				if err := json.Unmarshal(raw, &r.json); err != nil {
					return err
				}
			}
			return nil
		}()
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

func TestBucketsKeyAndQueues(t *testing.T) {
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

		queues := r.resources("AWS::SQS::Queue")
		if len(queues) != 2 {
			t.Fatalf("%s: %d queues", r.name, len(queues))
		}
		var dlq string
		for id, p := range queues {
			if p["RedrivePolicy"] == nil {
				dlq = id
			}
			if p["SqsManagedSseEnabled"] != true {
				t.Errorf("%s: queue %s is not encrypted", r.name, id)
			}
		}
		must(t, r.name+" build queue redrive", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
				"RedrivePolicy": map[string]any{
					"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{dlq, "Arn"}},
					"maxReceiveCount":     5,
				},
			})
		})
		must(t, r.name+" queues deny plain HTTP", func() {
			r.tpl.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
				"PolicyDocument": assertions.Match_ObjectLike(&map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}),
				})}),
			}, jsii.Number(2))
		})
		worker := fnID(r, stacks.FnBuildWorker)
		must(t, r.name+" build-worker subscribed with partial batch failures", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
				"FunctionName":          map[string]any{"Ref": worker},
				"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
			})
		})
		must(t, r.name+" sweeper schedule", func() {
			r.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
				"ScheduleExpression": "rate(1 minute)",
				"Targets": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
					"Arn": map[string]any{"Fn::GetAtt": []any{fnID(r, stacks.FnSweeper), "Arn"}},
				})}),
			})
		})
	}
}

// fnID is the logical id of a function of r.
func fnID(r *region, name string) string {
	fn, ok := r.stack.Functions[name]
	if !ok {
		return "missing-function-" + name
	}
	return *r.stack.GetLogicalId(fn.Node().DefaultChild().(awscdk.CfnElement))
}

func TestFunctions(t *testing.T) {
	for _, r := range app(t) {
		lambdas := r.resources("AWS::Lambda::Function")
		if len(lambdas) != len(fns) {
			t.Errorf("%s: %d functions for %d functions/ directories", r.name, len(lambdas), len(fns))
		}
		for _, name := range fns {
			id := fnID(r, name)
			p, ok := lambdas[id]
			if !ok {
				t.Errorf("%s: no function for functions/%s", r.name, name)
				continue
			}
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || fmt.Sprint(p["Architectures"]) != "[arm64]" {
				t.Errorf("%s %s: runtime %v, handler %v, architectures %v", r.name, name, p["Runtime"], p["Handler"], p["Architectures"])
			}
			if fmt.Sprint(p["TracingConfig"]) != "map[Mode:Active]" {
				t.Errorf("%s %s: tracing %v", r.name, name, p["TracingConfig"])
			}
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for _, k := range []string{"AGENTPLANE_TABLE", "AGENTPLANE_BUCKET", "AGENTPLANE_QUEUE_URL", "AGENTPLANE_KMS_KEY_ID", "AGENTPLANE_STATE_MACHINES", "AGENTPLANE_BASE_URL"} {
				if env[k] == nil {
					t.Errorf("%s %s: %s not set", r.name, name, k)
				}
			}
			if env["AGENTPLANE_MODE"] != "aws" || env["AGENTPLANE_REGION_NAME"] != r.name {
				t.Errorf("%s %s: mode %v, region name %v", r.name, name, env["AGENTPLANE_MODE"], env["AGENTPLANE_REGION_NAME"])
			}
			if !strings.Contains(fmt.Sprint(env["AGENTPLANE_STATE_MACHINES"]), `stateMachine:Test-`+strings.ToUpper(r.name)+`-build`) {
				t.Errorf("%s %s: AGENTPLANE_STATE_MACHINES %v", r.name, name, env["AGENTPLANE_STATE_MACHINES"])
			}
		}
	}
}

// apiRoutes reconstructs every "METHOD /path" of the template's REST API
// and the function each method invokes.
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
		uri, _ := json.Marshal(m["Integration"].(map[string]any)["Uri"])
		target := ""
		for _, name := range fns {
			if strings.Contains(string(uri), `"`+fnID(r, name)+`"`) {
				target = name
			}
		}
		if typ := m["Integration"].(map[string]any)["Type"]; typ != "AWS_PROXY" {
			t.Errorf("%s %s %s: integration %v", r.name, m["HttpMethod"], path, typ)
		}
		out[m["HttpMethod"].(string)+" "+path] = target
	}
	return out
}

func TestEveryRouteIsAMethod(t *testing.T) {
	want := map[string]string{}
	for _, g := range routes.Groups() {
		for _, rt := range g.Routes {
			want[rt.Method+" "+stacks.APIPath(rt.Path)] = g.Name
		}
	}
	// The route groups the product serves; a group dropped from the table
	// (or renamed) must not silently drop its methods from the API.
	perGroup := map[string]int{}
	for _, group := range want {
		perGroup[group]++
	}
	for _, g := range []string{"platform", "orgaccess", "scim", "controlplane", "threads"} {
		if perGroup[g] == 0 {
			t.Errorf("route group %s has no routes in shared/routes", g)
		}
	}
	for _, r := range app(t) {
		got := apiRoutes(t, r)
		served := map[string]int{}
		for _, fn := range got {
			served[fn]++
		}
		for g, n := range perGroup {
			if served[g] != n {
				t.Errorf("%s: the %s function serves %d methods, want %d", r.name, g, served[g], n)
			}
		}
		for route, group := range want {
			if fn, ok := got[route]; !ok {
				t.Errorf("%s: route %s is not on the API", r.name, route)
			} else if fn != group {
				t.Errorf("%s: route %s invokes %q, want the %s function", r.name, route, fn, group)
			}
		}
		for route := range got {
			if _, ok := want[route]; !ok {
				t.Errorf("%s: API method %s is in no route group", r.name, route)
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
		// One invoke permission per route group, not per method.
		if n := len(r.resources("AWS::Lambda::Permission")); n > len(routes.Groups())+1 {
			t.Errorf("%s: %d Lambda permissions for %d route groups", r.name, n, len(routes.Groups()))
		}
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
		var got []string
		for n := range states {
			got = append(got, n)
		}
		sort.Strings(want)
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
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
			} else if fn := st["Parameters"].(map[string]any)["FunctionName"]; !strings.HasSuffix(fmt.Sprint(fn), ":function:"+fnID(r, stacks.FnBuildStep)) {
				t.Errorf("%s: step %s invokes %v", r.name, s.Name, fn)
			}
			checkFlow(t, r.name, def, s, st)
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

func TestNewRegionStackRejects(t *testing.T) {
	code := t.TempDir()
	all := []string{"platform", stacks.FnBuildWorker, stacks.FnBuildStep, stacks.FnSweeper}
	if err := fixtureCode(code, append(all, "stray")); err != nil {
		t.Fatal(err)
	}
	groups := []routes.Group{{Name: "platform", Routes: []routes.Route{{Method: "GET", Path: "/health"}}}}
	for name, props := range map[string]*stacks.RegionStackProps{
		"bad region name":        {RegionName: "ap", Functions: all, CodeDir: code, Groups: groups},
		"group without function": {RegionName: "us", Functions: all[1:], CodeDir: code, Groups: groups},
		"stray function":         {RegionName: "us", Functions: append(all, "stray"), CodeDir: code, Groups: groups},
		"no build-step":          {RegionName: "us", Functions: all[:2], CodeDir: code, Groups: groups},
		"missing zip":            {RegionName: "us", Functions: all, CodeDir: t.TempDir(), Groups: groups},
		"conflicting routes": {RegionName: "us", Functions: all, CodeDir: code, Groups: []routes.Group{
			{Name: "platform", Routes: []routes.Route{{Method: "GET", Path: "/x/{a}"}, {Method: "GET", Path: "/x/{b}/y"}}}}},
		"bad workflow": {RegionName: "us", Functions: all, CodeDir: code, Groups: groups, Workflows: []workflow.Definition{
			{Name: "w", Steps: []workflow.Step{{Name: "a", OnFailure: "nope"}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			a := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
				"@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": true,
			}})
			if _, err := stacks.NewRegionStack(a, "Bad", props); err == nil {
				t.Error("no error")
			}
		})
	}
}
