// Package local runs workflow definitions in-process, for the all-in-one
// server. It mirrors what the Step Functions state machine does with the same
// definition: steps run in order, transient errors are retried with
// exponential backoff, a step that fails for good hands its input (plus the
// error under workflow.ErrorKey) to its OnFailure step and the execution
// ends FAILED.
//
// Progress is durable: the execution record (status, current step, attempt,
// state) lives in the store and is written, with a versioned conditional
// write, after every step, so a restarted process resumes each unfinished
// execution at the step it had reached (Resume). A step interrupted by a
// stop runs again on resume, so steps must be idempotent, as on AWS.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Status is an execution's status, named as Step Functions names them.
type Status string

const (
	Running   Status = "RUNNING"
	Succeeded Status = "SUCCEEDED"
	Failed    Status = "FAILED"
)

// Execution is the persisted record of one execution.
type Execution struct {
	ID       string `json:"id"`
	Workflow string `json:"workflow"`
	Status   Status `json:"status"`
	// Step is the step running now, or the last one run when finished.
	Step string `json:"step"`
	// Attempt counts the failed attempts of Step so far.
	Attempt int `json:"attempt"`
	// Handling is true while Step is the failure handler of FailedStep.
	Handling bool `json:"handling,omitempty"`
	// State is Step's input while running, the final state when finished.
	State workflow.State `json:"state"`
	// Completed lists the steps that finished, in order.
	Completed []string `json:"completed"`
	// FailedStep and Error say which step failed for good, and why.
	FailedStep string    `json:"failed_step,omitempty"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Finished reports whether the execution has ended.
func (e Execution) Finished() bool { return e.Status != Running }

const (
	// runningIndex lists unfinished executions, oldest first, for Resume.
	runningIndex = "gsi1"
	runningPK    = "wfexec#running"
	execSK       = "wfexec"
	// Finished executions are kept this long, like Step Functions' history;
	// an execution id can be started again after that.
	retention = 90 * 24 * time.Hour
	// maxStateSize is Step Functions' limit on the state passed between
	// states; a bigger state fails the execution there, so it does here.
	maxStateSize = 256 * 1024
	// maxIDLength bounds execution ids (Step Functions allows 80 characters;
	// sfnstart shortens longer ids).
	maxIDLength = 256
	maxBackoff  = 15 * time.Minute
)

var (
	// ErrNotFound: no execution has that id.
	ErrNotFound = errors.New("workflow: execution not found")
	// ErrClosed: the runner was closed.
	ErrClosed = errors.New("workflow: runner closed")
	// ErrConflict: the execution id is taken by another workflow.
	ErrConflict = errors.New("workflow: execution id used by another workflow")
)

// Runner executes definitions in goroutines and persists their progress.
type Runner struct {
	st   store.Store
	defs map[string]workflow.Definition
	log  *slog.Logger
	now  func() time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[string]chan struct{} // closed when the execution's goroutine ends
}

var _ workflow.Starter = (*Runner)(nil)

// New returns a runner of defs over st. Invalid or duplicate definitions
// are programming errors and panic.
func New(st store.Store, defs ...workflow.Definition) *Runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{
		st:      st,
		defs:    map[string]workflow.Definition{},
		log:     slog.Default(),
		now:     time.Now,
		ctx:     ctx,
		cancel:  cancel,
		running: map[string]chan struct{}{},
	}
	for _, d := range defs {
		if err := d.Validate(); err != nil {
			panic(err)
		}
		if _, dup := r.defs[d.Name]; dup {
			panic(fmt.Sprintf("workflow %s defined twice", d.Name))
		}
		r.defs[d.Name] = d
	}
	return r
}

// SetLogger replaces the logger (slog.Default() by default). Call it before
// Start or Resume.
func (r *Runner) SetLogger(l *slog.Logger) { r.log = l }

func execKey(id string) store.Key { return store.Key{PK: "wfexec#" + id, SK: execSK} }

// Start implements workflow.Starter: it records the execution, then runs it
// in the background. Starting an existing id of the same workflow is a
// no-op (it also picks the execution up if no goroutine runs it).
func (r *Runner) Start(ctx context.Context, wf, executionID string, input workflow.State) error {
	def, ok := r.defs[wf]
	if !ok {
		return fmt.Errorf("%w: %q", workflow.ErrUnknown, wf)
	}
	if executionID == "" || len(executionID) > maxIDLength || !utf8.ValidString(executionID) {
		return fmt.Errorf("%w: execution id must be 1 to %d bytes of UTF-8", workflow.ErrInvalid, maxIDLength)
	}
	state, err := roundTrip(input)
	if err != nil {
		return fmt.Errorf("%w: input: %v", workflow.ErrInvalid, err)
	}
	if r.isClosed() {
		return ErrClosed
	}
	first, _ := def.First()
	now := r.now().UTC()
	e := Execution{
		ID: executionID, Workflow: wf, Status: Running, Step: first,
		State: state, Completed: []string{}, StartedAt: now, UpdatedAt: now,
	}
	it, err := toItem(e)
	if err != nil {
		return err
	}
	if _, err = r.st.Put(ctx, it, store.NotExists()); err != nil {
		if !errors.Is(err, store.ErrConditionFailed) {
			return fmt.Errorf("workflow: record execution: %w", err)
		}
		old, _, gerr := r.load(ctx, executionID)
		if gerr != nil {
			return gerr
		}
		if old.Workflow != wf {
			return fmt.Errorf("%w: %q runs %s", ErrConflict, executionID, old.Workflow)
		}
		if old.Finished() {
			return nil
		}
	}
	r.launch(executionID)
	return nil
}

// Resume runs every unfinished execution in the store that this runner is
// not running yet; call it at start-up. It returns how many it picked up.
func (r *Runner) Resume(ctx context.Context) (int, error) {
	n := 0
	q := store.Query{Index: runningIndex, PK: runningPK}
	for {
		page, err := r.st.Query(ctx, q)
		if err != nil {
			return n, fmt.Errorf("workflow: list unfinished executions: %w", err)
		}
		for _, it := range page.Items {
			var e Execution
			if err := json.Unmarshal(it.Data, &e); err != nil {
				r.log.Error("workflow: unreadable execution record", "pk", it.PK, "error", err.Error())
				continue
			}
			if e.Status == Running && r.launch(e.ID) {
				n++
			}
		}
		if page.Next == "" {
			return n, nil
		}
		q.Cursor = page.Next
	}
}

// Get returns an execution's record.
func (r *Runner) Get(ctx context.Context, id string) (Execution, error) {
	e, _, err := r.load(ctx, id)
	return e, err
}

// Wait blocks until the execution has finished (or ctx is done) and returns
// its record.
func (r *Runner) Wait(ctx context.Context, id string) (Execution, error) {
	for {
		e, err := r.Get(ctx, id)
		if err != nil || e.Finished() {
			return e, err
		}
		r.mu.Lock()
		done := r.running[id]
		r.mu.Unlock()
		if done == nil {
			// Not running here (another process, or not resumed): poll.
			t := time.NewTimer(50 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return e, ctx.Err()
			}
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return e, ctx.Err()
		}
	}
}

// Close stops every execution at its current step, without recording a
// failure, and waits for their goroutines. Resume continues them later.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	return nil
}

func (r *Runner) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// launch starts the goroutine of an execution unless one runs already.
func (r *Runner) launch(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.running[id] != nil {
		return false
	}
	done := make(chan struct{})
	r.running[id] = done
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.running, id)
			r.mu.Unlock()
			close(done)
		}()
		r.run(id)
	}()
	return true
}

func (r *Runner) load(ctx context.Context, id string) (Execution, int64, error) {
	it, err := r.st.Get(ctx, execKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Execution{}, 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return Execution{}, 0, fmt.Errorf("workflow: read execution: %w", err)
	}
	var e Execution
	if err := json.Unmarshal(it.Data, &e); err != nil {
		return Execution{}, 0, fmt.Errorf("workflow: decode execution %q: %w", id, err)
	}
	return e, it.Version, nil
}

func toItem(e Execution) (store.Item, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return store.Item{}, fmt.Errorf("workflow: encode execution: %w", err)
	}
	it := store.Item{Key: execKey(e.ID), Data: data}
	if e.Finished() {
		it.ExpiresAt = e.UpdatedAt.Add(retention)
	} else {
		it.Indexes = map[string]store.IndexKey{runningIndex: {
			PK: runningPK, SK: e.StartedAt.Format(time.RFC3339Nano) + "#" + e.ID,
		}}
	}
	return it, nil
}

// save writes e if the stored version is still version, and returns the
// new version. Saves use a context that a stop does not cancel, so a step
// that finished is recorded as finished.
func (r *Runner) save(e Execution, version int64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 30*time.Second)
	defer cancel()
	e.UpdatedAt = r.now().UTC()
	it, err := toItem(e)
	if err != nil {
		return 0, err
	}
	out, err := r.st.Put(ctx, it, store.HasVersion(version))
	if err != nil {
		return 0, err
	}
	return out.Version, nil
}

// run drives one execution until it finishes, the runner stops, or another
// runner takes it over (a version conflict).
func (r *Runner) run(id string) {
	e, version, err := r.load(r.ctx, id)
	if err != nil {
		if r.ctx.Err() == nil {
			r.log.Error("workflow: cannot load execution", "execution_id", id, "error", err.Error())
		}
		return
	}
	log := r.log.With("workflow", e.Workflow, "execution_id", id)
	for e.Status == Running {
		if r.ctx.Err() != nil {
			return
		}
		next, retryIn, ok := r.attempt(e, log)
		if !ok {
			return // stopped: leave the record as it is
		}
		// Every attempt's outcome is recorded before anything else runs, so
		// a restart neither re-runs a finished step nor grants extra retries.
		if version, err = r.save(next, version); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				log.Warn("workflow: execution changed by another runner; leaving it to that one")
			} else {
				log.Error("workflow: cannot record progress; the execution resumes at its last recorded step on restart", "error", err.Error())
			}
			return
		}
		e = next
		if retryIn > 0 {
			t := time.NewTimer(retryIn)
			select {
			case <-t.C:
			case <-r.ctx.Done():
				t.Stop()
				return
			}
		}
	}
	log.Info("workflow: execution finished", "status", string(e.Status), "failed_step", e.FailedStep)
}

// attempt runs e's current step once and returns the record after it, and
// the delay before a retry of the same step. ok is false when the runner
// stopped during the step.
func (r *Runner) attempt(e Execution, log *slog.Logger) (next Execution, retryIn time.Duration, ok bool) {
	def, found := r.defs[e.Workflow]
	if !found {
		return finish(e, e.Step, fmt.Errorf("%w: %q", workflow.ErrUnknown, e.Workflow)), 0, true
	}
	step, found := def.Step(e.Step)
	if !found || step.Run == nil {
		return finish(e, e.Step, fmt.Errorf("workflow %s has no local step %q", e.Workflow, e.Step)), 0, true
	}
	out, err := runStep(r.ctx, step, e.State)
	if err != nil && r.ctx.Err() != nil {
		return e, 0, false
	}
	if err != nil {
		e.Attempt++
		if errors.Is(err, workflow.ErrTransient) && e.Attempt < max(step.MaxAttempts, 1) {
			log.Warn("workflow: transient step error; retrying", "step", step.Name, "attempt", e.Attempt, "error", err.Error())
			return e, max(backoff(step.Backoff, e.Attempt), time.Millisecond), true
		}
		log.Warn("workflow: step failed", "step", step.Name, "attempts", e.Attempt, "error", err.Error())
		if e.Handling {
			// The failure handler itself failed: the execution fails with
			// the original error, plus this one.
			return finish(e, e.FailedStep, fmt.Errorf("%s; failure handler %s: %w", e.Error, step.Name, err)), 0, true
		}
		if step.OnFailure == "" {
			return finish(e, step.Name, err), 0, true
		}
		// Like the state machine's Catch: the handler gets the failed
		// step's input with the error under ErrorKey.
		name := workflow.FailedErrorName
		if errors.Is(err, workflow.ErrTransient) {
			name = workflow.TransientErrorName
		}
		in, cerr := roundTrip(e.State)
		if cerr != nil {
			return finish(e, step.Name, err), 0, true
		}
		in[workflow.ErrorKey] = map[string]any{"Error": name, "Cause": err.Error()}
		e.Handling, e.FailedStep, e.Error = true, step.Name, err.Error()
		e.Step, e.Attempt, e.State = step.OnFailure, 0, in
		return e, 0, true
	}
	e.Completed = append(e.Completed, step.Name)
	e.State, e.Attempt = out, 0
	if e.Handling {
		// The handler ran; the execution still failed.
		e.Status = Failed
		return e, 0, true
	}
	if n, more := def.Next(step.Name); more {
		e.Step = n
		return e, 0, true
	}
	e.Status = Succeeded
	return e, 0, true
}

func finish(e Execution, failedStep string, err error) Execution {
	e.Status = Failed
	e.FailedStep = failedStep
	e.Error = err.Error()
	return e
}

// runStep runs one attempt on a private copy of the state, with a panic
// turned into a permanent error. The output goes through JSON (and its size
// limit) before it is accepted.
func runStep(ctx context.Context, step workflow.Step, in workflow.State) (out workflow.State, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("step %s panicked: %v", step.Name, p)
		}
	}()
	if in, err = roundTrip(in); err != nil {
		return nil, err
	}
	if out, err = step.Run(ctx, in); err != nil {
		return nil, err
	}
	if out, err = roundTrip(out); err != nil {
		return nil, fmt.Errorf("step %s returned an unusable state: %w", step.Name, err)
	}
	return out, nil
}

func backoff(first time.Duration, attempt int) time.Duration {
	d := first
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// roundTrip passes a state through JSON, so steps see the same types (maps,
// float64 numbers) whether or not the process restarted in between, and as
// they do on Step Functions.
func roundTrip(s workflow.State) (workflow.State, error) {
	if s == nil {
		return workflow.State{}, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateSize {
		return nil, fmt.Errorf("state is %d bytes, the limit is %d", len(b), maxStateSize)
	}
	var out workflow.State
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
