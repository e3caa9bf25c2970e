package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// runtimeNext is the Runtime API request a function makes once its init
// is done: asking for its first invocation.
const runtimeNext = "/2018-06-01/runtime/invocation/next"

// runtimeInitError is where a function reports a failed init.
const runtimeInitError = "/2018-06-01/runtime/init/error"

// fakes are the local stand-ins a measured process talks to: the Lambda
// Runtime API (AWS_LAMBDA_RUNTIME_API) and one endpoint for every AWS
// service (AWS_ENDPOINT_URL), which records any call made during init (a
// function should make none) and fails it, so nothing leaves the machine.
type fakes struct {
	runtimeAddr string
	awsURL      string

	mu    sync.Mutex
	ready chan struct{} // closed at the current run's first GET next
	fail  chan string   // receives the current run's init error
	calls []string      // AWS calls of the current run
	done  bool

	servers []*http.Server
}

func startFakes() (*fakes, error) {
	f := &fakes{}
	rt := http.NewServeMux()
	rt.HandleFunc("GET "+runtimeNext, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		if f.ready != nil && !f.done {
			f.done = true
			close(f.ready)
		}
		f.mu.Unlock()
		// Long poll, as the real API: no invocation ever comes; the
		// process is killed.
		<-r.Context().Done()
	})
	rt.HandleFunc("POST "+runtimeInitError, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		f.mu.Lock()
		if f.fail != nil {
			select {
			case f.fail <- string(body):
			default:
			}
		}
		f.mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	})
	aws := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Method + " " + r.URL.Path
		if t := r.Header.Get("X-Amz-Target"); t != "" {
			call = t
		}
		f.mu.Lock()
		f.calls = append(f.calls, call)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazon.coral.validate#ValidationException","message":"lambda-init: no AWS calls during init"}`)
	})
	for _, s := range []struct {
		h    http.Handler
		addr *string
		url  bool
	}{{rt, &f.runtimeAddr, false}, {aws, &f.awsURL, true}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.close()
			return nil, err
		}
		srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 5 * time.Second}
		f.servers = append(f.servers, srv)
		go func() { _ = srv.Serve(ln) }()
		*s.addr = ln.Addr().String()
		if s.url {
			*s.addr = "http://" + *s.addr
		}
	}
	return f, nil
}

func (f *fakes) close() {
	for _, s := range f.servers {
		_ = s.Close()
	}
}

// begin prepares for one run.
func (f *fakes) begin() (ready chan struct{}, fail chan string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready, f.fail, f.calls, f.done = make(chan struct{}), make(chan string, 1), nil, false
	return f.ready, f.fail
}

func (f *fakes) awsCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Run is one measured start.
type Run struct {
	// Init is the wall time from exec to the first GET next.
	Init time.Duration
	// CPU is the user and system time the process used until it was
	// killed right after that request: the same work, less sensitive to
	// other load on the machine than Init.
	CPU   time.Duration
	Calls []string
}

// runOnce starts bin with env (and nothing of this process's environment)
// in dir, and returns the time from exec to its first GET next. The
// process is killed then.
func (f *fakes) runOnce(ctx context.Context, bin, dir string, env []string, timeout time.Duration) (Run, error) {
	ready, fail := f.begin()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stdout = io.Discard
	cmd.Stderr = &limited{w: &stderr, n: 8192}
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Run{}, err
	}
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	cpu := func() time.Duration {
		if cmd.ProcessState == nil {
			return 0
		}
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
		d := time.Since(start)
		stop()
		return Run{Init: d, CPU: cpu(), Calls: f.awsCalls()}, nil
	case msg := <-fail:
		stop()
		return Run{}, fmt.Errorf("init error reported to the Runtime API: %s (stderr: %s)", msg, tail(stderr.String()))
	case err := <-exited:
		return Run{}, fmt.Errorf("exited before asking for an invocation: %v (stderr: %s)", err, tail(stderr.String()))
	case <-timer.C:
		stop()
		return Run{}, fmt.Errorf("not ready after %s (AWS calls: %v; stderr: %s)", timeout, f.awsCalls(), tail(stderr.String()))
	case <-ctx.Done():
		stop()
		return Run{}, ctx.Err()
	}
}

// Stats summarizes the runs of one function.
type Stats struct {
	Runs                  int
	Median, Min, Max, P90 time.Duration
	// MedianCPU is the median CPU time of the runs.
	MedianCPU time.Duration
	Calls     []string
}

func summarize(runs []Run) (Stats, error) {
	if len(runs) == 0 {
		return Stats{}, errors.New("no runs")
	}
	ds := make([]time.Duration, len(runs))
	cpus := make([]time.Duration, len(runs))
	calls := map[string]bool{}
	for i, r := range runs {
		ds[i], cpus[i] = r.Init, r.CPU
		for _, c := range r.Calls {
			calls[c] = true
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	sort.Slice(cpus, func(i, j int) bool { return cpus[i] < cpus[j] })
	s := Stats{Runs: len(ds), Min: ds[0], Max: ds[len(ds)-1], Median: median(ds), P90: ds[(len(ds)*9+9)/10-1], MedianCPU: median(cpus)}
	for c := range calls {
		s.Calls = append(s.Calls, c)
	}
	sort.Strings(s.Calls)
	return s, nil
}

// median of sorted durations.
func median(ds []time.Duration) time.Duration {
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// limited keeps the first n bytes written.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		q := p
		if len(q) > l.n {
			q = q[:l.n]
		}
		l.n -= len(q)
		_, _ = l.w.Write(q)
	}
	return len(p), nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}
