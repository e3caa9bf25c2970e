package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// batchHeader is the first line of a stored ingest batch: who sent it and
// how to read the raw body that follows.
type batchHeader struct {
	V              int       `json:"v"`
	WorkspaceID    string    `json:"workspace_id"`
	OrganizationID string    `json:"organization_id"`
	Kind           string    `json:"kind"`
	ContentType    string    `json:"content_type,omitempty"`
	PathID         string    `json:"path_id,omitempty"`
	ReceivedAt     time.Time `json:"received_at"`
}

// Caller is who sends an ingest request.
type Caller struct {
	OrganizationID string
	WorkspaceID    string
}

// IngestResult counts what a request queued.
type IngestResult struct {
	Runs        int `json:"runs"`
	Feedback    int `json:"feedback"`
	Attachments int `json:"attachments"`
}

const ingestPrefix = "tracing/ingest/"

// Ingest validates a raw ingest body, stores it in blob storage and puts
// its key on the queue. It returns once both are done: the batch is
// durable (the blob is written and synced; the sweep applies a batch whose
// message was lost) and will be applied by HandleIngest.
func (s *Service) Ingest(ctx context.Context, c Caller, kind, contentType string, body []byte, pathID string) (IngestResult, error) {
	now := s.clock()
	key := ingestPrefix + c.WorkspaceID + "/" + strconv.FormatInt(now.UnixMilli(), 10) + "-" + uuid.NewString()
	b, err := parseBody(kind, contentType, body, pathID, key)
	if err != nil {
		return IngestResult{}, err
	}
	if err := s.checkSessions(ctx, c.WorkspaceID, b); err != nil {
		return IngestResult{}, err
	}
	h := batchHeader{V: 1, WorkspaceID: c.WorkspaceID, OrganizationID: c.OrganizationID, Kind: kind, ContentType: contentType, PathID: pathID, ReceivedAt: now}
	hdr, err := json.Marshal(h)
	if err != nil {
		return IngestResult{}, err
	}
	data := make([]byte, 0, len(hdr)+1+len(body))
	data = append(append(append(data, hdr...), '\n'), body...)
	if err := s.putBlob(ctx, key, data, "application/octet-stream"); err != nil {
		return IngestResult{}, err
	}
	if err := s.queue.Enqueue(ctx, TopicIngest, IngestMessage{Key: key}); err != nil {
		// The blob stays: the sweep applies batches whose message is lost.
		return IngestResult{}, err
	}
	res := IngestResult{Runs: len(b.Runs), Feedback: len(b.Feedback)}
	for _, r := range b.Runs {
		res.Attachments += len(r.Attachments)
	}
	return res, nil
}

// IngestRuns queues run creates given as objects of the POST /runs shape
// (what the OTLP decoder produces), through the same path as /runs/batch.
func (s *Service) IngestRuns(ctx context.Context, c Caller, runs []map[string]any) (IngestResult, error) {
	body, err := json.Marshal(map[string]any{"post": runs})
	if err != nil {
		return IngestResult{}, fmt.Errorf("tracing: encode decoded runs: %w", err)
	}
	return s.Ingest(ctx, c, kindBatch, "application/json", body, "")
}

// checkSessions answers 404 for a run naming a project (session_id) that
// is not in the caller's workspace.
func (s *Service) checkSessions(ctx context.Context, ws string, b *batch) error {
	seen := map[string]bool{}
	for _, op := range b.Runs {
		if op.SessionID == nil || seen[*op.SessionID] {
			continue
		}
		seen[*op.SessionID] = true
		if _, err := s.getProject(ctx, ws, *op.SessionID); err != nil {
			if errors.Is(err, ErrNotFound) {
				return &NotFoundError{What: "Project", ID: *op.SessionID}
			}
			return err
		}
	}
	return nil
}

// NotFoundError names what is missing (answered 404).
type NotFoundError struct {
	What, ID string
}

func (e *NotFoundError) Error() string   { return e.What + " " + e.ID + " not found" }
func (e *NotFoundError) Is(t error) bool { return t == ErrNotFound }

// HandleIngest is the consumer of TopicIngest: it applies one stored
// batch, then deletes it. Applying is idempotent, so a redelivered message
// (or the sweep) may apply a batch again.
func (s *Service) HandleIngest(ctx context.Context, payload json.RawMessage) error {
	var m IngestMessage
	if err := json.Unmarshal(payload, &m); err != nil || !strings.HasPrefix(m.Key, ingestPrefix) {
		s.log.Error("tracing: dropping a malformed ingest message", "error", fmt.Sprint(err))
		return nil
	}
	return s.applyStored(ctx, m.Key)
}

