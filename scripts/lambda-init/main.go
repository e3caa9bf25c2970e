// Command lambda-init measures the cold init of every Lambda function: the
// time from exec of its bootstrap to its first request for an invocation
// (GET /2018-06-01/runtime/invocation/next), which is when Lambda counts
// the init phase as done.
//
// Each function under functions/ is built for this machine with the
// production flags (CGO off, -trimpath, -ldflags "-s -w", -tags
// lambda.norpc) and started, again and again, in the environment the CDK
// stack gives it (AGENTPLANE_MODE=aws, its table, bucket, topics, key and
// state machines from its group's declaration in the catalog; fake
// credentials), in an empty working folder, with nothing else of this
// process's environment. AWS_LAMBDA_RUNTIME_API points at a small local
// Runtime API on 127.0.0.1, and AWS_ENDPOINT_URL at a local endpoint that
// fails and records every AWS call, so nothing leaves the machine; a
// function that calls AWS during init is reported (it should not).
//
// Runs are interleaved across functions (run 1 of each, then run 2 ...)
// so that load from other processes spreads over all of them; the first
// round is a warm-up and is not counted. It prints, per function, the
// bootstrap size, the median, minimum, 90th percentile and maximum init
// time, and the median CPU time of a start (user and system, until the
// process is killed at its first poll: less sensitive to other load than
// the wall time), and exits 1 when a median is above -max or a run fails.
//
// Usage: go run ./scripts/lambda-init [-runs 21] [-max 50ms] [-json] [fn ...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/catalog"
)

func main() {
	runs := flag.Int("runs", 21, "measured starts per function (after one warm-up start)")
	maxInit := flag.Duration("max", 50*time.Millisecond, "fail when a function's median init is above this (0: report only)")
	asJSON := flag.Bool("json", false, "print the results as JSON")
	timeout := flag.Duration("timeout", 10*time.Second, "give up on a start after this long")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./scripts/lambda-init [flags] [function ...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	code, err := run(ctx, options{runs: *runs, max: *maxInit, json: *asJSON, timeout: *timeout, functions: flag.Args()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "lambda-init:", err)
	}
	os.Exit(code)
}

type options struct {
	runs      int
	max       time.Duration
	json      bool
	timeout   time.Duration
	functions []string
}

// Result is one function's measurement.
type Result struct {
	Function    string   `json:"function"`
	SizeBytes   int64    `json:"size_bytes"`
	Runs        int      `json:"runs"`
	MedianMS    float64  `json:"median_ms"`
	MinMS       float64  `json:"min_ms"`
	P90MS       float64  `json:"p90_ms"`
	MaxMS       float64  `json:"max_ms"`
	CPUMS       float64  `json:"median_cpu_ms"`
	AWSCalls    []string `json:"aws_calls_during_init"`
	Error       string   `json:"error,omitempty"`
	OverMaximum bool     `json:"over_maximum"`
}

func run(ctx context.Context, o options) (int, error) {
	if o.runs < 1 {
		return 2, fmt.Errorf("-runs must be at least 1")
	}
	root, err := repoRoot()
	if err != nil {
		return 2, err
	}
	fns := o.functions
	if len(fns) == 0 {
		if fns, err = functionDirs(filepath.Join(root, "functions")); err != nil {
			return 2, err
		}
	}
	work, err := os.MkdirTemp("", "lambda-init-")
	if err != nil {
		return 2, err
	}
	defer os.RemoveAll(work)
	bins := filepath.Join(work, "bin")
	if err := build(ctx, root, bins, fns); err != nil {
		return 2, err
	}
	f, err := startFakes()
	if err != nil {
		return 2, err
	}
	defer f.close()

	envs := map[string][]string{}
	for _, fn := range fns {
		g, ok := catalog.Lookup(fn)
		if !ok {
			return 2, fmt.Errorf("functions/%s is not a group of the catalog", fn)
		}
		task := filepath.Join(work, "task-"+fn)
		if err := os.MkdirAll(task, 0o700); err != nil {
			return 2, err
		}
		envs[fn] = environment(g, f, task, work)
	}

	measured := map[string][]Run{}
	failed := map[string]error{}
	for round := 0; round <= o.runs; round++ {
		for _, fn := range fns {
			if failed[fn] != nil {
				continue
			}
			r, err := f.runOnce(ctx, filepath.Join(bins, fn), filepath.Join(work, "task-"+fn), envs[fn], o.timeout)
			if ctx.Err() != nil {
				return 2, ctx.Err()
			}
			if err != nil {
				failed[fn] = err
				continue
			}
			if round > 0 { // round 0 warms the page cache
				measured[fn] = append(measured[fn], r)
			}
		}
	}

	code := 0
	var results []Result
	for _, fn := range fns {
		res := Result{Function: fn, AWSCalls: []string{}}
		if st, err := os.Stat(filepath.Join(bins, fn)); err == nil {
			res.SizeBytes = st.Size()
		}
		if err := failed[fn]; err != nil {
			res.Error = err.Error()
			code = 1
			results = append(results, res)
			continue
		}
		s, err := summarize(measured[fn])
		if err != nil {
			return 2, err
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		res.Runs, res.MedianMS, res.MinMS, res.P90MS, res.MaxMS, res.CPUMS = s.Runs, ms(s.Median), ms(s.Min), ms(s.P90), ms(s.Max), ms(s.MedianCPU)
		if len(s.Calls) > 0 {
			res.AWSCalls = s.Calls
		}
		if o.max > 0 && s.Median > o.max {
			res.OverMaximum = true
			code = 1
		}
		results = append(results, res)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return code, enc.Encode(results)
	}
	printTable(results, o, runtime.GOOS+"/"+runtime.GOARCH)
	return code, nil
}

func printTable(results []Result, o options, platform string) {
	fmt.Printf("cold init: exec to the first GET %s, %d runs each after a warm-up (%s build, %d CPUs)\n", runtimeNext, o.runs, platform, runtime.NumCPU())
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "function\tbootstrap MB\tmedian ms\tmin ms\tp90 ms\tmax ms\tCPU ms\tAWS calls in init\t")
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%.2f\tFAILED\t\t\t\t\t\t\n", r.Function, float64(r.SizeBytes)/1e6)
			continue
		}
		mark := ""
		if r.OverMaximum {
			mark = " > " + o.max.String()
		}
		calls := "none"
		if len(r.AWSCalls) > 0 {
			calls = strings.Join(r.AWSCalls, ", ")
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t\n", r.Function, float64(r.SizeBytes)/1e6, r.MedianMS, mark, r.MinMS, r.P90MS, r.MaxMS, r.CPUMS, calls)
	}
	_ = tw.Flush()
	for _, r := range results {
		if r.Error != "" {
			fmt.Printf("%s: %s\n", r.Function, r.Error)
		}
	}
}

