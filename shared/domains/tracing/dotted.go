package tracing

import (
	"context"
	"errors"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// A dotted order lists a run's ancestors from the root. Runs from the SDKs
// always carry a whole one; an OTLP export whose spans' parent came in an
// earlier (or later) export gives orders that start below the root. The
// ingest completes such an order from the parent's stored one; when the
// parent is not stored yet, the run waits for it (DottedParent, and an
// entry under the parent), and the parent's arrival completes it
// (fixDependents). A parent learns it has dependents through a counter on
// its item ("deps"), which a dependent increments after writing itself.

// runLookup returns a run by id (nil when unknown).
type runLookup func(ctx context.Context, id string) (*runRecord, error)

// completeDotted prefixes r's dotted order with its parent's when it
// starts below the root, or records which run it waits for.
func completeDotted(ctx context.Context, r *runRecord, known runLookup) error {
	r.DottedParent = ""
	if r.DottedOrder == "" || r.ParentRunID == "" {
		return nil
	}
	ids, ok := dottedIDs(r.DottedOrder)
	if !ok || ids[0] == r.TraceID {
		return nil // whole: it starts at the root (the SDKs' convention)
	}
	top := ids[0]
	parent := r.ParentRunID
	if top != r.ID {
		t, err := known(ctx, top)
		if err != nil || t == nil {
			return err // an unknown top: nothing to complete it with
		}
		parent = t.ParentRunID
	}
	if parent == "" {
		return nil // the top is a root
	}
	d, err := known(ctx, parent)
	if err != nil {
		return err
	}
	if d != nil && d.DottedOrder != "" && d.DottedParent == "" {
		r.DottedOrder = d.DottedOrder + "." + r.DottedOrder
		return nil
	}
	r.DottedParent = parent
	return nil
}

// storeLookup reads runs from the store, remembering them for one apply.
func (s *Service) storeLookup(ws string, written map[string]*runRecord) runLookup {
	cache := map[string]*runRecord{}
	return func(ctx context.Context, id string) (*runRecord, error) {
		if r, ok := written[id]; ok {
			return r, nil
		}
		if r, ok := cache[id]; ok {
			return r, nil
		}
		lr, err := s.loadRun(ctx, ws, id)
		if err != nil {
			return nil, err
		}
		cache[id] = lr.rec
		return lr.rec, nil
	}
}

// awaitParent tells the run a dependent waits for, then completes the
// dependent at once if that run has arrived meanwhile.
func (s *Service) awaitParent(ctx context.Context, ws, parent string) error {
	key := runKey(ws, parent)
	_, err := s.st.Update(ctx, store.Update{Key: key, Add: map[string]int64{"deps": 1}, Cond: store.Exists()})
	if errors.Is(err, store.ErrConditionFailed) {
		// A stub holds the counter until the parent arrives.
		exp := s.clock().Add(s.retentionOf(nil))
		_, err = s.st.Update(ctx, store.Update{Key: key, Add: map[string]int64{"deps": 1}, SetExpiresAt: &exp, Cond: store.NotExists()})
		if errors.Is(err, store.ErrConditionFailed) {
			_, err = s.st.Update(ctx, store.Update{Key: key, Add: map[string]int64{"deps": 1}, Cond: store.Exists()})
		}
	}
	if err != nil {
		return err
	}
	lr, err := s.loadRun(ctx, ws, parent)
	if err != nil {
		return err
	}
	if lr.rec != nil && lr.rec.DottedOrder != "" && lr.rec.DottedParent == "" {
		return s.fixDependents(ctx, ws, parent)
	}
	return nil
}

// fixDependents completes the dotted orders of the runs waiting for
// parent, and of those waiting for them in turn.
func (s *Service) fixDependents(ctx context.Context, ws, parent string) error {
	work := []string{parent}
	for len(work) > 0 {
		d := work[0]
		work = work[1:]
		var deps []string
		q := store.Query{PK: danglingPK(ws, d), Limit: 1000}
		for {
			page, err := s.st.Query(ctx, q)
			if err != nil {
				return err
			}
			for _, it := range page.Items {
				deps = append(deps, it.SK)
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		for _, id := range deps {
			res, err := s.applyOne(ctx, ws, "", id, func(ctx context.Context, lr loadedRun, id string) (*runRecord, error) {
				if lr.rec == nil || lr.rec.DottedParent != d {
					return nil, nil
				}
				r := *lr.rec
				if err := completeDotted(ctx, &r, s.storeLookup(ws, nil)); err != nil {
					return nil, err
				}
				finish(&r)
				return &r, nil
			})
			if err != nil {
				return err
			}
			if res.rec != nil && res.rec.DottedParent == "" && res.deps > 0 {
				work = append(work, id)
			}
		}
	}
	return nil
}
