package local_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/local"
)

// calls counts step runs by name.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) inc(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	return c.n[name]
}

func (c *calls) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func openStore(t *testing.T, path string) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newRunner(t *testing.T, defs ...workflow.Definition) (*local.Runner, store.Store) {
	t.Helper()
	st := openStore(t, filepath.Join(t.TempDir(), "wf.db"))
	r := local.New(st, defs...)
	t.Cleanup(func() {
		r.Close()
		st.Close()
	})
	return r, st
}

func wait(t *testing.T, r *local.Runner, id string) local.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e, err := r.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait %s: %v", id, err)
	}
	return e
}

// counting returns a step that records its run and adds its name to the
// state's "trail".
func counting(c *calls, name string) workflow.Step {
	return workflow.Step{Name: name, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
		c.inc(name)
		trail, _ := in["trail"].(string)
		in["trail"] = trail + name + ";"
		return in, nil
	}}
}

func TestStepsRunInOrderToSuccess(t *testing.T) {
	var c calls
	def := workflow.Definition{Name: "build", Steps: []workflow.Step{
		counting(&c, "clone"),
		{Name: "cleanup", FailureOnly: true, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("cleanup")
			return in, nil
		}},
		counting(&c, "compile"),
		{Name: "publish", OnFailure: "cleanup", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("publish")
			// Steps see JSON types: numbers are float64 locally as on AWS.
			if _, ok := in["n"].(float64); !ok {
				return nil, fmt.Errorf("n is %T", in["n"])
			}
			return workflow.State{"trail": in["trail"], "url": "https://example/" + in["id"].(string)}, nil
		}},
	}}
	r, _ := newRunner(t, def)
	if err := r.Start(context.Background(), "build", "rev-1", workflow.State{"id": "rev-1", "n": 3}); err != nil {
		t.Fatal(err)
	}
	e := wait(t, r, "rev-1")
	if e.Status != local.Succeeded || e.Error != "" {
		t.Fatalf("status %s, error %q", e.Status, e.Error)
	}
	if e.State["trail"] != "clone;compile;" || e.State["url"] != "https://example/rev-1" {
		t.Errorf("final state %v", e.State)
	}
	if fmt.Sprint(e.Completed) != "[clone compile publish]" || e.Step != "publish" {
		t.Errorf("completed %v, step %s", e.Completed, e.Step)
	}
	if c.get("cleanup") != 0 {
		t.Error("failure-only step ran on success")
	}
	if e.Workflow != "build" || e.ID != "rev-1" || e.StartedAt.IsZero() || e.UpdatedAt.Before(e.StartedAt) {
		t.Errorf("record %+v", e)
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	var c calls
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{
		{Name: "flaky", MaxAttempts: 3, Backoff: 10 * time.Millisecond, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			if c.inc("flaky") < 3 {
				return nil, fmt.Errorf("registry busy: %w", workflow.ErrTransient)
			}
			in["ok"] = true
			return in, nil
		}},
		{Name: "always", MaxAttempts: 2, Backoff: time.Millisecond, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("always")
			if in["fail"] == true {
				return nil, fmt.Errorf("still down: %w", workflow.ErrTransient)
			}
			return in, nil
		}},
	}}
	r, _ := newRunner(t, def)
	start := time.Now()
	if err := r.Start(context.Background(), "wf", "a", nil); err != nil {
		t.Fatal(err)
	}
	e := wait(t, r, "a")
	if e.Status != local.Succeeded || c.get("flaky") != 3 || e.State["ok"] != true {
		t.Fatalf("status %s after %d calls: %+v", e.Status, c.get("flaky"), e)
	}
	// Backoff 10ms then 20ms.
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("retries took %s, want the 10ms+20ms backoff", el)
	}

	if err := r.Start(context.Background(), "wf", "b", workflow.State{"fail": true}); err != nil {
		t.Fatal(err)
	}
	e = wait(t, r, "b")
	if e.Status != local.Failed || e.FailedStep != "always" || !strings.Contains(e.Error, "still down") || e.Attempt != 2 {
		t.Fatalf("exhausted retries: %+v", e)
	}
	if got := c.get("always"); got != 1+2 {
		t.Errorf("always ran %d times, want 1 (execution a) + 2 (b)", got)
	}
}

