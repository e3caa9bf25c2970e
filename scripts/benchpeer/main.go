// Command benchpeer measures agentplane's thread API against the reference
// JavaScript agent server (`langgraphjs dev` of @langchain/langgraph-cli,
// in memory), side by side on this machine: both servers on loopback, the
// same seeded threads, the same workloads from the same load generator,
// one after the other. It prints requests per second, latency percentiles
// and agentplane's ratio to the reference for each workload. `make
// bench-peer` runs it; it is a benchmark, not a test.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.agentplane, "agentplane", "bin/agentplane", "agentplane binary")
	flag.StringVar(&o.refDir, "ref", "scripts/bench-peer/ref", "folder of the reference server (npm ci done)")
	flag.IntVar(&o.threads, "threads", 34252, "threads seeded in each server")
	flag.IntVar(&o.conns, "c", 32, "concurrent connections")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "duration of each workload")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured run of each workload on each server just before it is measured (0: none)")
	flag.IntVar(&o.deep, "deep", 10000, "checkpoints of the deep thread (history and copy)")
	flag.StringVar(&o.gen, "gen", "", "load generator: wrk (Debian's wrk, when installed: the default) or go (in this process)")
	flag.IntVar(&o.rounds, "rounds", 1, "times each workload is measured on the seeded servers (a table per round)")
	flag.StringVar(&o.only, "only", "", "comma-separated workloads to run, each by the start of its name: create,get,state,search,history,copy (default all)")
	flag.DurationVar(&o.idle, "idle", 0, "each server waits this long, untouched, before each workload's warm-up (with -alone: the time the reference's turn would leave agentplane idle)")
	flag.BoolVar(&o.alone, "alone", false, "measure agentplane alone, without the reference (for profiling; prints no ratios)")
	flag.StringVar(&o.cpuProfile, "cpu-profile", "", "agentplane writes a CPU profile of its whole run to this file (serve --cpu-profile)")
	flag.Parse()
	if o.gen == "" {
		o.gen = "go"
		if _, err := exec.LookPath("wrk"); err == nil {
			o.gen = "wrk"
		}
	}
	if o.gen != "wrk" && o.gen != "go" {
		fmt.Fprintln(os.Stderr, "benchpeer: -gen is wrk or go")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeer:", err)
		os.Exit(1)
	}
}

type options struct {
	agentplane, refDir string
	threads, conns     int
	duration, warmup   time.Duration
	deep               int
	only               string
	gen                string
	rounds             int
	idle               time.Duration
	alone              bool
	cpuProfile         string
}

// target is one server's thread API.
type target struct {
	name            string
	base            string
	header          http.Header
	client          *http.Client
	ids             []string // seeded thread ids
	shallow, deepID string
	// pause stops (true) or resumes (false) the server's processes.
	pause func(bool)
	// usage is what the server's processes have used so far.
	usage func() usage
	gone  bool // stopped answering: its remaining workloads fail
}

