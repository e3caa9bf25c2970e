package sfnstart_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
)

const machineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:agentplane-build"

// fakeSFN answers StartExecution over the AWS JSON 1.0 protocol the way the
// service does: a new name starts an execution; a name already used with
// the same input returns the same execution (idempotent), with another
// input ExecutionAlreadyExists.
type fakeSFN struct {
	t     *testing.T
	mu    sync.Mutex
	execs map[string]string // name → input
	calls int
}

func (f *fakeSFN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.states#%s","message":%q}`, typ, msg)
	}
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		f.t.Errorf("request %s %s", r.Method, r.URL.Path)
	case r.Header.Get("X-Amz-Target") != "AWSStepFunctions.StartExecution":
		f.t.Errorf("X-Amz-Target = %q", r.Header.Get("X-Amz-Target"))
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.0":
		f.t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
	case !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") ||
		!strings.Contains(r.Header.Get("Authorization"), "/us-east-1/states/aws4_request"):
		f.t.Errorf("Authorization = %q (want a SigV4 signature for states)", r.Header.Get("Authorization"))
	}
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		Name            string `json:"name"`
		Input           string `json:"input"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &in); err != nil {
		fail(400, "SerializationException", err.Error())
		return
	}
	if in.StateMachineArn != machineARN {
		fail(400, "StateMachineDoesNotExist", "State Machine Does Not Exist: '"+in.StateMachineArn+"'")
		return
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`).MatchString(in.Name) {
		fail(400, "InvalidName", "Invalid Name: '"+in.Name+"'")
		return
	}
	if !json.Valid([]byte(in.Input)) {
		fail(400, "InvalidExecutionInput", "Invalid State Machine Execution Input")
		return
	}
	arn := strings.Replace(machineARN, ":stateMachine:", ":execution:", 1) + ":" + in.Name
	if old, ok := f.execs[in.Name]; ok && old != in.Input {
		fail(400, "ExecutionAlreadyExists", "Execution Already Exists: '"+arn+"'")
		return
	}
	f.execs[in.Name] = in.Input
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fmt.Fprintf(w, `{"executionArn":%q,"startDate":1.7634e9}`, arn)
}

func newStarter(t *testing.T, arns map[string]string) (*sfnstart.Starter, *fakeSFN) {
	fake := &fakeSFN{t: t, execs: map[string]string{}}
	srv := httptest.NewServer(fake) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	client := sfnstart.NewClient(aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
	}, srv.URL)
	return sfnstart.New(client, arns), fake
}