func failureDef(c *calls, err error) workflow.Definition {
	return workflow.Definition{Name: "wf", Steps: []workflow.Step{
		counting(c, "first"),
		{Name: "breaks", MaxAttempts: 4, Backoff: time.Millisecond, OnFailure: "mark-failed", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("breaks")
			return nil, err
		}},
		counting(c, "never"),
		{Name: "mark-failed", FailureOnly: true, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("mark-failed")
			in["handled"] = in[workflow.ErrorKey]
			return in, nil
		}},
	}}
}

func TestPermanentFailureRunsOnFailure(t *testing.T) {
	var c calls
	r, _ := newRunner(t, failureDef(&c, errors.New("bad config")))
	if err := r.Start(context.Background(), "wf", "x", workflow.State{"id": "x"}); err != nil {
		t.Fatal(err)
	}
	e := wait(t, r, "x")
	if e.Status != local.Failed || e.FailedStep != "breaks" || e.Error != "bad config" {
		t.Fatalf("record %+v", e)
	}
	if c.get("breaks") != 1 {
		t.Errorf("a permanent error was retried: %d calls", c.get("breaks"))
	}
	if c.get("never") != 0 || c.get("mark-failed") != 1 {
		t.Errorf("calls %v", c.n)
	}
	want := map[string]any{"Error": workflow.FailedErrorName, "Cause": "bad config"}
	if fmt.Sprint(e.State["handled"]) != fmt.Sprint(want) || e.State["id"] != "x" || e.State["trail"] != "first;" {
		t.Errorf("handler saw %v", e.State)
	}
	if fmt.Sprint(e.Completed) != "[first mark-failed]" {
		t.Errorf("completed %v", e.Completed)
	}
}

func TestExhaustedTransientRunsOnFailure(t *testing.T) {
	var c calls
	r, _ := newRunner(t, failureDef(&c, fmt.Errorf("timeout: %w", workflow.ErrTransient)))
	if err := r.Start(context.Background(), "wf", "x", nil); err != nil {
		t.Fatal(err)
	}
	e := wait(t, r, "x")
	if e.Status != local.Failed || c.get("breaks") != 4 {
		t.Fatalf("status %s after %d calls", e.Status, c.get("breaks"))
	}
	if h, _ := e.State["handled"].(map[string]any); h["Error"] != workflow.TransientErrorName {
		t.Errorf("handler saw %v", e.State["handled"])
	}
}

func TestFailingHandlerAndPanics(t *testing.T) {
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{
		{Name: "boom", OnFailure: "handler", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			if in["panic"] == true {
				panic("nil map")
			}
			return workflow.State{"big": strings.Repeat("x", 300*1024)}, nil
		}},
		{Name: "handler", FailureOnly: true, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			return nil, errors.New("handler broke too")
		}},
	}}
	r, _ := newRunner(t, def)
	ctx := context.Background()
	if err := r.Start(ctx, "wf", "panics", workflow.State{"panic": true}); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx, "wf", "too-big", nil); err != nil {
		t.Fatal(err)
	}
	e := wait(t, r, "panics")
	if e.Status != local.Failed || e.FailedStep != "boom" || !strings.Contains(e.Error, "panicked") || !strings.Contains(e.Error, "handler broke too") {
		t.Errorf("panics: %+v", e)
	}
	e = wait(t, r, "too-big")
	if e.Status != local.Failed || !strings.Contains(e.Error, "limit") {
		t.Errorf("too-big: %+v", e)
	}
}