func run(o options) error {
	work, err := os.MkdirTemp("", "benchpeer-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// Interrupted, both servers stop too (deferred stops run).
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	ap, stopAP, err := startAgentplane(ctx, o, work)
	if err != nil {
		return fmt.Errorf("agentplane: %w", err)
	}
	defer stopAP()
	targets := []*target{ap}
	if !o.alone {
		ref, stopRef, err := startReference(ctx, o)
		if err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		defer stopRef()
		targets = append(targets, ref)
	}

	var selected []workload
	deep := false
	for _, w := range workloads(o) {
		if !chosen(o.only, w.name) {
			continue
		}
		selected = append(selected, w)
		deep = deep || strings.HasPrefix(w.name, "history") || strings.HasPrefix(w.name, "copy")
	}
	for _, t := range targets {
		start := time.Now()
		if err := seed(ctx, t, o.threads); err != nil {
			return fmt.Errorf("seed %s: %w", t.name, err)
		}
		fmt.Fprintf(os.Stderr, "seeded %d threads in %s in %s\n", o.threads, t.name, time.Since(start).Round(time.Millisecond))
		if !deep {
			continue // only the history and copy workloads need them
		}
		start = time.Now()
		if t.shallow, err = deepThread(ctx, t, 10); err != nil {
			return err
		}
		if t.deepID, err = deepThread(ctx, t, o.deep); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: threads with 10 and %d checkpoints in %s\n", t.name, o.deep, time.Since(start).Round(time.Millisecond))
	}

	for round := 1; round <= max(o.rounds, 1); round++ {
		rows := []row{}
		for _, w := range selected {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r := row{name: w.name}
			for i, t := range targets {
				if t.gone {
					r.res[i] = result{failed: true}
					continue
				}
				d, ok := settle(ctx, t)
				if !ok {
					// It died (the reference can run out of heap) or hangs:
					// its remaining workloads fail without a wait each.
					fmt.Fprintf(os.Stderr, "%s did not answer promptly within %s; its remaining workloads are reported failed\n", t.name, d.Round(time.Second))
					t.gone = true
					r.res[i] = result{failed: true}
					continue
				}
				if d > time.Second {
					fmt.Fprintf(os.Stderr, "%s answered promptly again after %s\n", t.name, d.Round(time.Second))
				}
				if d, busy := quiet(ctx); d > 2*time.Second {
					fmt.Fprintf(os.Stderr, "the machine was quiet again after %s (last second %.0f%% busy)\n", d.Round(time.Second), 100*busy)
				}
				// The other server is paused while t is measured: the
				// reference writes its store to disk on a timer, which
				// would otherwise take a core from agentplane's turn.
				pauseOthers(targets, t, true)
				if o.idle > 0 {
					time.Sleep(o.idle)
				}
				if o.warmup > 0 {
					// Unmeasured: a server idle for minutes (while the other
					// was seeded) starts with cold caches, a shrunk heap
					// and, for the reference, code not yet compiled.
					wo := o
					wo.duration = o.warmup
					_, _ = drive(t, w, wo)
				}
				u0 := t.usage()
				res, err := drive(t, w, o)
				if u := t.usage(); err == nil && res.answered > 0 {
					res.cpuPerReq = (u.cpu - u0.cpu) / time.Duration(res.answered)
					res.minor, res.major = u.minor-u0.minor, u.major-u0.major
				}
				pauseOthers(targets, t, false)
				if err != nil {
					// A server that cannot serve a workload (timeouts, errors) is
					// a result, reported in the table; the other workloads go on.
					fmt.Fprintf(os.Stderr, "%-28s %-10s failed: %v\n", w.name, t.name, err)
					r.res[i] = result{failed: true}
					continue
				}
				r.res[i] = res
				fmt.Fprintf(os.Stderr, "%-28s %-10s %9.0f req/s  p50 %8s  p99 %8s  errors %d  server CPU %s/req  page faults %d minor, %d major\n",
					w.name, t.name, res.rps, res.p50, res.p99, res.errors, res.cpuPerReq, res.minor, res.major)
			}
			rows = append(rows, r)
		}
		if o.rounds > 1 {
			fmt.Printf("\nround %d of %d", round, o.rounds)
		}
		printTable(os.Stdout, rows, o)
	}
	return nil
}

// settle waits (up to 10 minutes) until t answers a read within half a
// second, and returns how long that took and whether it did. After a
// burst of writes the reference server flushes its in-memory store to
// disk, which at tens of thousands of threads blocks it for many seconds;
// a workload measured then would time out entirely rather than measure
// its throughput.
func settle(ctx context.Context, t *target) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < 10*time.Minute && ctx.Err() == nil {
		t0 := time.Now()
		code, _, err := t.do("GET", "/threads/"+t.ids[0], nil)
		if err == nil && code == http.StatusOK && time.Since(t0) < 500*time.Millisecond {
			return time.Since(start), true
		}
		time.Sleep(time.Second)
	}
	return time.Since(start), false
}

// pauseOthers pauses or resumes every server but t.
func pauseOthers(targets []*target, t *target, on bool) {
	for _, o := range targets {
		if o != t && o.pause != nil {
			o.pause(on)
		}
	}
}

// quiet waits (up to 2 minutes) until the machine's CPUs are idle, and
// returns how long that took and the busy share of the last second.
// After a workload the reference server keeps working in the background
// (it writes its in-memory store to disk and collects a large heap),
// and the next measurement, of either server, would share the cores with
// that work: each server is measured with the other one at rest.
func quiet(ctx context.Context) (time.Duration, float64) {
	const idleBelow = 0.10
	start := time.Now()
	busy := 1.0
	for time.Since(start) < 2*time.Minute && ctx.Err() == nil {
		a, ok1 := cpuTimes()
		time.Sleep(time.Second)
		b, ok2 := cpuTimes()
		if !ok1 || !ok2 || b[0] <= a[0] {
			break // no /proc/stat: nothing to wait for
		}
		busy = 1 - float64(b[1]-a[1])/float64(b[0]-a[0])
		if busy < idleBelow {
			break
		}
	}
	return time.Since(start), busy
}

