package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/google/uuid"
)

// feedbackCreate is a validated feedback create (POST /feedback or a
// multipart feedback part).
type feedbackCreate struct {
	ID                      string
	RunID                   *string
	TraceID                 *string
	SessionID               *string
	Key                     string
	Score                   *float64
	Value                   json.RawMessage
	Correction              json.RawMessage
	Comment                 *string
	FeedbackSource          json.RawMessage
	ComparativeExperimentID *string
	FeedbackGroupID         *string
	Extra                   json.RawMessage
	CreatedAt               *time.Time
}

const maxFeedbackKey = 180

// parseFeedbackCreate decodes a feedback create. Unknown keys are ignored
// (the SDK sends feedbackConfig, start_time, extend_trace_retention, ...).
func parseFeedbackCreate(raw []byte, id string, loc []any, p *web.Problems) *feedbackCreate {
	var w struct {
		ID                      json.RawMessage `json:"id"`
		RunID                   json.RawMessage `json:"run_id"`
		TraceID                 json.RawMessage `json:"trace_id"`
		SessionID               json.RawMessage `json:"session_id"`
		Key                     json.RawMessage `json:"key"`
		Score                   json.RawMessage `json:"score"`
		Value                   json.RawMessage `json:"value"`
		Correction              json.RawMessage `json:"correction"`
		Comment                 json.RawMessage `json:"comment"`
		FeedbackSource          json.RawMessage `json:"feedback_source"`
		ComparativeExperimentID json.RawMessage `json:"comparative_experiment_id"`
		FeedbackGroupID         json.RawMessage `json:"feedback_group_id"`
		Extra                   json.RawMessage `json:"extra"`
		CreatedAt               json.RawMessage `json:"created_at"`
	}
	if err := jsonObject(raw); err != nil {
		p.Add(loc, "Input should be a valid JSON object", "model_attributes_type")
		return nil
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		p.Add(loc, "Input should be a valid JSON object: "+err.Error(), "model_attributes_type")
		return nil
	}
	before := p.Len()
	f := &fieldParser{p: p, loc: loc}
	fc := &feedbackCreate{}
	if bid := f.uuid(w.ID, "id"); bid != nil {
		if id != "" && *bid != id {
			p.Add(f.at("id"), "The id in the body differs from the id of the request", "value_error")
		}
		fc.ID = *bid
	} else if id != "" {
		fc.ID = id
	} else {
		fc.ID = uuid.NewString()
	}
	fc.RunID = f.uuid(w.RunID, "run_id")
	fc.TraceID = f.uuid(w.TraceID, "trace_id")
	fc.SessionID = f.uuid(w.SessionID, "session_id")
	fc.ComparativeExperimentID = f.uuid(w.ComparativeExperimentID, "comparative_experiment_id")
	fc.FeedbackGroupID = f.uuid(w.FeedbackGroupID, "feedback_group_id")
	if k := f.str(w.Key, "key", maxFeedbackKey); k == nil || *k == "" {
		if p.Len() == before {
			p.Add(f.at("key"), "Field required", "missing")
		}
	} else {
		fc.Key = *k
	}
	fc.Score = f.score(w.Score)
	fc.Value = f.rawJSON(w.Value)
	fc.Correction = f.rawJSON(w.Correction)
	fc.Comment = f.str(w.Comment, "comment", 64<<10)
	fc.FeedbackSource = f.object(w.FeedbackSource, "feedback_source")
	fc.Extra = f.object(w.Extra, "extra")
	fc.CreatedAt = f.time(w.CreatedAt, "created_at")
	if fc.RunID == nil && fc.SessionID == nil && p.Len() == before {
		p.Add(f.at("run_id"), "One of run_id or session_id is required", "missing")
	}
	if p.Len() > before {
		return nil
	}
	return fc
}

