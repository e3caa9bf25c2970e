package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"math"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

const (
	// maxMetadataBytes bounds a thread's metadata (it is stored in two
	// items and shown on every search hit).
	maxMetadataBytes = 64 * 1024
	// inlineValuesMax: larger state values stay only in the checkpoint.
	inlineValuesMax = 100 * 1024
	// maxLineage bounds copy generations (each one a lineage level).
	maxLineage = 500
	// maxSupersteps bounds one creation.
	maxSupersteps = 1000
	// retries of a write that lost a race.
	retries = 8
	// stagingGrace: a staged create that did not finish by then is
	// collected.
	stagingGrace = 15 * time.Minute
)

func threadNotFound(id string) error { return fault.Missing("Thread with ID %s not found", id) }

// errRetry marks a lost race: the caller reloads and tries again.
var errRetry = errors.New("threads: retry")

// load reads a live thread (a thread past its delete TTL is gone).
func (s *Service) load(ctx context.Context, dep, tid string) (*threadRecord, int64, error) {
	it, err := s.st.Get(ctx, threadKey(dep, tid))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, threadNotFound(tid)
	}
	if err != nil {
		return nil, 0, err
	}
	t, err := decodeThread(it.Data)
	if err != nil {
		return nil, 0, err
	}
	if t.expired(s.now()) {
		return nil, 0, threadNotFound(tid)
	}
	return t, it.Version, nil
}

func decodeThread(data []byte) (*threadRecord, error) {
	var t threadRecord
	if err := decodeJSON(data, &t); err != nil {
		return nil, fmt.Errorf("threads: corrupt thread: %w", err)
	}
	if t.Metadata == nil {
		t.Metadata = map[string]any{}
	}
	return &t, nil
}

// writeOps returns the operations that take a thread from old (nil: new)
// to nu (nil: deleted), guarded by old's version.
func (s *Service) writeOps(old *threadRecord, version int64, nu *threadRecord) ([]store.TxOp, error) {
	var ops []store.TxOp
	var oldStatus, newStatus string
	var oldPairs, newPairs []string
	var oldOvf, newOvf, oldVOvf, newVOvf bool
	if old != nil {
		oldStatus = old.Status
		_, oldOvf, oldPairs = indexedPairs(old)
		oldVOvf = old.ValuesOverflow
	}
	ref := old
	if nu != nil {
		newStatus = nu.Status
		_, newOvf, newPairs = indexedPairs(nu)
		newVOvf = nu.ValuesOverflow
		nu.Overflow = newOvf
		th, comp, err := threadItems(nu)
		if err != nil {
			return nil, err
		}
		if store.Size(th) > store.MaxItemSize {
			return nil, fault.Oversize("The thread is too large to store (metadata and lineage exceed %d bytes)", store.MaxItemSize)
		}
		cond := store.NotExists()
		if old != nil {
			cond = store.HasVersion(version)
		}
		ops = append(ops, store.TxOp{Kind: store.OpPut, Item: th, Cond: cond}, store.TxOp{Kind: store.OpPut, Item: comp})
		ref = nu
	} else {
		ops = append(ops,
			store.TxOp{Kind: store.OpDelete, Key: threadKey(old.Deployment, old.ID), Cond: store.HasVersion(version)},
			store.TxOp{Kind: store.OpDelete, Key: companionKey(old.Deployment, old.ID)})
	}
	ops = append(ops, counterOps(s.counterShards, ref.Deployment, ref.ID, ref.CreatedAt, oldStatus, oldPairs, oldOvf, oldVOvf, newStatus, newPairs, newOvf, newVOvf)...)
	return ops, nil
}

// commit writes a thread change with extra operations in one transaction.
// A lost race on the thread item is errRetry.
func (s *Service) commit(ctx context.Context, old *threadRecord, version int64, nu *threadRecord, extra []store.TxOp) error {
	ops, err := s.writeOps(old, version, nu)
	if err != nil {
		return err
	}
	ops = append(ops, extra...)
	if len(ops) > store.MaxTxOps {
		return fmt.Errorf("threads: a thread write needs %d operations", len(ops))
	}
	err = s.st.Transact(ctx, ops)
	var tce *store.TxConditionError
	if errors.As(err, &tce) && tce.Index == 0 {
		return errRetry
	}
	if errors.Is(err, store.ErrConditionFailed) {
		// A referenced chain vanished or a checkpoint id was taken: the
		// thread changed under us.
		return errRetry
	}
	return err
}