func (s *Service) applyStored(ctx context.Context, key string) error {
	data, err := blobs.ReadAll(ctx, blobAdapter{s.blobs}, key)
	if errors.Is(err, blobs.ErrNotFound) {
		return nil // applied and deleted already
	}
	if err != nil {
		return err
	}
	line, body, ok := bytes.Cut(data, []byte("\n"))
	var h batchHeader
	if !ok || json.Unmarshal(line, &h) != nil || h.WorkspaceID == "" {
		s.log.Error("tracing: dropping an unreadable ingest batch", "key", key)
		return s.blobs.Delete(ctx, key)
	}
	b, err := parseBody(h.Kind, h.ContentType, body, h.PathID, key)
	if err != nil {
		// It was valid when received; only a format change could get here.
		s.log.Error("tracing: dropping an ingest batch that no longer parses", "key", key, "error", err.Error())
		return s.blobs.Delete(ctx, key)
	}
	if err := s.apply(ctx, h, b, shortHash(key)); err != nil {
		return err
	}
	return s.blobs.Delete(ctx, key)
}

// blobAdapter lets the kernel's blob helpers read through the subset of
// Bucket this domain keeps.
type blobAdapter struct{ Bucket }

func (blobAdapter) Exists(context.Context, string) (bool, error) {
	return false, errors.New("tracing: Exists is not used")
}
func (blobAdapter) Close() error { return nil }