// score reads a feedback score: a number or a boolean.
func (f *fieldParser) score(raw json.RawMessage) *float64 {
	if isNull(raw) {
		return nil
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	var n float64
	switch x := v.(type) {
	case float64:
		n = x
	case bool:
		if x {
			n = 1
		}
	default:
		f.p.Add(f.at("score"), "Input should be a number or a boolean", "float_type")
		return nil
	}
	if math.IsNaN(n) || math.IsInf(n, 0) || math.Abs(n) > 1e9 {
		f.p.Add(f.at("score"), "Input should be a finite number", "finite_number")
		return nil
	}
	n = math.Round(n*scoreScale) / scoreScale
	return &n
}

// Feedback is the API shape of a feedback.
type Feedback struct {
	ID                      string          `json:"id"`
	RunID                   *string         `json:"run_id"`
	TraceID                 *string         `json:"trace_id"`
	SessionID               *string         `json:"session_id"`
	Key                     string          `json:"key"`
	Score                   *float64        `json:"score"`
	Value                   json.RawMessage `json:"value"`
	Correction              json.RawMessage `json:"correction"`
	Comment                 *string         `json:"comment"`
	FeedbackSource          json.RawMessage `json:"feedback_source"`
	ComparativeExperimentID *string         `json:"comparative_experiment_id"`
	FeedbackGroupID         *string         `json:"feedback_group_id"`
	Extra                   json.RawMessage `json:"extra"`
	CreatedAt               time.Time       `json:"created_at"`
	ModifiedAt              time.Time       `json:"modified_at"`
}

func (f *feedbackRecord) view() Feedback {
	null := func(r json.RawMessage) json.RawMessage {
		if len(r) == 0 {
			return json.RawMessage("null")
		}
		return r
	}
	v := f.Feedback
	v.Value, v.Correction, v.FeedbackSource, v.Extra = null(v.Value), null(v.Correction), null(v.FeedbackSource), null(v.Extra)
	return v
}

func feedbackItem(ws string, f *feedbackRecord) (store.Item, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return store.Item{}, err
	}
	sk := sortTime(f.CreatedAt) + "#" + f.ID
	idx := map[string]store.IndexKey{
		"gsi2": {PK: feedbackByWsPK(ws), SK: sk},
		"gsi3": {PK: feedbackByKeyPK(ws, f.Key), SK: sk},
	}
	if f.RunID != nil {
		idx["gsi1"] = store.IndexKey{PK: feedbackByRunPK(ws, *f.RunID), SK: sk}
	} else if f.Counted != "" {
		// Project-level feedback goes with its project when it is deleted.
		idx["gsi4"] = store.IndexKey{PK: feedbackByProjPK(ws, f.Counted), SK: sk}
	}
	return store.Item{Key: feedbackKey(ws, f.ID), Data: data, Indexes: idx}, nil
}