// setValues stores values inline when small, and their index pairs.
func setValues(t *threadRecord, values map[string]any) {
	t.ValuePairs, t.ValuesOverflow = valuePairs(values)
	raw, _ := json.Marshal(values)
	if len(raw) > inlineValuesMax {
		t.Values, t.ValuesLarge = nil, true
		return
	}
	t.Values, t.ValuesLarge = values, false
}

// threadValues returns the thread's current values (nil before any state).
func (s *Service) threadValues(ctx context.Context, t *threadRecord) (map[string]any, error) {
	if t.Latest == "" {
		return nil, nil
	}
	if !t.ValuesLarge {
		if t.Values == nil {
			return map[string]any{}, nil
		}
		return t.Values, nil
	}
	cp, err := s.latestCheckpoint(ctx, t)
	if err != nil {
		return nil, err
	}
	return cp.Values, nil
}

// view renders a thread; values are read only when withValues.
func (s *Service) view(ctx context.Context, t *threadRecord, withValues, withTTL bool) (Thread, error) {
	md := t.Metadata
	if md == nil {
		md = map[string]any{}
	}
	out := Thread{
		ThreadID: t.ID, CreatedAt: apiTime(t.CreatedAt), UpdatedAt: apiTime(t.UpdatedAt),
		StateUpdatedAt: apiTime(t.StateUpdatedAt), Metadata: md, Status: t.Status,
		Config: map[string]any{}, Interrupts: map[string]any{},
	}
	if withValues {
		v, err := s.threadValues(ctx, t)
		if err != nil {
			return Thread{}, err
		}
		out.Values = v
	}
	if withTTL && t.TTL != nil {
		out.TTL = &TTLInfo{Strategy: t.TTL.Strategy, TTLMinutes: t.TTL.Minutes, ExpiresAt: apiTime(t.TTL.ExpiresAt)}
	}
	return out, nil
}

// TTLIn is a thread's ttl in a request.
type TTLIn struct {
	Strategy string
	Minutes  float64
}

func (t *TTLIn) state(now time.Time) *ttlState {
	if t == nil {
		return nil
	}
	d := time.Duration(t.Minutes * float64(time.Minute))
	if t.Minutes*float64(time.Minute) > math.MaxInt64/2 {
		d = time.Duration(math.MaxInt64 / 2)
	}
	return &ttlState{Strategy: t.Strategy, Minutes: t.Minutes, ExpiresAt: now.Add(d).Truncate(time.Microsecond)}
}

// CreateIn is a validated thread creation.
type CreateIn struct {
	ThreadID   string // "" to generate
	Metadata   map[string]any
	DoNothing  bool // if_exists=do_nothing
	TTL        *TTLIn
	Supersteps []SuperstepIn
}

// Create creates a thread, applying its supersteps.
func (s *Service) Create(ctx context.Context, dep string, in CreateIn) (Thread, error) {
	now := s.clock()
	tid := in.ThreadID
	if tid == "" {
		tid = newUUID7(now)
	}
	md := in.Metadata
	if md == nil {
		md = map[string]any{}
	}
	t := &threadRecord{
		ID: tid, Deployment: dep, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
		Metadata: md, Status: StatusIdle, TTL: in.TTL.state(now),
	}
	if len(in.Supersteps) > 0 && t.graphID() == "" {
		return Thread{}, fault.Bad("Thread '%s' has no assigned graph ID. Supersteps need metadata.graph_id (the SDKs set it from graph_id).", tid)
	}
	// Compute every checkpoint first: a bad superstep creates nothing.
	var cps []*checkpoint
	var prev *checkpoint
	for i, ss := range in.Supersteps {
		cp, err := applySuperstep(prev, ss.Updates, t.graphID(), randomID)
		if err != nil {
			var se *stepError
			if errors.As(err, &se) {
				return Thread{}, se.toWeb("supersteps", i)
			}
			return Thread{}, err
		}
		after, parent := "", ""
		if prev != nil {
			after, parent = prev.ID, prev.ID
		}
		finishCheckpoint(cp, now, after, parent)
		cps = append(cps, cp)
		prev = cp
	}
	chain := newChainID(now)
	t.Lineage = []segment{{Chain: chain}}
	if prev != nil {
		t.Latest, t.Status = prev.ID, statusOf(prev)
		setValues(t, prev.Values)
	}
	for attempt := 0; ; attempt++ {
		// A generated id is new: the first attempt need not look for it
		// (were it taken, the conditional write fails and the retry looks).
		fresh := in.ThreadID == "" && attempt == 0
		th, err := s.createOnce(ctx, t, chain, cps, in.DoNothing, fresh)
		if !errors.Is(err, errRetry) || attempt == retries {
			if errors.Is(err, errRetry) {
				err = fault.Clash("Thread %s changed concurrently; retry", tid)
			}
			return th, err
		}
	}
}