// environment is what the region stack gives the group's function
// (infra/stacks: the configuration of shared/compose/config.go), with
// local stand-ins for the resources, plus what Lambda itself sets.
func environment(g compose.Group, f *fakes, task, work string) []string {
	const region, acct = "us-east-1", "000000000000"
	env := map[string]string{
		"AGENTPLANE_MODE":        "aws",
		"AGENTPLANE_REGION_NAME": "us",
		"AGENTPLANE_TABLE":       "agentplane",
		"AGENTPLANE_BUCKET":      "agentplane-blobs",
		"AGENTPLANE_BASE_URL":    "https://api.agentplane.invalid/prod",
		"AGENTPLANE_LOG_LEVEL":   "info",

		"AWS_LAMBDA_RUNTIME_API":          f.runtimeAddr,
		"AWS_LAMBDA_FUNCTION_NAME":        "agentplane-" + g.Name,
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/agentplane-" + g.Name,
		"AWS_LAMBDA_LOG_FORMAT":           "JSON",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                task,
		"AWS_EXECUTION_ENV":               "AWS_Lambda_provided.al2023",
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            "/usr/local/bin:/usr/bin:/bin",
		// Lambda hands the role's session credentials in the environment.
		"AWS_REGION":            region,
		"AWS_DEFAULT_REGION":    region,
		"AWS_ACCESS_KEY_ID":     "ASIALAMBDAINITFAKE00",
		"AWS_SECRET_ACCESS_KEY": "lambda-init-fake-secret-access-key-000000",
		"AWS_SESSION_TOKEN":     "lambda-init-fake-session-token",
		// Every service at the recording endpoint; no shared config files
		// or instance metadata of this machine.
		"AWS_ENDPOINT_URL":            f.awsURL,
		"AWS_ENDPOINT_URL_S3":         f.awsURL,
		"AGENTPLANE_S3_PATH_STYLE":    "true",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(work, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(work, "no-aws-credentials"),
		"HOME":                        work,
	}
	if len(g.Publishes) > 0 {
		topics := map[string]string{}
		for _, t := range g.Publishes {
			if c, ok := catalog.Consumer(t); ok {
				topics[t] = f.awsURL + "/" + acct + "/agentplane-" + c.Name
			}
		}
		raw, _ := json.Marshal(topics)
		env["AGENTPLANE_TOPICS"] = string(raw)
	}
	if g.Uses.Secrets {
		env["AGENTPLANE_KMS_KEY_ID"] = "arn:aws:kms:" + region + ":" + acct + ":key/00000000-0000-0000-0000-000000000000"
	}
	if len(g.Uses.StartsWorkflows) > 0 {
		machines := map[string]string{}
		for _, wf := range g.Uses.StartsWorkflows {
			machines[wf] = "arn:aws:states:" + region + ":" + acct + ":stateMachine:agentplane-" + wf
		}
		raw, _ := json.Marshal(machines)
		env["AGENTPLANE_STATE_MACHINES"] = string(raw)
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// build compiles the functions for this machine into dir, with the flags
// of scripts/build-lambdas.sh.
func build(ctx context.Context, root, dir string, fns []string) error {
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-tags", "lambda.norpc", "-o", dir + string(filepath.Separator)}
	for _, fn := range fns {
		if _, err := os.Stat(filepath.Join(root, "functions", fn, "main.go")); err != nil {
			return fmt.Errorf("functions/%s: %w", fn, err)
		}
		args = append(args, "./functions/"+fn)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "lambda-init: building %d functions for this machine\n", len(fns))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// functionDirs lists the directories of dir holding a main.go.
func functionDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "main.go")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no functions under %s", dir)
	}
	return out, nil
}

// repoRoot is the module root holding functions/ (the working folder or
// one of its parents).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "functions")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no functions/ with a go.mod above the working folder")
		}
		dir = parent
	}
}