func TestStartExecution(t *testing.T) {
	s, fake := newStarter(t, map[string]string{"build": machineARN, "gone": machineARN + "-deleted"})
	ctx := context.Background()
	in := workflow.State{"revision_id": "r1", "n": 2}
	if err := s.Start(ctx, "build", "rev-r1", in); err != nil {
		t.Fatal(err)
	}
	if got := fake.execs["rev-r1"]; got != `{"n":2,"revision_id":"r1"}` {
		t.Errorf("input sent %q", got)
	}
	// Idempotent: the same id again, with the same or another input.
	if err := s.Start(ctx, "build", "rev-r1", in); err != nil {
		t.Errorf("same start again: %v", err)
	}
	if err := s.Start(ctx, "build", "rev-r1", workflow.State{"other": true}); err != nil {
		t.Errorf("ExecutionAlreadyExists must count as started: %v", err)
	}
	if len(fake.execs) != 1 {
		t.Errorf("executions %v", fake.execs)
	}
	// An id Step Functions cannot take as a name is mapped to one it can.
	if err := s.Start(ctx, "build", "deployments/7f3a:rev#1", nil); err != nil {
		t.Fatal(err)
	}
	name, _ := sfnstart.ExecutionName("deployments/7f3a:rev#1")
	if fake.execs[name] != "{}" {
		t.Errorf("execution %q not started with {} input: %v", name, fake.execs)
	}

	// Service errors surface.
	if err := s.Start(ctx, "gone", "x", nil); err == nil || !strings.Contains(err.Error(), "StateMachineDoesNotExist") {
		t.Errorf("missing state machine: %v", err)
	}
	calls := fake.calls
	// Bad requests are refused before any call.
	for name, err := range map[string]error{
		"unknown workflow": s.Start(ctx, "nope", "x", nil),
		"empty id":         s.Start(ctx, "build", "", nil),
		"not json":         s.Start(ctx, "build", "x", workflow.State{"f": func() {}}),
		"too large":        s.Start(ctx, "build", "x", workflow.State{"s": strings.Repeat("a", sfnstart.MaxInputSize)}),
	} {
		want := workflow.ErrInvalid
		if name == "unknown workflow" {
			want = workflow.ErrUnknown
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	if fake.calls != calls {
		t.Errorf("invalid starts reached the service")
	}
}

func TestExecutionName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	for _, id := range []string{"rev-1", "A_b-9", strings.Repeat("x", 80)} {
		if got, err := sfnstart.ExecutionName(id); err != nil || got != id {
			t.Errorf("valid id %q became %q, %v", id, got, err)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"a/b", "a:b", "a b", "é", strings.Repeat("x", 81), strings.Repeat("x", 82), strings.Repeat("y", 300) + "/", "a/b/"} {
		got, err := sfnstart.ExecutionName(id)
		if err != nil || !valid.MatchString(got) {
			t.Errorf("%q → %q, %v", id, got, err)
		}
		if again, _ := sfnstart.ExecutionName(id); again != got {
			t.Errorf("%q maps to %q then %q", id, got, again)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q both map to %q", prev, id, got)
		}
		seen[got] = id
	}
	if _, err := sfnstart.ExecutionName(""); !errors.Is(err, workflow.ErrInvalid) {
		t.Errorf("empty id: %v", err)
	}
}

var def = workflow.Definition{Name: "build", Steps: []workflow.Step{
	{Name: "compile", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
		switch in["mode"] {
		case "flaky":
			return nil, fmt.Errorf("registry: %w", workflow.ErrTransient)
		case "broken":
			return nil, errors.New("syntax error")
		case "panic":
			_ = in["missing"].(string) // a failed type assertion panics
		case "huge":
			return workflow.State{"s": strings.Repeat("a", sfnstart.MaxInputSize)}, nil
		}
		in["image"] = "img:" + in["rev"].(string)
		return in, nil
	}},
}}

// errorType is what aws-lambda-go reports as a returned error's errorType
// (lambda/errors.go: the type name without package or pointer), which Step
// Functions uses as the error name.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func TestDispatch(t *testing.T) {
	ctx := context.Background()
	out, err := sfnstart.Dispatch(ctx, def, []byte(`{"step":"compile","state":{"rev":"r1","n":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"image":"img:r1","n":1,"rev":"r1"}` {
		t.Errorf("new state %s", out)
	}
	// The optional workflow field must match.
	if _, err := sfnstart.Dispatch(ctx, def, []byte(`{"workflow":"build","step":"compile","state":{"rev":"r"}}`)); err != nil {
		t.Error(err)
	}

	for _, c := range []struct {
		payload, errType, msg string
	}{
		{`{"step":"compile","state":{"mode":"flaky"}}`, workflow.TransientErrorName, "registry: transient"},
		{`{"step":"compile","state":{"mode":"broken"}}`, workflow.FailedErrorName, "syntax error"},
		{`{"step":"compile","state":{"mode":"panic"}}`, workflow.FailedErrorName, "panicked"},
		{`{"step":"compile","state":{"mode":"huge"}}`, workflow.FailedErrorName, "the limit is"},
		{`{"step":"link","state":{}}`, workflow.FailedErrorName, `no step "link"`},
		{`{"workflow":"deploy","step":"compile","state":{}}`, workflow.FailedErrorName, "sent to"},
		{`{"step":"compile","state":[1]}`, workflow.FailedErrorName, "not a JSON object"},
		{`not json`, workflow.FailedErrorName, "step payload"},
	} {
		_, err := sfnstart.Dispatch(ctx, def, []byte(c.payload))
		if err == nil {
			t.Errorf("%s: no error", c.payload)
			continue
		}
		if got := errorType(err); got != c.errType || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: errorType %s, message %q; want %s containing %q", c.payload, got, err, c.errType, c.msg)
		}
	}
	var tr *sfnstart.Transient
	_, err = sfnstart.Dispatch(ctx, def, []byte(`{"step":"compile","state":{"mode":"flaky"}}`))
	if !errors.As(err, &tr) || !errors.Is(err, workflow.ErrTransient) {
		t.Errorf("transient error %v does not unwrap", err)
	}
}