func (s *Service) createOnce(ctx context.Context, t *threadRecord, chain string, cps []*checkpoint, doNothing, fresh bool) (Thread, error) {
	var existing *threadRecord
	var version int64
	var err error
	if !fresh {
		if existing, version, err = s.loadAny(ctx, t.Deployment, t.ID); err != nil {
			return Thread{}, err
		}
	}
	if existing != nil {
		if existing.expired(s.now()) {
			// Its TTL ran out: finish the sweeper's work, then create.
			if err := s.remove(ctx, existing, version); err != nil {
				return Thread{}, err
			}
			return Thread{}, errRetry
		}
		if doNothing {
			return s.view(ctx, existing, true, false)
		}
		return Thread{}, fault.Clash("Thread with ID %s already exists", t.ID)
	}
	var blobs []string
	var cpOps []store.TxOp
	for _, cp := range cps {
		op, bk, err := s.checkpointPut(ctx, t.Deployment, chain, cp)
		if err != nil {
			s.dropBlobs(ctx, blobs)
			return Thread{}, err
		}
		blobs = append(blobs, bk)
		cpOps = append(cpOps, op)
	}
	base, err := s.writeOps(nil, 0, t)
	if err != nil {
		s.dropBlobs(ctx, blobs)
		return Thread{}, err
	}
	if len(base)+1+len(cpOps) <= store.MaxTxOps {
		ops := append(base, store.TxOp{Kind: store.OpPut, Item: chainItem(chain, chainRecord{Deployment: t.Deployment}, 1), Cond: store.NotExists()})
		ops = append(ops, cpOps...)
		err = s.st.Transact(ctx, ops)
	} else {
		err = s.createStaged(ctx, t, chain, base, cpOps)
	}
	if err != nil {
		s.dropBlobs(ctx, blobs)
		if errors.Is(err, store.ErrConditionFailed) {
			return Thread{}, errRetry // created concurrently: look again
		}
		return Thread{}, err
	}
	return s.view(ctx, t, true, false)
}

// createStaged writes a long superstep history before the thread: the
// chain is staged (with a collection task that fires if the create never
// completes), filled in batches, then adopted by the thread transaction.
func (s *Service) createStaged(ctx context.Context, t *threadRecord, chain string, base, cpOps []store.TxOp) error {
	rec := chainRecord{Deployment: t.Deployment, Staging: true}
	err := s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: chainItem(chain, rec, 1), Cond: store.NotExists()},
		{Kind: store.OpPut, Item: gcItem(chain, s.now().Add(stagingGrace))},
	})
	if err != nil {
		return err
	}
	abandon := func(err error) error {
		if cerr := s.collect(context.WithoutCancel(ctx), chain, true); cerr != nil {
			s.log.Warn("threads: staged chain left for the sweeper", "chain", chain, "error", cerr.Error())
		}
		return err
	}
	for i := 0; i < len(cpOps); i += store.MaxTxOps {
		end := min(i+store.MaxTxOps, len(cpOps))
		if err := s.st.Transact(ctx, cpOps[i:end]); err != nil {
			return abandon(err)
		}
	}
	rec.Staging = false
	data, _ := json.Marshal(rec)
	ops := append(base,
		store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: chainKey(chain), SetData: data, Cond: store.Exists()}},
		store.TxOp{Kind: store.OpDelete, Key: gcKey(chain)})
	if err := s.st.Transact(ctx, ops); err != nil {
		return abandon(err)
	}
	return nil
}

