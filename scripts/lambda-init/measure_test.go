package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/compose/catalog"
)

// The test binary stands in for a function when LAMBDA_INIT_FAKE says how:
// "ready" sleeps 30 ms (its init), calls AWS once, then polls the Runtime
// API like aws-lambda-go; "fail" reports an init error; "exit" exits.
func TestMain(m *testing.M) {
	switch os.Getenv("LAMBDA_INIT_FAKE") {
	case "":
		os.Exit(m.Run())
	case "ready":
		time.Sleep(30 * time.Millisecond)
		if resp, err := http.Post(os.Getenv("AWS_ENDPOINT_URL"), "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
		}
		resp, err := http.Get("http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + runtimeNext)
		if err == nil {
			resp.Body.Close()
		}
		time.Sleep(time.Minute)
	case "fail":
		resp, err := http.Post("http://"+os.Getenv("AWS_LAMBDA_RUNTIME_API")+runtimeInitError, "application/json", strings.NewReader(`{"errorMessage":"bad config"}`))
		if err == nil {
			resp.Body.Close()
		}
		time.Sleep(time.Minute)
	case "exit":
		os.Exit(3)
	}
}

func fakeEnv(f *fakes, mode string) []string {
	return []string{"LAMBDA_INIT_FAKE=" + mode, "AWS_LAMBDA_RUNTIME_API=" + f.runtimeAddr, "AWS_ENDPOINT_URL=" + f.awsURL}
}

func TestRunOnce(t *testing.T) {
	f, err := startFakes()
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var runs []Run
	for i := 0; i < 3; i++ {
		r, err := f.runOnce(ctx, self, t.TempDir(), fakeEnv(f, "ready"), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.Init < 30*time.Millisecond || r.Init > 5*time.Second {
			t.Errorf("init %s for a 30 ms init", r.Init)
		}
		if r.CPU <= 0 || r.CPU > r.Init+time.Second {
			t.Errorf("CPU time %s for an init of %s", r.CPU, r.Init)
		}
		if len(r.Calls) != 1 || r.Calls[0] != "POST /" {
			t.Errorf("AWS calls %v", r.Calls)
		}
		runs = append(runs, r)
	}
	s, err := summarize(runs)
	if err != nil || s.Runs != 3 || s.Min > s.Median || s.Median > s.P90 || s.P90 > s.Max || len(s.Calls) != 1 {
		t.Errorf("stats %+v, %v", s, err)
	}

	if _, err := f.runOnce(ctx, self, t.TempDir(), fakeEnv(f, "fail"), 10*time.Second); err == nil || !strings.Contains(err.Error(), "bad config") {
		t.Errorf("init error: %v", err)
	}
	if _, err := f.runOnce(ctx, self, t.TempDir(), fakeEnv(f, "exit"), 10*time.Second); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("exit: %v", err)
	}
	start := time.Now()
	if _, err := f.runOnce(ctx, "/bin/sleep", t.TempDir(), []string{}, 200*time.Millisecond); err == nil {
		t.Error("a process that never polls is measured")
	} else if time.Since(start) > 5*time.Second {
		t.Errorf("timeout took %s", time.Since(start))
	}
}

func TestMedian(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, x := range n {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	if got := median(ms(1, 2, 9)); got != 2*time.Millisecond {
		t.Errorf("median %s", got)
	}
	if got := median(ms(1, 2, 4, 9)); got != 3*time.Millisecond {
		t.Errorf("median %s", got)
	}
}

// The environment is the stack's: every group gets the base variables, and
// AGENTPLANE_TOPICS, the key and the state machines exactly when it
// publishes, handles secrets or starts workflows; nothing of this process.
func TestEnvironment(t *testing.T) {
	f := &fakes{runtimeAddr: "127.0.0.1:1", awsURL: "http://127.0.0.1:2"}
	t.Setenv("LAMBDA_INIT_LEAK", "1")
	for _, g := range catalog.Groups() {
		env := map[string]string{}
		for _, kv := range environment(g, f, "/task", "/work") {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		if env["AGENTPLANE_MODE"] != "aws" || env["AWS_LAMBDA_RUNTIME_API"] != f.runtimeAddr || env["AWS_ENDPOINT_URL"] != f.awsURL || env["LAMBDA_INIT_LEAK"] != "" {
			t.Errorf("%s: %v", g.Name, env)
		}
		for k, on := range map[string]bool{
			"AGENTPLANE_TOPICS":         len(g.Publishes) > 0,
			"AGENTPLANE_KMS_KEY_ID":     g.Uses.Secrets,
			"AGENTPLANE_STATE_MACHINES": len(g.Uses.StartsWorkflows) > 0,
		} {
			if (env[k] != "") != on {
				t.Errorf("%s: %s = %q", g.Name, k, env[k])
			}
		}
		for _, topic := range g.Publishes {
			c, _ := catalog.Consumer(topic)
			if !strings.Contains(env["AGENTPLANE_TOPICS"], `"`+topic+`":"`+f.awsURL+"/000000000000/agentplane-"+c.Name+`"`) {
				t.Errorf("%s: topic %s in %s", g.Name, topic, env["AGENTPLANE_TOPICS"])
			}
		}
	}
}