func TestStartIsIdempotentAndValidates(t *testing.T) {
	var c calls
	release := make(chan struct{})
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{{Name: "only", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
		c.inc("only")
		<-release
		return in, nil
	}}}}
	other := workflow.Definition{Name: "other", Steps: []workflow.Step{counting(&c, "o")}}
	r, _ := newRunner(t, def, other)
	ctx := context.Background()

	var wg sync.WaitGroup
	var failures atomic.Int32
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(ctx, "wf", "same", workflow.State{"v": 1}); err != nil {
				failures.Add(1)
			}
		}()
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d concurrent starts of one id failed", failures.Load())
	}
	if err := r.Start(ctx, "other", "same", nil); !errors.Is(err, local.ErrConflict) {
		t.Errorf("same id, other workflow: %v", err)
	}
	close(release)
	e := wait(t, r, "same")
	if e.Status != local.Succeeded || c.get("only") != 1 {
		t.Fatalf("status %s, step ran %d times", e.Status, c.get("only"))
	}
	// Starting a finished execution again changes nothing.
	if err := r.Start(ctx, "wf", "same", workflow.State{"v": 2}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if e2, _ := r.Get(ctx, "same"); c.get("only") != 1 || e2.State["v"] != float64(1) {
		t.Errorf("restart of a finished id ran again: %d runs, state %v", c.get("only"), e2.State)
	}

	for name, err := range map[string]error{
		"unknown workflow": r.Start(ctx, "nope", "id", nil),
		"empty id":         r.Start(ctx, "wf", "", nil),
		"long id":          r.Start(ctx, "wf", strings.Repeat("a", 257), nil),
		"bad utf8 id":      r.Start(ctx, "wf", "a\xffb", nil),
		"bad input":        r.Start(ctx, "wf", "id", workflow.State{"ch": make(chan int)}),
		"huge input":       r.Start(ctx, "wf", "id", workflow.State{"s": strings.Repeat("x", 257*1024)}),
	} {
		want := workflow.ErrInvalid
		if name == "unknown workflow" {
			want = workflow.ErrUnknown
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	if _, err := r.Get(ctx, "id"); !errors.Is(err, local.ErrNotFound) {
		t.Errorf("a rejected start left a record: %v", err)
	}
	if _, err := r.Wait(ctx, "missing"); !errors.Is(err, local.ErrNotFound) {
		t.Errorf("wait missing: %v", err)
	}
}

func TestConcurrentExecutions(t *testing.T) {
	var c calls
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{counting(&c, "a"), counting(&c, "b")}}
	r, _ := newRunner(t, def)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(context.Background(), "wf", fmt.Sprintf("e%d", i), nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if e := wait(t, r, fmt.Sprintf("e%d", i)); e.Status != local.Succeeded {
			t.Errorf("e%d: %s", i, e.Status)
		}
	}
	if c.get("a") != n || c.get("b") != n {
		t.Errorf("calls %v", c.n)
	}
}

// A stopped runner leaves the execution running at its current step; a new
// runner over the same file resumes it without re-running finished steps.
func TestResumeAfterRestart(t *testing.T) {
	var c calls
	path := filepath.Join(t.TempDir(), "wf.db")
	blocked := make(chan struct{}, 1)
	def := func(block bool) workflow.Definition {
		return workflow.Definition{Name: "build", Steps: []workflow.Step{
			counting(&c, "s1"),
			{Name: "s2", OnFailure: "fail", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				c.inc("s2")
				if block {
					blocked <- struct{}{}
					<-ctx.Done()
					return nil, ctx.Err()
				}
				in["trail"] = in["trail"].(string) + "s2;"
				return in, nil
			}},
			counting(&c, "s3"),
			{Name: "fail", FailureOnly: true, Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
				c.inc("fail")
				return in, nil
			}},
		}}
	}

	st := openStore(t, path)
	r := local.New(st, def(true))
	if err := r.Start(context.Background(), "build", "rev-9", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-blocked:
	case <-time.After(20 * time.Second):
		t.Fatal("s2 never started")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := r.Get(context.Background(), "rev-9")
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != local.Running || e.Step != "s2" || e.Error != "" || fmt.Sprint(e.Completed) != "[s1]" {
		t.Fatalf("after stop: %+v", e)
	}
	if err := r.Start(context.Background(), "build", "rev-10", nil); !errors.Is(err, local.ErrClosed) {
		t.Errorf("start on a closed runner: %v", err)
	}
	st.Close()

	st2 := openStore(t, path)
	defer st2.Close()
	r2 := local.New(st2, def(false))
	defer r2.Close()
	n, err := r2.Resume(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("resume = %d, %v", n, err)
	}
	e = wait(t, r2, "rev-9")
	if e.Status != local.Succeeded || e.State["trail"] != "s1;s2;s3;" {
		t.Fatalf("after resume: %+v", e)
	}
	if c.get("s1") != 1 || c.get("s2") != 2 || c.get("s3") != 1 || c.get("fail") != 0 {
		t.Errorf("step runs %v: s1 and s3 once, s2 twice (interrupted, then resumed)", c.n)
	}
	// Nothing is left to resume.
	if n, err := r2.Resume(context.Background()); err != nil || n != 0 {
		t.Errorf("second resume = %d, %v", n, err)
	}
}