// loadAny reads a thread whatever its TTL (nil when absent).
func (s *Service) loadAny(ctx context.Context, dep, tid string) (*threadRecord, int64, error) {
	it, err := s.st.Get(ctx, threadKey(dep, tid))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	t, err := decodeThread(it.Data)
	return t, it.Version, err
}

// Get returns a thread.
func (s *Service) Get(ctx context.Context, dep, tid string, withTTL bool) (Thread, error) {
	t, _, err := s.load(ctx, dep, tid)
	if err != nil {
		return Thread{}, err
	}
	return s.view(ctx, t, true, withTTL)
}

// PatchIn is a validated PATCH.
type PatchIn struct {
	Metadata map[string]any // merged shallowly; nil: unchanged
	TTL      *TTLIn
}

// Patch merges metadata and sets the TTL.
func (s *Service) Patch(ctx context.Context, dep, tid string, in PatchIn) (Thread, error) {
	for attempt := 0; ; attempt++ {
		t, v, err := s.load(ctx, dep, tid)
		if err != nil {
			return Thread{}, err
		}
		old := *t
		nu := *t
		now := s.clock()
		if in.Metadata != nil {
			md := make(map[string]any, len(t.Metadata)+len(in.Metadata))
			for k, x := range t.Metadata {
				md[k] = x
			}
			for k, x := range in.Metadata {
				md[k] = x
			}
			if raw, _ := json.Marshal(md); len(raw) > maxMetadataBytes {
				return Thread{}, fault.Invalid(fault.Loc("body", "metadata"), fmt.Sprintf("The merged metadata exceeds %d bytes", maxMetadataBytes), "value_error")
			}
			nu.Metadata = md
		}
		if in.TTL != nil {
			nu.TTL = in.TTL.state(now)
		}
		nu.UpdatedAt = now
		err = s.commit(ctx, &old, v, &nu, nil)
		if errors.Is(err, errRetry) && attempt < retries {
			continue
		}
		if errors.Is(err, errRetry) {
			return Thread{}, fault.Clash("Thread %s changed concurrently; retry", tid)
		}
		if err != nil {
			return Thread{}, err
		}
		return s.view(ctx, &nu, true, false)
	}
}

// Delete removes a thread; its checkpoints are collected in the
// background once no copy shares them.
func (s *Service) Delete(ctx context.Context, dep, tid string) error {
	for attempt := 0; ; attempt++ {
		t, v, err := s.load(ctx, dep, tid)
		if err != nil {
			return err
		}
		err = s.remove(ctx, t, v)
		if errors.Is(err, errRetry) && attempt < retries {
			continue
		}
		if errors.Is(err, errRetry) {
			return fault.Clash("Thread %s changed concurrently; retry", tid)
		}
		return err
	}
}

// remove deletes thread t (at version v) and releases its head chain.
func (s *Service) remove(ctx context.Context, t *threadRecord, v int64) error {
	head := t.Lineage[0].Chain
	extra := []store.TxOp{
		{Kind: store.OpUpdate, Update: store.Update{Key: chainKey(head), Add: map[string]int64{"refs": -1}}},
		{Kind: store.OpPut, Item: gcItem(head, time.Time{})},
	}
	if err := s.commit(ctx, t, v, nil, extra); err != nil {
		return err
	}
	s.requestGC(ctx, head)
	return nil
}

// Copy creates an independent thread whose history is the source's at
// this moment. It shares the source's checkpoints (copy-on-write): a new
// empty head chain whose parent is the source chain holding its latest
// checkpoint, cut at that checkpoint. Two items and a counter, whatever
// the history length.
func (s *Service) Copy(ctx context.Context, dep, tid string) (Thread, error) {
	for attempt := 0; ; attempt++ {
		src, v, err := s.load(ctx, dep, tid)
		if err != nil {
			var fe *fault.Error
			if errors.As(err, &fe) && fe.Kind == fault.NotFound {
				return Thread{}, fault.Clash("Thread with ID %s not found", tid)
			}
			return Thread{}, err
		}
		th, err := s.copyOnce(ctx, src, v)
		if errors.Is(err, errRetry) && attempt < retries {
			continue
		}
		if errors.Is(err, errRetry) {
			return Thread{}, fault.Clash("Thread %s changed during the copy; retry", tid)
		}
		return th, err
	}
}