// cpuTimes returns the machine's total and idle (idle and iowait) CPU
// time from /proc/stat, in clock ticks.
func cpuTimes() ([2]uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]uint64{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return [2]uint64{}, false
	}
	var t [2]uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return [2]uint64{}, false
		}
		t[0] += n
		if i == 3 || i == 4 { // idle, iowait
			t[1] += n
		}
	}
	return t, true
}

// chosen reports whether workload name is selected by only (comma-separated
// name prefixes; empty selects all).
func chosen(only, name string) bool {
	if only == "" {
		return true
	}
	for _, p := range strings.Split(only, ",") {
		if p = strings.TrimSpace(p); p != "" && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

type row struct {
	name string
	res  [2]result
}

func printTable(w io.Writer, rows []row, o options) {
	fmt.Fprintf(w, "\n%d threads in each server, %d connections, %s per workload after %s unmeasured, loopback, load generator %s\n\n", o.threads, o.conns, o.duration, o.warmup, o.gen)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "| workload\t| agentplane req/s\t| p50\t| reference req/s\t| p50\t| ratio\t| server CPU per request (agentplane / reference) |")
	fmt.Fprintln(tw, "|---\t|---\t|---\t|---\t|---\t|---\t|--- |")
	for _, r := range rows {
		a, b := r.res[0], r.res[1]
		ratio := "n/a"
		switch {
		case a.failed || b.failed:
			ratio = "n/a (a server failed)"
		case b.rps > 0 && b.answered < 10:
			// A handful of answers is no rate: say how few.
			ratio = fmt.Sprintf("%.0fx (the reference answered %d in %s)", a.rps/b.rps, b.answered, o.duration)
		case b.rps > 0:
			ratio = fmt.Sprintf("%.1fx", a.rps/b.rps)
		}
		cpu := "n/a"
		if a.cpuPerReq > 0 && b.cpuPerReq > 0 {
			cpu = fmt.Sprintf("%s / %s (%.1fx less)", a.cpuPerReq.Round(100*time.Nanosecond), b.cpuPerReq.Round(100*time.Nanosecond), float64(b.cpuPerReq)/float64(a.cpuPerReq))
		} else if a.cpuPerReq > 0 {
			cpu = a.cpuPerReq.Round(100 * time.Nanosecond).String()
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s |\n", r.name, a.rate(), a.p50, b.rate(), b.p50, ratio, cpu)
	}
	tw.Flush()
}

// spec is one request of a workload; every request of a workload
// expects 200.
type spec struct {
	method, path string
	body         []byte
}

// workload is a set of requests, drawn uniformly at random by both load
// generators. Bodies are encoded once, before the clock runs.
type workload struct {
	name string
	reqs func(t *target) []spec
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func workloads(o options) []workload {
	const owners = 50
	perOwner := func(method, path string, body func(owner string) any) func(t *target) []spec {
		return func(t *target) []spec {
			out := make([]spec, owners)
			for i := range out {
				out[i] = spec{method, path, mustJSON(body(fmt.Sprintf("user-%d", i)))}
			}
			return out
		}
	}
	perThread := func(suffix string) func(t *target) []spec {
		return func(t *target) []spec {
			out := make([]spec, len(t.ids))
			for i, id := range t.ids {
				out[i] = spec{"GET", "/threads/" + id + suffix, nil}
			}
			return out
		}
	}
	history := mustJSON(map[string]any{"limit": 10})
	return []workload{
		{"create", perOwner("POST", "/threads", func(owner string) any {
			return map[string]any{"metadata": map[string]any{"graph_id": "agent", "owner": owner}}
		})},
		{"get", perThread("")},
		{"state", perThread("/state")},
		{"search (metadata, limit 10)", perOwner("POST", "/threads/search", func(owner string) any {
			return map[string]any{"metadata": map[string]any{"owner": owner}, "limit": 10, "sort_by": "created_at", "sort_order": "desc"}
		})},
		{"history at 10", func(t *target) []spec { return []spec{{"POST", "/threads/" + t.shallow + "/history", history}} }},
		{fmt.Sprintf("history at %d", o.deep), func(t *target) []spec { return []spec{{"POST", "/threads/" + t.deepID + "/history", history}} }},
		{"copy at 10", func(t *target) []spec { return []spec{{"POST", "/threads/" + t.shallow + "/copy", nil}} }},
		{fmt.Sprintf("copy at %d", o.deep), func(t *target) []spec { return []spec{{"POST", "/threads/" + t.deepID + "/copy", nil}} }},
	}
}

type result struct {
	rps      float64
	answered int64 // successful requests counted
	p50, p99 time.Duration
	errors   int64
	// cpuPerReq is the server's CPU time (all its processes, user and
	// system) per answered request while it was measured: a cost that
	// another tenant of a shared machine moves far less than the rate.
	cpuPerReq time.Duration
	// minor and major are the server's page faults while it was measured.
	minor, major uint64
	// failed: more than 1% of the requests failed or timed out (30 s).
	failed bool
}

// rate is the throughput for the table, or "failed".
func (r result) rate() string {
	if r.failed {
		return "failed"
	}
	if r.rps < 10 {
		return fmt.Sprintf("%.1f", r.rps)
	}
	return fmt.Sprintf("%.0f", r.rps)
}

// drive runs w with o.conns workers for o.duration.
func drive(t *target, w workload, o options) (result, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		lat     []time.Duration
		errs    atomic.Int64
		firstEr atomic.Value
	)
	reqs := w.reqs(t)
	if o.gen == "wrk" {
		return driveWrk(t, reqs, o)
	}
	deadline := time.Now().Add(o.duration)
	start := time.Now()
	for i := 0; i < o.conns; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(seed, 7))
			var mine []time.Duration
			for time.Now().Before(deadline) {
				r := reqs[rnd.IntN(len(reqs))]
				t0 := time.Now()
				code, err := t.status(r.method, r.path, r.body)
				d := time.Since(t0)
				if err != nil || code != http.StatusOK {
					if errs.Add(1) == 1 {
						firstEr.Store(fmt.Sprintf("%s %s: %d %v", r.method, r.path, code, err))
					}
					continue
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(uint64(i))
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no successful request: %v", firstEr.Load())
	}
	if n := errs.Load(); n > int64(len(lat))/100 {
		return result{}, fmt.Errorf("%d failed requests, first: %v", n, firstEr.Load())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(10 * time.Microsecond) }
	return result{rps: float64(len(lat)) / elapsed.Seconds(), answered: int64(len(lat)), p50: pct(0.5), p99: pct(0.99), errors: errs.Load()}, nil
}

func (t *target) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, t.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// status makes a request and reads the response to its end without
// keeping it (the load generator shares the machine with the servers).
func (t *target) status(method, path string, body []byte) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, t.base+path, rd)
	if err != nil {
		return 0, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// seed creates n threads, each with a one-message state, 16 at a time.
func seed(ctx context.Context, t *target, n int) error {
	ids := make([]string, n)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || firstErr.Load() != nil || ctx.Err() != nil {
					return
				}
				body := map[string]any{
					"metadata": map[string]any{"graph_id": "agent", "owner": fmt.Sprintf("user-%d", i%50)},
					"supersteps": []any{
						map[string]any{"updates": []any{map[string]any{"values": map[string]any{}, "as_node": "__input__"}}},
						map[string]any{"updates": []any{map[string]any{"values": map[string]any{"messages": []any{
							map[string]any{"type": "human", "content": fmt.Sprintf("hello %d", i)}}}, "as_node": "__start__"}}},
					},
				}
				code, b, err := t.do("POST", "/threads", body)
				if err != nil || code != 200 {
					firstErr.Store(fmt.Errorf("create: %d %v %.200s", code, err, b))
					return
				}
				var th struct {
					ThreadID string `json:"thread_id"`
				}
				if err := json.Unmarshal(b, &th); err != nil || th.ThreadID == "" {
					firstErr.Store(fmt.Errorf("create: %.200s", b))
					return
				}
				ids[i] = th.ThreadID
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t.ids = ids
	return nil
}

// deepThread makes a thread with n checkpoints (state updates). Every
// update replaces the thread's one message (the same message id), so a
// checkpoint's size does not grow with the depth: with a message appended
// per update, the work of building the thread grew with the square of the
// depth, and the reference had built 3,433 of 10,000 after 15 minutes.
func deepThread(ctx context.Context, t *target, n int) (string, error) {
	code, b, err := t.do("POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "agent"}})
	if err != nil || code != 200 {
		return "", fmt.Errorf("create: %d %v %s", code, err, b)
	}
	var th struct {
		ThreadID string `json:"thread_id"`
	}
	_ = json.Unmarshal(b, &th)
	for i := 0; i < n && ctx.Err() == nil; i++ {
		code, b, err := t.do("POST", "/threads/"+th.ThreadID+"/state", map[string]any{
			"values":  map[string]any{"messages": []any{map[string]any{"type": "human", "content": fmt.Sprintf("m%d", i), "id": "benchpeer-deep"}}},
			"as_node": "call_model"})
		if err != nil || code != 200 {
			return "", fmt.Errorf("update %d: %d %v %.200s", i, code, err, b)
		}
	}
	return th.ThreadID, ctx.Err()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func newClient(conns int) *http.Client {
	tr := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2, IdleConnTimeout: time.Minute}
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// waitUp polls url until it answers.
func waitUp(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %s", url, within)
}

// proc is a server's process group.
type proc struct {
	stop  func()
	pause func(bool)
	// usage is what its live processes have used so far.
	usage func() usage
}

// startProcess starts a server in a process group of its own, so that
// stopping or pausing it reaches its children too (the reference runs
// its server in a child of the CLI). pause(true) stops the whole group
// (SIGSTOP), pause(false) lets it go on.
func startProcess(ctx context.Context, dir string, env []string, logPath string, name string, args ...string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, append(os.Environ(), env...), logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	group := -cmd.Process.Pid
	pause := func(on bool) {
		if on {
			_ = syscall.Kill(group, syscall.SIGSTOP)
		} else {
			_ = syscall.Kill(group, syscall.SIGCONT)
		}
	}
	stop := func() {
		_ = syscall.Kill(group, syscall.SIGCONT)
		_ = syscall.Kill(group, syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(group, syscall.SIGKILL)
			<-done
		}
		_ = syscall.Kill(group, syscall.SIGKILL) // children left behind
		logf.Close()
	}
	return &proc{stop: stop, pause: pause, usage: func() usage { return groupUsage(-group) }}, nil
}

// usage is what a server's processes have used so far.
type usage struct {
	cpu time.Duration
	// Page faults: a major one read its page from disk (a page the
	// kernel had dropped, or never loaded), a minor one did not.
	minor, major uint64
}

// groupUsage adds up the CPU time and page faults of the live processes
// of process group pgid, from /proc (zero where /proc cannot tell).
func groupUsage(pgid int) usage {
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks uint64
	var u usage
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue // gone meanwhile
		}
		// The command name may hold spaces and parentheses: the fields
		// are counted from the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		// f[0] is field 3 (state): pgrp is field 5, minflt 10, majflt
		// 12, utime 14, stime 15.
		if len(f) < 13 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		n := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
		ticks += n(11) + n(12)
		u.minor += n(7)
		u.major += n(9)
	}
	// Linux reports CPU time in USER_HZ, 100 a second on every
	// architecture it builds for.
	u.cpu = time.Duration(ticks) * 10 * time.Millisecond
	return u
}

const benchKey = "ap_benchpeer_admin_key_0123456789abcdef"

// startAgentplane runs the local server with a fresh data dir, deploys a
// one-graph repository and returns its deployment's thread API.
// serveArgs is agentplane's command line.
func serveArgs(o options) []string {
	if o.cpuProfile == "" {
		return []string{"serve"}
	}
	p, err := filepath.Abs(o.cpuProfile)
	if err != nil {
		p = o.cpuProfile
	}
	return []string{"serve", "--cpu-profile", p}
}

func startAgentplane(ctx context.Context, o options, work string) (*target, func(), error) {
	bin, err := filepath.Abs(o.agentplane)
	if err != nil {
		return nil, nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	pr, err := startProcess(ctx, work, []string{"AGENTPLANE_ADDR=" + addr, "AGENTPLANE_DATA_DIR=" + filepath.Join(work, "data"),
		"AGENTPLANE_BOOTSTRAP_API_KEY=" + benchKey, "AGENTPLANE_LOG_LEVEL=error",
		// No tool server: it would hold the fixed port 8001, which a
		// local server or the next run may need.
		"AGENTPLANE_MCP_ADDR=off"}, filepath.Join(work, "agentplane.log"), bin, serveArgs(o)...)
	if err != nil {
		return nil, nil, err
	}
	base := "http://" + addr
	if err := waitUp(base+"/health", 30*time.Second); err != nil {
		pr.stop()
		return nil, nil, err
	}
	repo := filepath.Join(work, "repo")
	if err := makeRepo(repo, o.refDir); err != nil {
		pr.stop()
		return nil, nil, err
	}
	cp := &target{name: "control", base: base, header: http.Header{"X-Api-Key": {benchKey}}, client: newClient(4)}
	code, b, err := cp.do("POST", "/v2/deployments", map[string]any{
		"name": "bench", "source": "repo_host",
		"source_config":          map[string]any{"repo_url": "file://" + repo, "deployment_type": "dev_free", "build_on_push": false},
		"source_revision_config": map[string]any{"repo_ref": "main", "graph_config_path": "langgraph.json"},
		"secrets":                []any{},
	})
	if err != nil || code != 201 {
		pr.stop()
		return nil, nil, fmt.Errorf("create deployment: %d %v %s", code, err, b)
	}
	var d struct {
		ID  string `json:"id"`
		Rev string `json:"latest_revision_id"`
	}
	_ = json.Unmarshal(b, &d)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, b, err := cp.do("GET", "/v2/deployments/"+d.ID+"/revisions/"+d.Rev, nil)
		var r struct{ Status string }
		_ = json.Unmarshal(b, &r)
		if err == nil && r.Status == "DEPLOYED" {
			break
		}
		if strings.HasSuffix(r.Status, "FAILED") || time.Now().After(deadline) {
			pr.stop()
			return nil, nil, fmt.Errorf("revision %s: %s", d.Rev, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &target{name: "agentplane", base: base + "/deployments/" + d.ID, header: http.Header{"X-Api-Key": {benchKey}},
		client: newClient(o.conns), pause: pr.pause, usage: pr.usage}, pr.stop, nil
}

// makeRepo commits the reference server's graph project into a git
// repository, so both servers host the same graph.
func makeRepo(dir, refDir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return err
	}
	for _, f := range []string{"langgraph.json", "package.json", "src/agent.mjs"} {
		b, err := os.ReadFile(filepath.Join(refDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.email=bench@example.com", "-c", "user.name=bench", "commit", "-q", "-m", "graph"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v %s", args, err, out)
		}
	}
	return nil
}

// startReference runs `langgraphjs dev` in memory on a free loopback port.
func startReference(ctx context.Context, o options) (*target, func(), error) {
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	cli := filepath.Join(o.refDir, "node_modules", ".bin", "langgraphjs")
	if _, err := os.Stat(cli); err != nil {
		return nil, nil, errors.New("the reference server is not installed: npm ci --prefix " + o.refDir)
	}
	abs, _ := filepath.Abs(cli)
	// The in-memory server writes its store to .langgraph_api and loads
	// it again at start: without removing it, each run began with every
	// thread of the runs before (the seed of 34,252 threads took 4.5
	// minutes on an empty store, then 25, then over 66), and measured a
	// server holding more than the agentplane beside it.
	persisted := filepath.Join(o.refDir, ".langgraph_api")
	if err := os.RemoveAll(persisted); err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("benchpeer-ref-%d.log", port))
	pr, err := startProcess(ctx, o.refDir, []string{"LANGSMITH_TRACING=false", "LANGGRAPH_NO_BROWSER=1", "NODE_ENV=production"}, logPath,
		abs, "dev", "--host", "127.0.0.1", "--port", fmt.Sprint(port), "--no-browser")
	if err != nil {
		return nil, nil, err
	}
	stop := func() { pr.stop(); _ = os.RemoveAll(persisted) }
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := waitUp(base+"/ok", 90*time.Second); err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	return &target{name: "reference", base: base, header: http.Header{}, client: newClient(o.conns), pause: pr.pause, usage: pr.usage}, stop, nil
}
