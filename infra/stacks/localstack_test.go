package stacks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/infra/asl"
	"github.com/agentplane/agentplane/infra/stacks"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

const hooks = "../../localstack/init/ready.d/"

// TestMain lets the test binary stand in for `awslocal` when it is run
// under that name (a symlink the hook tests put first on PATH): it
// appends its arguments to $FAKE_AWSLOCAL_LOG and answers like LocalStack
// with nothing created yet.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "awslocal" {
		os.Exit(fakeAWSLocal(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeAWSLocal(args []string) int {
	f, err := os.OpenFile(os.Getenv("FAKE_AWSLOCAL_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	raw, _ := json.Marshal(args)
	_, _ = f.Write(append(raw, '\n'))
	_ = f.Close()
	arg := func(name string) string {
		if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	switch strings.Join(args[:min(2, len(args))], " ") {
	case "dynamodb describe-table", "s3api head-bucket", "kms describe-key", "iam get-role",
		"lambda get-function", "stepfunctions describe-state-machine":
		return 254 // not found
	case "sqs create-queue":
		fmt.Println("http://localhost.localstack.cloud:4566/000000000000/" + arg("--queue-name"))
	case "sqs get-queue-attributes":
		fmt.Println("arn:aws:sqs:us-east-1:000000000000:" + filepath.Base(arg("--queue-url")))
	case "kms create-key":
		fmt.Println("0f0e0d0c-0000-0000-0000-000000000000")
	case "lambda list-event-source-mappings":
		fmt.Println("None")
	case "events put-rule":
		fmt.Println("arn:aws:events:us-east-1:000000000000:rule/" + arg("--name"))
	}
	return 0
}

// TestLocalStackHookMatchesTheSchema keeps the LocalStack ready hook in
// step with the table the stack defines: the same secondary indexes (named
// as shared/kernel/store names them), the same TTL attribute, the same
// redrive count.
func TestLocalStackHookMatchesTheSchema(t *testing.T) {
	raw, err := os.ReadFile(hooks + "10-agentplane.sh")
	if err != nil {
		t.Fatal(err)
	}
	hook := string(raw)
	m := regexp.MustCompile(`(?m)^INDEXES="([^"]*)"$`).FindStringSubmatch(hook)
	if m == nil {
		t.Fatal(`the hook has no INDEXES="..." line`)
	}
	if got, want := m[1], strings.Join(store.IndexNames, " "); got != want {
		t.Errorf("hook indexes %q, shared/kernel/store.IndexNames %q", got, want)
	}
	for _, ix := range store.IndexNames {
		if store.IndexPKAttr(ix) != ix+"pk" || store.IndexSKAttr(ix) != ix+"sk" {
			t.Errorf("index %s keys are %s/%s; the hook writes ${ix}pk/${ix}sk", ix, store.IndexPKAttr(ix), store.IndexSKAttr(ix))
		}
	}
	for _, want := range []string{
		`"AttributeName":"` + store.AttrPK + `","KeyType":"HASH"`,
		`"AttributeName":"` + store.AttrSK + `","KeyType":"RANGE"`,
		"AttributeName=" + store.AttrTTL,
		"--billing-mode PAY_PER_REQUEST",
		`\"ProjectionType\":\"ALL\"`, // escaped inside the shell string
		"MAX_RECEIVES=" + strconv.Itoa(stacks.MaxReceives) + "\n",
	} {
		if !strings.Contains(hook, want) {
			t.Errorf("the hook lacks %s", want)
		}
	}
}

// hookRun runs the ready hooks with the fake awslocal over the product's
// layout and the ASL of the US stack, and returns every awslocal call.
func hookRun(t *testing.T) (*stacks.Layout, [][]string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed to run the LocalStack hooks")
		}
		t.Skip("no python3 (the hooks' JSON tool)")
	}
	r := app(t)[0]
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	dist := filepath.Join(dir, "dist")
	aslDir := filepath.Join(dir, "asl")
	for _, d := range []string{bin, dist, aslDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(bin, "awslocal")); err != nil {
		t.Fatal(err)
	}
	l := r.stack.Layout
	layout := filepath.Join(dir, "agentplane.layout.json")
	if err := l.WriteJSON(layout); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range l.Groups {
		names = append(names, g.Name)
	}
	if err := fixtureCode(dist, names); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(r.json)
	sms, err := asl.StateMachines(raw, r.awsRegion)
	if err != nil || len(sms) != len(l.Workflows) {
		t.Fatalf("%d state machines: %v", len(sms), err)
	}
	for i, w := range l.Workflows {
		def, _ := json.Marshal(sms[i].Definition)
		if err := os.WriteFile(filepath.Join(aslDir, "Test-US."+w.Definition.Name+".asl.json"), def, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logFile := filepath.Join(dir, "calls.jsonl")
	for _, hook := range []string{"10-agentplane.sh", "20-functions.sh"} {
		cmd := exec.Command("bash", hooks+hook)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FAKE_AWSLOCAL_LOG="+logFile,
			"AGENTPLANE_LAYOUT="+layout, "AGENTPLANE_DIST="+dist, "AGENTPLANE_ASL_DIR="+aslDir,
			"AGENTPLANE_LOCALSTACK_FUNCTIONS=1", "AWS_DEFAULT_REGION=us-east-1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", hook, err, out)
		}
	}
	raw, err = os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var c []string
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	return l, calls
}

func argOf(c []string, name string) string {
	if i := slices.Index(c, name); i >= 0 && i+1 < len(c) {
		return c[i+1]
	}
	return ""
}

func callsOf(calls [][]string, service, op string) [][]string {
	var out [][]string
	for _, c := range calls {
		if len(c) >= 2 && c[0] == service && c[1] == op {
			out = append(out, c)
		}
	}
	return out
}

// TestLocalStackHooksFollowTheLayout runs both hooks (with awslocal faked:
// there is no Docker here) and checks what they would create against the
// layout the stacks are built from: one queue and dead-letter queue per
// consuming group with the stack's visibility, one function per group with
// its timeout and exactly its configuration, a mapping per consumer, a
// schedule per sweeper, and each workflow's state machine invoking its
// runner's function.
func TestLocalStackHooksFollowTheLayout(t *testing.T) {
	l, calls := hookRun(t)

	queues := map[string]string{}
	for _, c := range callsOf(calls, "sqs", "create-queue") {
		queues[argOf(c, "--queue-name")] = argOf(c, "--attributes")
	}
	wantQueues := 0
	for _, g := range l.Groups {
		if !g.HasQueue() {
			continue
		}
		wantQueues += 2
		attrs, ok := queues["agentplane-"+g.Name]
		if _, dlq := queues["agentplane-"+g.Name+"-dlq"]; !ok || !dlq {
			t.Errorf("group %s: queues %v", g.Name, sortedKeys(queues))
			continue
		}
		var a map[string]string
		if err := json.Unmarshal([]byte(attrs), &a); err != nil {
			t.Fatalf("%s attributes %s: %v", g.Name, attrs, err)
		}
		if a["VisibilityTimeout"] != strconv.Itoa(g.VisibilitySeconds) || !strings.Contains(a["RedrivePolicy"], `"maxReceiveCount":"5"`) ||
			!strings.Contains(a["RedrivePolicy"], "agentplane-"+g.Name+"-dlq") {
			t.Errorf("group %s: queue attributes %v", g.Name, a)
		}
	}
	if len(queues) != wantQueues {
		t.Errorf("queues %v", sortedKeys(queues))
	}

	fns := map[string][]string{}
	for _, c := range callsOf(calls, "lambda", "create-function") {
		fns[argOf(c, "--function-name")] = c
	}
	if len(fns) != len(l.Groups) {
		t.Errorf("functions %v", sortedKeys(fns))
	}
	mappings := map[string]string{}
	for _, c := range callsOf(calls, "lambda", "create-event-source-mapping") {
		mappings[argOf(c, "--function-name")] = argOf(c, "--event-source-arn")
		if argOf(c, "--function-response-types") != "ReportBatchItemFailures" {
			t.Errorf("mapping %v", c)
		}
	}
	rules := map[string]bool{}
	for _, c := range callsOf(calls, "events", "put-targets") {
		rules[argOf(c, "--rule")] = true
		if !strings.Contains(argOf(c, "--targets"), `"MaximumRetryAttempts":0`) {
			t.Errorf("targets %v", c)
		}
	}
	for _, g := range l.Groups {
		name := "agentplane-" + g.Name
		c, ok := fns[name]
		if !ok {
			continue
		}
		if argOf(c, "--timeout") != strconv.Itoa(g.TimeoutSeconds) || argOf(c, "--runtime") != "provided.al2023" {
			t.Errorf("%s: %v", name, c)
		}
		var env struct{ Variables map[string]string }
		if err := json.Unmarshal([]byte(argOf(c, "--environment")), &env); err != nil {
			t.Fatalf("%s environment: %v", name, err)
		}
		var topics map[string]string
		if v := env.Variables["AGENTPLANE_TOPICS"]; v != "" {
			if err := json.Unmarshal([]byte(v), &topics); err != nil {
				t.Errorf("%s topics %s: %v", name, v, err)
			}
		}
		var got []string
		for topic, url := range topics {
			got = append(got, topic)
			if !strings.HasSuffix(url, "/000000000000/agentplane-"+l.Consumers[topic]) {
				t.Errorf("%s: topic %s goes to %s", name, topic, url)
			}
		}
		want := slices.Clone(g.Publishes)
		sort.Strings(got)
		sort.Strings(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: topics %v, publishes %v", name, got, want)
		}
		if (env.Variables["AGENTPLANE_KMS_KEY_ID"] != "") != g.Uses.Secrets ||
			(env.Variables["AGENTPLANE_STATE_MACHINES"] != "") != (len(g.Uses.StartsWorkflows) > 0) ||
			(env.Variables["AGENTPLANE_BUCKET"] != "") != g.Uses.Blobs ||
			(env.Variables["AGENTPLANE_TABLE"] != "") != g.Store ||
			(env.Variables["AGENTPLANE_MCP_ENDPOINT"] != "") != !g.Store ||
			env.Variables["AGENTPLANE_MODE"] != "aws" || env.Variables["AGENTPLANE_QUEUE_URL"] != "" {
			t.Errorf("%s: environment %v", name, env.Variables)
		}
		if arn, ok := mappings[name]; ok != g.HasQueue() || (ok && !strings.HasSuffix(arn, ":agentplane-"+g.Name)) {
			t.Errorf("%s: mapping %q", name, arn)
		}
		if rules["agentplane-sweep-"+g.Name] != g.Sweeps {
			t.Errorf("%s: schedule %v", name, rules)
		}
	}
	if len(mappings) != wantQueues/2 {
		t.Errorf("mappings %v", mappings)
	}

	machines := callsOf(calls, "stepfunctions", "create-state-machine")
	if len(machines) != len(l.Workflows) {
		t.Fatalf("state machines %v", machines)
	}
	for i, w := range l.Workflows {
		c := machines[i]
		if argOf(c, "--name") != "agentplane-"+w.Definition.Name {
			t.Errorf("state machine %v", c)
		}
		def := argOf(c, "--definition")
		if strings.Contains(def, "codebuild") || !strings.Contains(def, `"FunctionName": "arn:aws:lambda:us-east-1:000000000000:function:agentplane-`+w.Group+`"`) {
			t.Errorf("state machine %s: %s", w.Definition.Name, def)
		}
		var d struct{ States map[string]map[string]any }
		if err := json.Unmarshal([]byte(def), &d); err != nil {
			t.Fatal(err)
		}
		for name, st := range d.States {
			if st["Type"] == "Task" && !strings.Contains(fmt.Sprint(st["Parameters"]), "agentplane-"+w.Group) {
				t.Errorf("state machine %s: task %s: %v", w.Definition.Name, name, st)
			}
		}
	}
}

// The SAM environment files name the LocalStack resources of the hooks:
// AGENTPLANE_TOPICS with every consumed topic on its group's queue, and
// every workflow's state machine.
func TestSAMEnvironment(t *testing.T) {
	l, err := stacks.CatalogLayout()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../../localstack/sam-env.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Parameters map[string]string }
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var topics, machines map[string]string
	if err := json.Unmarshal([]byte(f.Parameters["AGENTPLANE_TOPICS"]), &topics); err != nil {
		t.Fatalf("AGENTPLANE_TOPICS: %v", err)
	}
	if err := json.Unmarshal([]byte(f.Parameters["AGENTPLANE_STATE_MACHINES"]), &machines); err != nil {
		t.Fatalf("AGENTPLANE_STATE_MACHINES: %v", err)
	}
	want := map[string]string{}
	for topic, g := range l.Consumers {
		want[topic] = "http://agentplane-localstack:4566/000000000000/agentplane-" + g
	}
	if fmt.Sprint(topics) != fmt.Sprint(want) {
		t.Errorf("sam-env.json AGENTPLANE_TOPICS %v, want %v", topics, want)
	}
	for _, w := range l.Workflows {
		if machines[w.Definition.Name] != "arn:aws:states:us-east-1:000000000000:stateMachine:agentplane-"+w.Definition.Name {
			t.Errorf("sam-env.json AGENTPLANE_STATE_MACHINES %v", machines)
		}
	}
	if _, old := f.Parameters["AGENTPLANE_QUEUE_URL"]; old {
		t.Error("sam-env.json still sets AGENTPLANE_QUEUE_URL")
	}
	// SAM cannot resolve CloudFormation values (references, joins, dynamic
	// references): every such variable of the US template has a value here.
	r := app(t)[0]
	for _, g := range r.stack.Layout.Groups {
		id := fnID(r, g.Name)
		vars := r.resources("AWS::Lambda::Function")[id]["Environment"].(map[string]any)
		for k, v := range vars["Variables"].(map[string]any) {
			str, literal := v.(string)
			if (!literal || strings.HasPrefix(str, "{{resolve:")) && f.Parameters[k] == "" {
				t.Errorf("sam-env.json has no value for %s (function %s: %s)", k, id, flat(v))
			}
		}
	}
	readme, err := os.ReadFile("../../localstack/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range l.Groups {
		if !strings.Contains(string(readme), "agentplane-"+g.Name) {
			t.Errorf("localstack/README.md does not mention agentplane-%s", g.Name)
		}
	}
}