func (s *Service) copyOnce(ctx context.Context, src *threadRecord, v int64) (Thread, error) {
	now := s.clock()
	chain := newChainID(now)
	nu := &threadRecord{
		ID: newUUID7(now), Deployment: src.Deployment, CreatedAt: now, UpdatedAt: now, StateUpdatedAt: now,
		Metadata: cloneJSON(src.Metadata).(map[string]any), Status: StatusIdle,
		Values: src.Values, ValuesLarge: src.ValuesLarge, ValuePairs: src.ValuePairs, ValuesOverflow: src.ValuesOverflow,
	}
	rec := chainRecord{Deployment: src.Deployment}
	extra := []store.TxOp{
		// The source must still be as read: a deleted source may already
		// be releasing the chains the copy is about to share.
		{Kind: store.OpCheck, Key: threadKey(src.Deployment, src.ID), Cond: store.HasVersion(v)},
	}
	if src.Latest == "" {
		nu.Lineage = []segment{{Chain: chain}}
	} else {
		k := src.LatestLevel
		shared := src.Lineage[k].Chain
		nu.Lineage = append([]segment{{Chain: chain}, {Chain: shared, Upto: src.Latest}}, src.Lineage[k+1:]...)
		if len(nu.Lineage) > maxLineage {
			return Thread{}, fault.Bad("Thread %s is a copy %d generations deep; copy an earlier generation instead", src.ID, len(src.Lineage))
		}
		nu.Latest, nu.LatestLevel = src.Latest, 1
		rec.Parent, rec.Upto = shared, src.Latest
		extra = append(extra, store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: chainKey(shared), Add: map[string]int64{"refs": 1}, Cond: store.Exists()}})
		switch src.Status {
		case StatusIdle, StatusInterrupted:
			nu.Status = src.Status
		default:
			cp, err := s.latestCheckpoint(ctx, src)
			if err != nil {
				return Thread{}, err
			}
			nu.Status = statusOf(cp)
		}
	}
	extra = append(extra, store.TxOp{Kind: store.OpPut, Item: chainItem(chain, rec, 1), Cond: store.NotExists()})
	if err := s.commit(ctx, nil, 0, nu, extra); err != nil {
		return Thread{}, err
	}
	return s.view(ctx, nu, true, false)
}

// SetStatus sets a thread's status (for the runs API: busy while a run is
// pending or running, error after a failed run).
func (s *Service) SetStatus(ctx context.Context, dep, tid, status string) error {
	if !validStatus(status) {
		return fmt.Errorf("threads: unknown status %q", status)
	}
	for attempt := 0; ; attempt++ {
		t, v, err := s.load(ctx, dep, tid)
		if err != nil {
			return err
		}
		old, nu := *t, *t
		nu.Status, nu.UpdatedAt = status, s.clock()
		err = s.commit(ctx, &old, v, &nu, nil)
		if errors.Is(err, errRetry) && attempt < retries {
			continue
		}
		return err
	}
}

// GetState returns the thread's state at its latest checkpoint, or at
// checkpointID.
func (s *Service) GetState(ctx context.Context, dep, tid, checkpointID string) (State, error) {
	t, _, err := s.load(ctx, dep, tid)
	if err != nil {
		return State{}, err
	}
	if t.graphID() == "" || t.Latest == "" {
		if checkpointID != "" && t.graphID() != "" {
			return State{}, fault.Missing("Checkpoint %s not found", checkpointID)
		}
		return emptyState(), nil
	}
	var cp *checkpoint
	if checkpointID == "" {
		cp, err = s.latestCheckpoint(ctx, t)
	} else {
		cp, err = s.getCheckpoint(ctx, t, checkpointID)
		if errors.Is(err, store.ErrNotFound) {
			return State{}, fault.Missing("Checkpoint %s not found", checkpointID)
		}
	}
	if err != nil {
		return State{}, err
	}
	return snapshot(t, cp), nil
}

// UpdateStateIn is a validated POST /threads/{id}/state.
type UpdateStateIn struct {
	Update UpdateIn
	// CheckpointID forks from that checkpoint; "" continues the latest.
	CheckpointID string
}