// apply applies a validated batch: resolves projects, writes the large
// fields, merges every run with conditional writes, then feedback, then
// reports new traces to billing.
func (s *Service) apply(ctx context.Context, h batchHeader, b *batch, batchID string) error {
	ws := h.WorkspaceID
	now := s.clock()
	var order []string
	ops := map[string][]*runOp{}
	for _, op := range b.Runs {
		if !op.Patch && op.StartTime == nil {
			// A create without a start time started when it was received
			// (the same time on every replay: it is in the batch header).
			t := h.ReceivedAt.UTC().Truncate(time.Microsecond)
			op.StartTime = &t
		}
		if _, ok := ops[op.ID]; !ok {
			order = append(order, op.ID)
		}
		ops[op.ID] = append(ops[op.ID], op)
	}
	projects, err := s.resolveProjects(ctx, ws, b.Runs)
	if err != nil {
		return err
	}
	current, err := s.loadRuns(ctx, ws, order)
	if err != nil {
		return err
	}
	// Where each run's blobs go: its project's folder (or _partial) under
	// the day it expires.
	type place struct {
		project string
		expires time.Time
	}
	places := make(map[string]place, len(order))
	for _, id := range order {
		cur := current[id].rec
		pl := place{}
		if cur != nil && cur.SessionID != "" {
			pl = place{cur.SessionID, cur.ExpiresAt}
		} else {
			for _, op := range ops[id] {
				if p := projects[op]; p != nil {
					pl.project = p.ID
					break
				}
			}
			first := now
			if cur != nil {
				first = cur.FirstSeen
			}
			pl.expires = first.Add(s.retentionOf(projectByID(projects, pl.project)))
		}
		places[id] = pl
	}
	refs, err := s.writeLargeFields(ctx, ws, batchID, order, ops, func(id string) (string, time.Time) {
		pl := places[id]
		return pl.project, pl.expires
	})
	if err != nil {
		return err
	}
	// written holds the runs merged so far, so a run whose dotted order
	// waits for a parent in the same batch finds it.
	written := map[string]*runRecord{}
	lookup := s.storeLookup(ws, written)
	merge := func(ctx context.Context, lr loadedRun, id string) (*runRecord, error) {
		r := lr.rec
		for _, op := range ops[id] {
			proj := ""
			if p := projects[op]; p != nil {
				proj = p.ID
			}
			r = mergeRun(r, op, proj, refs[op], now)
		}
		if lr.rec == nil || lr.rec.SessionID == "" {
			r.ExpiresAt = r.FirstSeen.Add(s.retentionOf(projectByID(projects, r.SessionID)))
		}
		if err := completeDotted(ctx, r, lookup); err != nil {
			return nil, err
		}
		finish(r)
		return r, nil
	}
	var done []*runRecord
	var usage []UsageEvent
	deps := map[string]int64{}
	plan := newTxPlan(ws, h.OrganizationID)
	var group []string
	flush := func() error {
		if plan.size() == 0 && len(plan.written) == 0 {
			return nil
		}
		err := s.commit(ctx, plan)
		switch {
		case err == nil:
			done = append(done, plan.written...)
			usage = append(usage, plan.usage...)
			for id, n := range plan.deps {
				deps[id] = n
			}
		case errors.Is(err, store.ErrConditionFailed):
			// Another writer changed one of these runs (or a thread
			// summary) meanwhile: apply each run on its own, re-reading.
			for _, id := range group {
				res, err := s.applyOne(ctx, ws, h.OrganizationID, id, merge)
				if err != nil {
					return err
				}
				usage = append(usage, res.usage...)
				if res.rec != nil {
					done = append(done, res.rec)
					written[id] = res.rec
					deps[id] = res.deps
				}
			}
		default:
			return err
		}
		plan, group = newTxPlan(ws, h.OrganizationID), nil
		return nil
	}
	for _, id := range order {
		r, err := merge(ctx, current[id], id)
		if err != nil {
			return err
		}
		written[id] = r
		if !plan.addRun(current[id], r, false) {
			if err := flush(); err != nil {
				return err
			}
			plan.addRun(current[id], r, true)
		}
		group = append(group, id)
	}
	if err := flush(); err != nil {
		return err
	}
	// Dotted orders: wait for missing parents, complete runs that waited
	// for these.
	awaited := map[string]bool{}
	for _, r := range done {
		switch {
		case r.DottedParent != "" && !awaited[r.DottedParent]:
			awaited[r.DottedParent] = true
			if err := s.awaitParent(ctx, ws, r.DottedParent); err != nil {
				return err
			}
		case r.DottedParent == "" && deps[r.ID] > 0:
			if err := s.fixDependents(ctx, ws, r.ID); err != nil {
				return err
			}
		}
	}
	for _, fc := range b.Feedback {
		if _, err := s.createFeedback(ctx, ws, fc); err != nil && !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return s.reportUsage(ctx, usage)
}

// applied is the outcome of applyOne: the run as written (nil when there
// was nothing to write) and its dependents counter.
type applied struct {
	rec   *runRecord
	deps  int64
	usage []UsageEvent
}

// applyOne applies a change to one run on its own, re-reading and retrying
// when a concurrent writer wins. merge returns nil for "nothing to write".
func (s *Service) applyOne(ctx context.Context, ws, org, id string, merge func(context.Context, loadedRun, string) (*runRecord, error)) (applied, error) {
	for attempt := 0; ; attempt++ {
		lr, err := s.loadRun(ctx, ws, id)
		if err != nil {
			return applied{}, err
		}
		r, err := merge(ctx, lr, id)
		if err != nil || r == nil {
			return applied{}, err
		}
		plan := newTxPlan(ws, org)
		plan.addRun(lr, r, true)
		err = s.commit(ctx, plan)
		if err == nil {
			return applied{rec: r, deps: lr.nums["deps"], usage: plan.usage}, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return applied{}, err
		}
		backoff(ctx, attempt)
	}
}

// maxAttempts bounds the retries of a conditional write under contention.
const maxAttempts = 50

func backoff(ctx context.Context, attempt int) {
	d := time.Duration(attempt+1) * 200 * time.Microsecond
	t := time.NewTimer(min(d, 20*time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// loadRuns reads the current state of runs, a few at a time.
func (s *Service) loadRuns(ctx context.Context, ws string, ids []string) (map[string]loadedRun, error) {
	out := make(map[string]loadedRun, len(ids))
	var mu sync.Mutex
	err := parallel(ctx, len(ids), func(i int) error {
		lr, err := s.loadRun(ctx, ws, ids[i])
		if err != nil {
			return err
		}
		mu.Lock()
		out[ids[i]] = lr
		mu.Unlock()
		return nil
	})
	return out, err
}

// parallelism bounds concurrent store reads of one request.
const parallelism = 16

// parallel runs fn(0..n-1) on up to parallelism goroutines and returns
// the first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	if n == 0 {
		return nil
	}
	if n == 1 {
		return fn(0)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		first    error
		next     int
		workers  = min(n, parallelism)
		stopping bool
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if stopping || next >= n || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					stopping = true
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

func projectByID(m map[*runOp]*projectRecord, id string) *projectRecord {
	if id == "" {
		return nil
	}
	for _, p := range m {
		if p != nil && p.ID == id {
			return p
		}
	}
	return nil
}

// retentionOf is how long runs of a project are kept.
func (s *Service) retentionOf(p *projectRecord) time.Duration {
	days := s.retention
	if p != nil && p.RetentionDays > 0 && p.RetentionDays < days {
		days = p.RetentionDays
	}
	return time.Duration(days) * 24 * time.Hour
}

// resolveProjects finds (or creates, by name) the project of each
// operation that names one; a create that names none goes to "default".
func (s *Service) resolveProjects(ctx context.Context, ws string, runs []*runOp) (map[*runOp]*projectRecord, error) {
	out := map[*runOp]*projectRecord{}
	byID := map[string]*projectRecord{}
	byName := map[string]*projectRecord{}
	for _, op := range runs {
		switch {
		case op.SessionID != nil:
			p, ok := byID[*op.SessionID]
			if !ok {
				var err error
				p, err = s.getProject(ctx, ws, *op.SessionID)
				if errors.Is(err, ErrNotFound) {
					// Deleted since the request: the run has no project.
					s.log.Warn("tracing: a run names a project that no longer exists", "workspace_id", ws, "project_id", *op.SessionID, "run_id", op.ID)
					p, err = nil, nil
				}
				if err != nil {
					return nil, err
				}
				byID[*op.SessionID] = p
			}
			out[op] = p
		case op.SessionName != nil || !op.Patch:
			name := DefaultProjectName
			if op.SessionName != nil && strings.TrimSpace(*op.SessionName) != "" {
				name = *op.SessionName
			}
			p, ok := byName[name]
			if !ok {
				var err error
				p, err = s.ensureProject(ctx, ws, name, nil)
				if err != nil {
					return nil, err
				}
				byName[name] = p
			}
			out[op] = p
		}
	}
	return out, nil
}

// DefaultProjectName is the project of runs that name none.
const DefaultProjectName = "default"

// writeLargeFields stores the large fields of a batch: per folder and
// expiry day, one segment blob; each attachment as its own blob.
func (s *Service) writeLargeFields(ctx context.Context, ws, batchID string, order []string, ops map[string][]*runOp, place func(id string) (string, time.Time)) (map[*runOp]fieldRefs, error) {
	refs := map[*runOp]fieldRefs{}
	segs := map[string]*segment{}
	var segOrder []string
	for _, id := range order {
		project, expires := place(id)
		folder := project
		if folder == "" {
			folder = partialFolder
		}
		day := dayOf(expires)
		for _, op := range ops[id] {
			if op.Inputs == nil && op.Outputs == nil && op.Events == nil && op.Serialized == nil && len(op.Attachments) == 0 {
				continue
			}
			sk := folder + "/" + day
			g := segs[sk]
			if g == nil {
				g = &segment{key: runFolder(ws, folder, day) + "seg-" + batchID + "-" + shortHash(folder, day)}
				segs[sk] = g
				segOrder = append(segOrder, sk)
			}
			fr := fieldRefs{Inputs: g.add(op.Inputs), Outputs: g.add(op.Outputs), Events: g.add(op.Events), Serialized: g.add(op.Serialized)}
			for name, a := range op.Attachments {
				key := attachmentKey(ws, folder, day, id, name, a.Data)
				if err := s.registerDay(ctx, ws, folder, day); err != nil {
					return nil, err
				}
				if err := s.putBlob(ctx, key, a.Data, a.ContentType); err != nil {
					return nil, err
				}
				if fr.Attachments == nil {
					fr.Attachments = map[string]attachment{}
				}
				fr.Attachments[name] = attachment{Key: key, ContentType: a.ContentType, Size: int64(len(a.Data))}
			}
			refs[op] = fr
		}
	}
	for _, sk := range segOrder {
		g := segs[sk]
		if g.buf.Len() == 0 {
			continue
		}
		folder, day, _ := strings.Cut(sk, "/")
		if err := s.registerDay(ctx, ws, folder, day); err != nil {
			return nil, err
		}
		if err := s.putBlob(ctx, g.key, g.buf.Bytes(), "application/octet-stream"); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// reportUsage publishes usage events whose outbox items a committed
// plan wrote, then deletes those items. An event lost here (a crash) is
// published by the sweep; the event id names the trace, so billing counts
// it once either way.
func (s *Service) reportUsage(ctx context.Context, events []UsageEvent) error {
	var keys []store.Key
	for _, ev := range events {
		if err := s.queue.Enqueue(ctx, TopicBillingUsage, ev); err != nil {
			return err
		}
		keys = append(keys, usageKey(ev.ID))
	}
	return s.deleteKeys(ctx, keys)
}