func (s *Service) loadFeedback(ctx context.Context, ws, id string) (*feedbackRecord, int64, error) {
	it, err := s.st.Get(ctx, feedbackKey(ws, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, &NotFoundError{What: "Feedback", ID: id}
	}
	if err != nil {
		return nil, 0, err
	}
	var f feedbackRecord
	if err := json.Unmarshal(it.Data, &f); err != nil {
		return nil, 0, err
	}
	return &f, it.Version, nil
}

// withFeedback returns the run r (possibly nil: the run is not here yet)
// with its entry for f replaced (or removed when f is nil).
func (s *Service) withFeedback(r *runRecord, runID, id string, f *runFeedback) *runRecord {
	var nr runRecord
	if r != nil {
		nr = *r
	} else {
		now := s.clock()
		nr = runRecord{ID: runID, FirstSeen: now, ExpiresAt: now.Add(s.retentionOf(nil))}
	}
	list := make([]runFeedback, 0, len(nr.Feedback)+1)
	for _, x := range nr.Feedback {
		if x.ID != id {
			list = append(list, x)
		}
	}
	if f != nil {
		list = append(list, *f)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	nr.Feedback = list
	finish(&nr)
	return &nr
}

// createFeedback stores a feedback and counts it in its run's statistics
// (or, without a run, in its project's). The same create sent again is a
// no-op; another feedback with that id is a conflict.
func (s *Service) createFeedback(ctx context.Context, ws string, fc *feedbackCreate) (*feedbackRecord, error) {
	now := s.clock()
	f := &feedbackRecord{Feedback: Feedback{ID: fc.ID, RunID: fc.RunID, TraceID: fc.TraceID, SessionID: fc.SessionID, Key: fc.Key, Score: fc.Score,
		Value: fc.Value, Correction: fc.Correction, Comment: fc.Comment, FeedbackSource: fc.FeedbackSource,
		ComparativeExperimentID: fc.ComparativeExperimentID, FeedbackGroupID: fc.FeedbackGroupID, Extra: fc.Extra,
		CreatedAt: now, ModifiedAt: now}}
	if fc.CreatedAt != nil {
		f.CreatedAt = *fc.CreatedAt
	}
	if f.FeedbackSource == nil {
		f.FeedbackSource = json.RawMessage(`{"type":"api","metadata":{}}`)
	}
	if fc.RunID == nil {
		p, err := s.getProject(ctx, ws, *fc.SessionID)
		if err != nil {
			return nil, err
		}
		f.Counted = p.ID
	}
	for attempt := 0; ; attempt++ {
		if old, _, err := s.loadFeedback(ctx, ws, f.ID); err == nil {
			if same(old.RunID, f.RunID) && old.Key == f.Key && (fc.SessionID == nil || same(old.SessionID, fc.SessionID)) {
				return old, nil
			}
			return nil, fmt.Errorf("%w: feedback %s exists with another run or key", ErrConflict, f.ID)
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		plan := newTxPlan(ws, "")
		if fc.RunID != nil {
			lr, err := s.loadRun(ctx, ws, *fc.RunID)
			if err != nil {
				return nil, err
			}
			if lr.rec != nil && lr.rec.SessionID != "" && f.SessionID == nil {
				sid := lr.rec.SessionID
				f.SessionID = &sid
			}
			r := s.withFeedback(lr.rec, *fc.RunID, f.ID, &runFeedback{ID: f.ID, Key: f.Key, Score: f.Score})
			plan.addRun(lr, r, true)
		} else {
			d := map[string]int64{"sfb.n." + f.Key: 1}
			if f.Score != nil {
				d["sfb.c."+f.Key] = 1
				d["sfb.s."+f.Key] = int64(math.Round(*f.Score * scoreScale))
			}
			plan.stats[f.Counted] = d
		}
		it, err := feedbackItem(ws, f)
		if err != nil {
			return nil, err
		}
		plan.ops = append(plan.ops, store.TxOp{Kind: store.OpPut, Item: it, Cond: store.NotExists()})
		err = s.commit(ctx, plan)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return nil, err
		}
		backoff(ctx, attempt)
	}
}

func same(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// FeedbackUpdate changes a feedback; nil fields are unchanged.
type FeedbackUpdate struct {
	Score      *float64
	ClearScore bool
	Value      json.RawMessage
	Correction json.RawMessage
	Comment    *string
	// ClearComment sets the comment to null.
	ClearComment bool
}

// updateFeedback changes a feedback (and its run's statistics) with
// conditional writes; delete removes it when del is set.
func (s *Service) changeFeedback(ctx context.Context, ws, id string, u *FeedbackUpdate) (*feedbackRecord, error) {
	for attempt := 0; ; attempt++ {
		f, ver, err := s.loadFeedback(ctx, ws, id)
		if err != nil {
			return nil, err
		}
		nf := *f
		if u != nil {
			if u.ClearScore {
				nf.Score = nil
			} else if u.Score != nil {
				nf.Score = u.Score
			}
			if u.Value != nil {
				nf.Value = u.Value
			}
			if u.Correction != nil {
				nf.Correction = u.Correction
			}
			if u.ClearComment {
				nf.Comment = nil
			} else if u.Comment != nil {
				nf.Comment = u.Comment
			}
			nf.ModifiedAt = s.clock()
		}
		plan := newTxPlan(ws, "")
		if f.RunID != nil {
			lr, err := s.loadRun(ctx, ws, *f.RunID)
			if err != nil {
				return nil, err
			}
			var entry *runFeedback
			if u != nil {
				entry = &runFeedback{ID: nf.ID, Key: nf.Key, Score: nf.Score}
			}
			if lr.rec != nil || entry != nil {
				plan.addRun(lr, s.withFeedback(lr.rec, *f.RunID, f.ID, entry), true)
			}
		} else if f.Counted != "" {
			d := map[string]int64{}
			scoreDelta(d, f, -1)
			if u != nil {
				scoreDelta(d, &nf, 1)
			}
			plan.stats[f.Counted] = d
		}
		if u == nil {
			plan.ops = append(plan.ops, store.TxOp{Kind: store.OpDelete, Key: feedbackKey(ws, id), Cond: store.HasVersion(ver)})
		} else {
			it, err := feedbackItem(ws, &nf)
			if err != nil {
				return nil, err
			}
			plan.ops = append(plan.ops, store.TxOp{Kind: store.OpPut, Item: it, Cond: store.HasVersion(ver)})
		}
		err = s.commit(ctx, plan)
		if err == nil {
			return &nf, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return nil, err
		}
		backoff(ctx, attempt)
	}
}

// scoreDelta adds sign × a project-level feedback's share to d.
func scoreDelta(d map[string]int64, f *feedbackRecord, sign int64) {
	d["sfb.n."+f.Key] += sign
	if f.Score != nil {
		d["sfb.c."+f.Key] += sign
		d["sfb.s."+f.Key] += sign * int64(math.Round(*f.Score*scoreScale))
	}
}

// FeedbackQuery selects feedback (GET /feedback).
type FeedbackQuery struct {
	Runs     []string
	Keys     []string
	Sessions []string
	Sources  []string
	Limit    int
	Offset   int
}

// listFeedback reads by run, else by key, else the workspace's, newest
// first, filtering the rest.
func (s *Service) listFeedback(ctx context.Context, ws string, q FeedbackQuery) ([]*feedbackRecord, error) {
	var parts []store.Query
	switch {
	case len(q.Runs) > 0:
		for _, r := range q.Runs {
			parts = append(parts, store.Query{Index: "gsi1", PK: feedbackByRunPK(ws, r)})
		}
	case len(q.Keys) > 0:
		for _, k := range q.Keys {
			parts = append(parts, store.Query{Index: "gsi3", PK: feedbackByKeyPK(ws, k)})
		}
	default:
		parts = append(parts, store.Query{Index: "gsi2", PK: feedbackByWsPK(ws)})
	}
	keep := func(f *feedbackRecord) bool {
		if len(q.Keys) > 0 && !contains(q.Keys, f.Key) {
			return false
		}
		if len(q.Sessions) > 0 && (f.SessionID == nil || !contains(q.Sessions, *f.SessionID)) {
			return false
		}
		if len(q.Sources) > 0 {
			var src struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(f.FeedbackSource, &src)
			if !contains(q.Sources, src.Type) {
				return false
			}
		}
		return true
	}
	want := q.Offset + q.Limit
	var all []*feedbackRecord
	var sks []string
	for _, part := range parts {
		part.Desc = true
		n := 0
		for {
			part.Limit = min(want+1, 1000)
			page, err := s.st.Query(ctx, part)
			if err != nil {
				return nil, err
			}
			for _, it := range page.Items {
				var f feedbackRecord
				if json.Unmarshal(it.Data, &f) != nil || !keep(&f) {
					continue
				}
				all = append(all, &f)
				sks = append(sks, sortTime(f.CreatedAt)+"#"+f.ID)
				n++
			}
			if page.Next == "" || n >= want {
				break
			}
			part.Cursor = page.Next
		}
	}
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return sks[idx[a]] > sks[idx[b]] })
	out := make([]*feedbackRecord, 0, q.Limit)
	for i, j := range idx {
		if i < q.Offset {
			continue
		}
		if len(out) >= q.Limit {
			break
		}
		out = append(out, all[j])
	}
	return out, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