// The attempt count survives a restart: a resumed execution gets only the
// attempts it had left.
func TestResumeKeepsAttempts(t *testing.T) {
	var c calls
	path := filepath.Join(t.TempDir(), "wf.db")
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{{
		Name: "flaky", MaxAttempts: 2, Backoff: time.Hour,
		Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
			c.inc("flaky")
			return nil, fmt.Errorf("down: %w", workflow.ErrTransient)
		},
	}}}
	st := openStore(t, path)
	r := local.New(st, def)
	if err := r.Start(context.Background(), "wf", "e", nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		e, err := r.Get(context.Background(), "e")
		if err == nil && e.Attempt == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt never recorded: %+v %v", e, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.Close() // during the hour-long backoff
	st.Close()

	st2 := openStore(t, path)
	defer st2.Close()
	r2 := local.New(st2, def)
	defer r2.Close()
	if n, err := r2.Resume(context.Background()); err != nil || n != 1 {
		t.Fatalf("resume = %d, %v", n, err)
	}
	e := wait(t, r2, "e")
	if e.Status != local.Failed || c.get("flaky") != 2 {
		t.Errorf("status %s after %d calls, want FAILED after 2", e.Status, c.get("flaky"))
	}
}

// Start of an id whose execution is recorded but not running (the process
// died before Resume) picks it up.
func TestStartPicksUpOrphan(t *testing.T) {
	var c calls
	path := filepath.Join(t.TempDir(), "wf.db")
	blocked := make(chan struct{}, 1)
	block := true
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{{Name: "s", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
		c.inc("s")
		if block {
			blocked <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return in, nil
	}}}}
	st := openStore(t, path)
	r := local.New(st, def)
	if err := r.Start(context.Background(), "wf", "o", nil); err != nil {
		t.Fatal(err)
	}
	<-blocked
	r.Close()
	block = false
	r2 := local.New(st, def)
	defer r2.Close()
	defer st.Close()
	if err := r2.Start(context.Background(), "wf", "o", nil); err != nil {
		t.Fatal(err)
	}
	if e := wait(t, r2, "o"); e.Status != local.Succeeded || c.get("s") != 2 {
		t.Errorf("%s after %d runs", e.Status, c.get("s"))
	}
}

func TestWaitHonoursContext(t *testing.T) {
	def := workflow.Definition{Name: "wf", Steps: []workflow.Step{{Name: "s", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}}}
	r, _ := newRunner(t, def)
	if err := r.Start(context.Background(), "wf", "w", nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e, err := r.Wait(ctx, "w")
	if !errors.Is(err, context.DeadlineExceeded) || e.Status != local.Running {
		t.Errorf("wait = %s, %v", e.Status, err)
	}
}

func TestInvalidDefinitionsPanic(t *testing.T) {
	ok := workflow.Step{Name: "a", Run: func(ctx context.Context, in workflow.State) (workflow.State, error) { return in, nil }}
	for name, defs := range map[string][]workflow.Definition{
		"no name":        {{Steps: []workflow.Step{ok}}},
		"no steps":       {{Name: "x"}},
		"duplicate":      {{Name: "x", Steps: []workflow.Step{ok}}, {Name: "x", Steps: []workflow.Step{ok}}},
		"no run":         {{Name: "x", Steps: []workflow.Step{{Name: "a"}}}},
		"dup step":       {{Name: "x", Steps: []workflow.Step{ok, ok}}},
		"bad on-failure": {{Name: "x", Steps: []workflow.Step{{Name: "a", Run: ok.Run, OnFailure: "b"}}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			local.New(nil, defs...)
		}()
	}
}

// BenchmarkExecution measures a three-step execution end to end on bbolt
// (four versioned writes, fsync'd).
func BenchmarkExecution(b *testing.B) {
	var c calls
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "wf.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := local.New(st, workflow.Definition{Name: "wf", Steps: []workflow.Step{counting(&c, "a"), counting(&c, "b"), counting(&c, "c")}})
	defer r.Close()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("e%d", i)
		if err := r.Start(ctx, "wf", id, nil); err != nil {
			b.Fatal(err)
		}
		if e, err := r.Wait(ctx, id); err != nil || e.Status != local.Succeeded {
			b.Fatal(e.Status, err)
		}
	}
}