// UpdateResult is the response of a state update.
type UpdateResult struct {
	Checkpoint   map[string]any `json:"checkpoint"`
	Configurable map[string]any `json:"configurable"`
	CheckpointID string         `json:"checkpoint_id"`
}

// UpdateState writes a checkpoint as if Update.AsNode had run. graphs are
// the deployment's graphs (nil when unknown).
func (s *Service) UpdateState(ctx context.Context, dep, tid string, in UpdateStateIn, graphs []string) (UpdateResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := s.updateStateOnce(ctx, dep, tid, in, graphs)
		if errors.Is(err, errRetry) && attempt < retries {
			continue
		}
		if errors.Is(err, errRetry) {
			return UpdateResult{}, fault.Clash("Thread %s changed concurrently; retry", tid)
		}
		return res, err
	}
}

func (s *Service) updateStateOnce(ctx context.Context, dep, tid string, in UpdateStateIn, graphs []string) (UpdateResult, error) {
	t, v, err := s.load(ctx, dep, tid)
	if err != nil {
		return UpdateResult{}, err
	}
	if t.Status == StatusBusy {
		return UpdateResult{}, fault.Clash("Thread is busy")
	}
	g := t.graphID()
	if g == "" {
		return UpdateResult{}, fault.Bad("Thread '%s' has no assigned graph ID. This usually occurs when no runs have been made on this particular thread; set metadata.graph_id first.", tid)
	}
	if graphs != nil && !contains(graphs, g) {
		return UpdateResult{}, fault.Missing("Graph '%s' not found in the deployment's active revision", g)
	}
	var base *checkpoint
	if in.CheckpointID != "" {
		base, err = s.getCheckpoint(ctx, t, in.CheckpointID)
		if errors.Is(err, store.ErrNotFound) {
			return UpdateResult{}, fault.Missing("Checkpoint %s not found", in.CheckpointID)
		}
	} else {
		base, err = s.latestCheckpoint(ctx, t)
	}
	if err != nil {
		return UpdateResult{}, err
	}
	cp, err := applySuperstep(base, []UpdateIn{in.Update}, g, randomID)
	if err != nil {
		var se *stepError
		if errors.As(err, &se) {
			if len(se.loc) >= 2 && se.loc[0] == "updates" {
				se.loc = se.loc[2:]
			}
			return UpdateResult{}, se.toWeb()
		}
		return UpdateResult{}, err
	}
	now := s.clock()
	parent := ""
	if base != nil {
		parent = base.ID
	}
	finishCheckpoint(cp, now, t.Latest, parent)
	head := t.Lineage[0].Chain
	op, bk, err := s.checkpointPut(ctx, dep, head, cp)
	if err != nil {
		return UpdateResult{}, err
	}
	old, nu := *t, *t
	nu.Latest, nu.LatestLevel = cp.ID, 0
	nu.Status = statusOf(cp)
	setValues(&nu, cp.Values)
	nu.UpdatedAt, nu.StateUpdatedAt = now, now
	if t.TTL != nil {
		nu.TTL = (&TTLIn{Strategy: t.TTL.Strategy, Minutes: t.TTL.Minutes}).state(now)
	}
	if err := s.commit(ctx, &old, v, &nu, []store.TxOp{op}); err != nil {
		s.dropBlobs(ctx, []string{bk})
		return UpdateResult{}, err
	}
	ref := map[string]any{"thread_id": tid, "checkpoint_ns": "", "checkpoint_id": cp.ID, "checkpoint_map": nil}
	return UpdateResult{Checkpoint: ref, Configurable: ref, CheckpointID: cp.ID}, nil
}

// HistoryIn is a validated history request.
type HistoryIn struct {
	Limit    int
	Before   string
	Metadata map[string]any
	// Namespace is the checkpoint_ns asked for; only "" (the root graph)
	// has checkpoints.
	Namespace string
}

// History lists the thread's states, newest first.
func (s *Service) History(ctx context.Context, dep, tid string, in HistoryIn) ([]State, error) {
	t, _, err := s.load(ctx, dep, tid)
	if err != nil {
		return nil, err
	}
	out := []State{}
	if t.graphID() == "" || in.Namespace != "" {
		return out, nil
	}
	cps, err := s.history(ctx, t, in.Before, in.Limit, in.Metadata)
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		out = append(out, snapshot(t, cp))
	}
	return out, nil
}
