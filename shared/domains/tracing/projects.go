package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// MaxRetentionDays bounds a project's retention (the longest trace tier).
const MaxRetentionDays = 400

// Trace tiers (LangSmith's names for the two usual retentions).
const (
	TierLong  = "longlived"  // 400 days
	TierShort = "shortlived" // 14 days
)

// outboxMessage is an event a project write must publish; it is kept on
// the project until published, so a failure after the write is repaired
// by the sweep.
type outboxMessage struct {
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
}

type storedProject struct {
	projectRecord
	Outbox []outboxMessage `json:"outbox,omitempty"`
}

func projectItem(ws string, p *storedProject) (store.Item, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return store.Item{}, err
	}
	idx := map[string]store.IndexKey{"gsi1": {}, "gsi2": {}, "gsi3": {}, "gsi4": {}, "gsi5": {}}
	if !p.Deleted {
		tsk := sortTime(p.StartTime) + "#" + p.ID
		idx["gsi1"] = store.IndexKey{PK: projectByNamePK(ws), SK: nameKey(p.Name) + "#" + p.ID}
		idx["gsi2"] = store.IndexKey{PK: projectByTimePK(ws), SK: tsk}
		if p.ReferenceDatasetID != nil {
			idx["gsi3"] = store.IndexKey{PK: projectByDatasetPK(ws, *p.ReferenceDatasetID), SK: tsk}
		} else {
			idx["gsi4"] = store.IndexKey{PK: projectRefFreePK(ws), SK: tsk}
		}
	}
	if len(p.Outbox) > 0 {
		idx["gsi5"] = store.IndexKey{PK: pendingEventPK, SK: ws + "#" + p.ID}
	}
	return store.Item{Key: projectKey(ws, p.ID), Data: data, Indexes: idx}, nil
}

func (s *Service) loadProject(ctx context.Context, ws, id string) (*storedProject, int64, error) {
	it, err := s.st.Get(ctx, projectKey(ws, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, &NotFoundError{What: "Project", ID: id}
	}
	if err != nil {
		return nil, 0, err
	}
	var p storedProject
	if err := json.Unmarshal(it.Data, &p); err != nil {
		return nil, 0, err
	}
	return &p, it.Version, nil
}

// getProject returns a live project of the workspace, or ErrNotFound.
func (s *Service) getProject(ctx context.Context, ws, id string) (*projectRecord, error) {
	p, _, err := s.loadProject(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	if p.Deleted {
		return nil, &NotFoundError{What: "Project", ID: id}
	}
	return &p.projectRecord, nil
}

// projectByName returns the live project of that name, or ErrNotFound.
func (s *Service) projectByName(ctx context.Context, ws, name string) (*projectRecord, error) {
	it, err := s.st.Get(ctx, projectNameKey(ws, name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, &NotFoundError{What: "Project", ID: name}
	}
	if err != nil {
		return nil, err
	}
	var claim struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(it.Data, &claim); err != nil {
		return nil, err
	}
	return s.getProject(ctx, ws, claim.ID)
}

// ProjectCreate creates a project.
type ProjectCreate struct {
	ID                 string
	Name               string
	Description        *string
	Extra              map[string]json.RawMessage
	ReferenceDatasetID *string
	DefaultDatasetID   *string
	StartTime          *time.Time
	EndTime            *time.Time
	RetentionDays      int
}

// ensureProject returns the project of that name, creating it when
// missing; deployment, when set, is recorded in its metadata.
func (s *Service) ensureProject(ctx context.Context, ws, name string, deployment *string) (*projectRecord, error) {
	for attempt := 0; ; attempt++ {
		p, err := s.projectByName(ctx, ws, name)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		c := ProjectCreate{Name: name}
		if deployment != nil {
			md, _ := json.Marshal(map[string]string{"deployment_id": *deployment})
			c.Extra = map[string]json.RawMessage{"metadata": md}
		}
		p, err = s.createProject(ctx, ws, c)
		if err == nil || !errors.Is(err, ErrConflict) || attempt >= maxAttempts {
			return p, err
		}
	}
}

// createProject creates a project, claiming its name. A taken name is
// ErrConflict.
func (s *Service) createProject(ctx context.Context, ws string, c ProjectCreate) (*projectRecord, error) {
	now := s.clock()
	id := c.ID
	if id == "" {
		id = uuid.NewString()
	}
	p := &storedProject{projectRecord: projectRecord{ID: id, WorkspaceID: ws, Name: c.Name, Description: c.Description,
		StartTime: now, EndTime: c.EndTime, Extra: c.Extra, ReferenceDatasetID: c.ReferenceDatasetID,
		DefaultDatasetID: c.DefaultDatasetID, RetentionDays: c.RetentionDays}}
	if c.StartTime != nil {
		p.StartTime = *c.StartTime
	}
	if p.RetentionDays <= 0 {
		p.RetentionDays = s.retention
	}
	if p.ReferenceDatasetID != nil {
		p.Outbox = append(p.Outbox, experimentMessage(ws, &p.projectRecord, false))
	}
	it, err := projectItem(ws, p)
	if err != nil {
		return nil, err
	}
	claim, _ := json.Marshal(map[string]string{"id": id})
	err = s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: it, Cond: store.NotExists()},
		{Kind: store.OpPut, Item: store.Item{Key: projectNameKey(ws, c.Name), Data: claim}, Cond: store.NotExists()},
	})
	var tce *store.TxConditionError
	if errors.As(err, &tce) {
		if tce.Index == 0 {
			return nil, fmt.Errorf("%w: a project with id %s exists", ErrConflict, id)
		}
		return nil, fmt.Errorf("%w: a project named %q exists", ErrConflict, c.Name)
	}
	if err != nil {
		return nil, err
	}
	s.flushOutbox(ctx, ws, id)
	return &p.projectRecord, nil
}

func experimentMessage(ws string, p *projectRecord, deleted bool) outboxMessage {
	ev := ExperimentEvent{WorkspaceID: ws, ProjectID: p.ID, StartTime: p.StartTime, Deleted: deleted}
	if p.ReferenceDatasetID != nil {
		ev.ReferenceDatasetID = *p.ReferenceDatasetID
	}
	raw, _ := json.Marshal(ev)
	return outboxMessage{Topic: TopicExperiment, Payload: raw}
}

// flushOutbox publishes a project's pending messages and clears them. A
// failure is logged and left for the sweep: the write that queued them
// has succeeded.
func (s *Service) flushOutbox(ctx context.Context, ws, id string) {
	if err := s.publishOutbox(ctx, ws, id); err != nil {
		s.log.Warn("tracing: project events left for the sweep", "workspace_id", ws, "project_id", id, "error", err.Error())
	}
}

func (s *Service) publishOutbox(ctx context.Context, ws, id string) error {
	for attempt := 0; ; attempt++ {
		p, ver, err := s.loadProject(ctx, ws, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(p.Outbox) == 0 {
			return nil
		}
		for _, m := range p.Outbox {
			if err := s.queue.Enqueue(ctx, m.Topic, m.Payload); err != nil {
				return err
			}
		}
		sent := len(p.Outbox)
		p.Outbox = p.Outbox[sent:]
		it, err := projectItem(ws, p)
		if err != nil {
			return err
		}
		_, err = s.st.Put(ctx, it, store.HasVersion(ver))
		if err == nil {
			return nil
		}
		// Changed meanwhile: publish what is pending now (consumers are
		// idempotent, so a message sent twice does no harm).
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return err
		}
	}
}

// ProjectPatch changes a project; nil fields are unchanged.
type ProjectPatch struct {
	Name             *string
	Description      *string
	Extra            map[string]json.RawMessage
	EndTime          *time.Time
	DefaultDatasetID *string
	RetentionDays    int
	// SetMetadata sets keys of extra.metadata (read and written together,
	// so a concurrent change of other keys is kept).
	SetMetadata map[string]json.RawMessage
}

func (s *Service) patchProject(ctx context.Context, ws, id string, u ProjectPatch) (*projectRecord, error) {
	for attempt := 0; ; attempt++ {
		p, ver, err := s.loadProject(ctx, ws, id)
		if err != nil {
			return nil, err
		}
		if p.Deleted {
			return nil, &NotFoundError{What: "Project", ID: id}
		}
		oldName := p.Name
		if u.Name != nil {
			p.Name = *u.Name
		}
		if u.Description != nil {
			p.Description = u.Description
		}
		if u.Extra != nil {
			p.Extra = u.Extra
		}
		if len(u.SetMetadata) > 0 {
			var md map[string]json.RawMessage
			_ = json.Unmarshal(p.Extra["metadata"], &md)
			if md == nil {
				md = map[string]json.RawMessage{}
			}
			for k, v := range u.SetMetadata {
				md[k] = v
			}
			extra := make(map[string]json.RawMessage, len(p.Extra)+1)
			for k, v := range p.Extra {
				extra[k] = v
			}
			extra["metadata"], _ = json.Marshal(md)
			p.Extra = extra
		}
		if u.EndTime != nil {
			p.EndTime = u.EndTime
		}
		if u.DefaultDatasetID != nil {
			p.DefaultDatasetID = u.DefaultDatasetID
		}
		if u.RetentionDays > 0 {
			p.RetentionDays = u.RetentionDays
		}
		it, err := projectItem(ws, p)
		if err != nil {
			return nil, err
		}
		ops := []store.TxOp{{Kind: store.OpPut, Item: it, Cond: store.HasVersion(ver)}}
		if p.Name != oldName {
			claim, _ := json.Marshal(map[string]string{"id": id})
			ops = append(ops,
				store.TxOp{Kind: store.OpPut, Item: store.Item{Key: projectNameKey(ws, p.Name), Data: claim}, Cond: store.NotExists()},
				store.TxOp{Kind: store.OpDelete, Key: projectNameKey(ws, oldName)})
		}
		err = s.st.Transact(ctx, ops)
		var tce *store.TxConditionError
		if errors.As(err, &tce) && tce.Index == 1 {
			return nil, fmt.Errorf("%w: a project named %q exists", ErrConflict, p.Name)
		}
		if err == nil {
			return &p.projectRecord, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return nil, err
		}
	}
}

// deleteProject hides a project at once (its name is free again) and
// queues the removal of its runs; an experiment's dataset hears of it.
func (s *Service) deleteProject(ctx context.Context, ws, id string) error {
	for attempt := 0; ; attempt++ {
		p, ver, err := s.loadProject(ctx, ws, id)
		if err != nil {
			return err
		}
		if p.Deleted {
			return &NotFoundError{What: "Project", ID: id}
		}
		p.Deleted = true
		purge, _ := json.Marshal(PurgeMessage{WorkspaceID: ws, ProjectID: id})
		p.Outbox = append(p.Outbox, outboxMessage{Topic: TopicPurge, Payload: purge})
		if p.ReferenceDatasetID != nil {
			p.Outbox = append(p.Outbox, experimentMessage(ws, &p.projectRecord, true))
		}
		it, err := projectItem(ws, p)
		if err != nil {
			return err
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: it, Cond: store.HasVersion(ver)},
			{Kind: store.OpDelete, Key: projectNameKey(ws, p.Name)},
		})
		if err == nil {
			s.flushOutbox(ctx, ws, id)
			return nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || attempt >= maxAttempts {
			return err
		}
	}
}

// ProjectQuery selects projects (GET /sessions).
type ProjectQuery struct {
	IDs              []string
	Name             string
	NameContains     string
	ReferenceDataset string
	// ReferenceFree: nil for all, true for projects without a reference
	// dataset, false for projects with one.
	ReferenceFree *bool
	Metadata      map[string]any
	SortBy        string // "start_time" (default) or "name"
	Desc          bool
	Limit, Offset int
}

func (s *Service) listProjects(ctx context.Context, ws string, q ProjectQuery) ([]*projectRecord, error) {
	keep := func(p *projectRecord) bool {
		if p.Deleted {
			return false
		}
		if q.NameContains != "" && !strings.Contains(strings.ToLower(p.Name), strings.ToLower(q.NameContains)) {
			return false
		}
		if q.Name != "" && p.Name != q.Name {
			return false
		}
		if q.ReferenceDataset != "" && (p.ReferenceDatasetID == nil || *p.ReferenceDatasetID != q.ReferenceDataset) {
			return false
		}
		if q.ReferenceFree != nil && *q.ReferenceFree != (p.ReferenceDatasetID == nil) {
			return false
		}
		return metadataMatches(p.Extra, q.Metadata)
	}
	var direct []*projectRecord
	switch {
	case len(q.IDs) > 0:
		for _, id := range q.IDs {
			p, err := s.getProject(ctx, ws, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			direct = append(direct, p)
		}
	case q.Name != "":
		p, err := s.projectByName(ctx, ws, q.Name)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		if p != nil {
			direct = append(direct, p)
		}
	}
	if len(q.IDs) > 0 || q.Name != "" {
		var out []*projectRecord
		for _, p := range direct {
			if keep(p) {
				out = append(out, p)
			}
		}
		sortProjects(out, q.SortBy, q.Desc)
		return window(out, q.Offset, q.Limit), nil
	}
	query := store.Query{Index: "gsi2", PK: projectByTimePK(ws), Desc: q.Desc}
	switch {
	case q.ReferenceDataset != "":
		query = store.Query{Index: "gsi3", PK: projectByDatasetPK(ws, q.ReferenceDataset), Desc: q.Desc}
	case q.ReferenceFree != nil && *q.ReferenceFree:
		query = store.Query{Index: "gsi4", PK: projectRefFreePK(ws), Desc: q.Desc}
	}
	if q.SortBy == "name" && q.ReferenceDataset == "" && q.ReferenceFree == nil {
		query = store.Query{Index: "gsi1", PK: projectByNamePK(ws), Desc: q.Desc}
	}
	var out []*projectRecord
	want := q.Offset + q.Limit
	for {
		query.Limit = min(want+1, 1000)
		page, err := s.st.Query(ctx, query)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var p storedProject
			if json.Unmarshal(it.Data, &p) != nil || !keep(&p.projectRecord) {
				continue
			}
			out = append(out, &p.projectRecord)
		}
		if page.Next == "" || len(out) >= want {
			break
		}
		query.Cursor = page.Next
	}
	if q.SortBy == "name" && (q.ReferenceDataset != "" || q.ReferenceFree != nil) {
		sortProjects(out, "name", q.Desc)
	}
	return window(out, q.Offset, q.Limit), nil
}

func sortProjects(ps []*projectRecord, by string, desc bool) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if desc {
			a, b = b, a
		}
		if by == "name" {
			return a.Name < b.Name
		}
		return a.StartTime.Before(b.StartTime)
	})
}

func window[T any](list []T, offset, limit int) []T {
	if offset >= len(list) {
		return []T{}
	}
	list = list[offset:]
	if len(list) > limit {
		list = list[:limit]
	}
	return list
}

// metadataMatches reports whether extra.metadata holds every key of want
// with an equal value.
func metadataMatches(extra map[string]json.RawMessage, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	var md map[string]any
	if raw, ok := extra["metadata"]; !ok || json.Unmarshal(raw, &md) != nil {
		return false
	}
	for k, v := range want {
		a, _ := json.Marshal(md[k])
		b, _ := json.Marshal(v)
		if _, ok := md[k]; !ok || string(a) != string(b) {
			return false
		}
	}
	return true
}

// ProjectStats are a project's statistics, read from its counters.
type ProjectStats struct {
	RunCount             int64                    `json:"run_count"`
	TraceCount           int64                    `json:"trace_count"`
	LatencyP50           *float64                 `json:"latency_p50"`
	LatencyP99           *float64                 `json:"latency_p99"`
	FirstTokenP50        *float64                 `json:"first_token_p50"`
	FirstTokenP99        *float64                 `json:"first_token_p99"`
	TotalTokens          int64                    `json:"total_tokens"`
	PromptTokens         int64                    `json:"prompt_tokens"`
	CompletionTokens     int64                    `json:"completion_tokens"`
	TotalCost            *string                  `json:"total_cost"`
	PromptCost           *string                  `json:"prompt_cost"`
	CompletionCost       *string                  `json:"completion_cost"`
	ErrorRate            *float64                 `json:"error_rate"`
	FeedbackStats        map[string]FeedbackStats `json:"feedback_stats"`
	SessionFeedbackStats map[string]FeedbackStats `json:"session_feedback_stats"`
	LastRunStartTime     *time.Time               `json:"last_run_start_time"`
}

// FeedbackStats are the count and mean score of one feedback key.
type FeedbackStats struct {
	N   int64    `json:"n"`
	Avg *float64 `json:"avg"`
}

// projectStats reads a project's counters (one item) and its latest run
// (one index item).
func (s *Service) projectStats(ctx context.Context, ws, id string) (*ProjectStats, error) {
	it, err := s.st.Get(ctx, statsKey(ws, id))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	st := statsFromNums(it.Nums)
	page, err := s.st.Query(ctx, store.Query{Index: "gsi1", PK: projectRunsPK(ws, id), Desc: true, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(page.Items) > 0 {
		var r runRecord
		if json.Unmarshal(page.Items[0].Data, &r) == nil {
			t := r.StartTime
			st.LastRunStartTime = &t
		}
	}
	return st, nil
}

func statsFromNums(n map[string]int64) *ProjectStats {
	st := &ProjectStats{RunCount: n["runs"], TraceCount: n["roots"], TotalTokens: n["tt"], PromptTokens: n["pt"], CompletionTokens: n["ct"],
		FeedbackStats: map[string]FeedbackStats{}, SessionFeedbackStats: map[string]FeedbackStats{}}
	var lat, ft [histBuckets]int64
	for k, v := range n {
		switch {
		case strings.HasPrefix(k, "lat."):
			if i, err := strconv.Atoi(k[4:]); err == nil && i >= 0 && i < histBuckets {
				lat[i] = v
			}
		case strings.HasPrefix(k, "ft."):
			if i, err := strconv.Atoi(k[3:]); err == nil && i >= 0 && i < histBuckets {
				ft[i] = v
			}
		case strings.HasPrefix(k, "fb.n."):
			st.FeedbackStats[k[5:]] = feedbackStatsOf(n, "fb.", k[5:])
		case strings.HasPrefix(k, "sfb.n."):
			st.SessionFeedbackStats[k[6:]] = feedbackStatsOf(n, "sfb.", k[6:])
		}
	}
	for key, f := range st.FeedbackStats {
		if f.N <= 0 {
			delete(st.FeedbackStats, key)
		}
	}
	for key, f := range st.SessionFeedbackStats {
		if f.N <= 0 {
			delete(st.SessionFeedbackStats, key)
		}
	}
	st.LatencyP50, st.LatencyP99 = percentile(lat[:], 0.5), percentile(lat[:], 0.99)
	st.FirstTokenP50, st.FirstTokenP99 = percentile(ft[:], 0.5), percentile(ft[:], 0.99)
	if n["roots"] > 0 {
		r := float64(n["root_errors"]) / float64(n["roots"])
		st.ErrorRate = &r
	}
	if _, ok := n["tc"]; ok {
		st.TotalCost, st.PromptCost, st.CompletionCost = decimal(n["tc"]), decimal(n["pc"]), decimal(n["cc"])
	}
	return st
}

func feedbackStatsOf(n map[string]int64, prefix, key string) FeedbackStats {
	f := FeedbackStats{N: n[prefix+"n."+key]}
	if c := n[prefix+"c."+key]; c > 0 {
		avg := float64(n[prefix+"s."+key]) / scoreScale / float64(c)
		f.Avg = &avg
	}
	return f
}

// percentile reads the q-quantile from a histogram (nil when empty).
func percentile(h []int64, q float64) *float64 {
	var total int64
	for _, c := range h {
		if c > 0 {
			total += c
		}
	}
	if total == 0 {
		return nil
	}
	// Nearest rank: the smallest value with at least q of the values at
	// or below it.
	rank := int64(math.Ceil(q * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h {
		if c <= 0 {
			continue
		}
		seen += c
		if seen >= rank {
			v := histValue(i)
			return &v
		}
	}
	return nil
}

// decimal renders nano-dollars as a decimal string.
func decimal(nano int64) *string {
	neg := nano < 0
	if neg {
		nano = -nano
	}
	s := strconv.FormatInt(nano/1e9, 10)
	if frac := nano % 1e9; frac != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", frac), "0")
	}
	if neg {
		s = "-" + s
	}
	return &s
}

// HandleProjectEnsure is the consumer of TopicProjectEnsure: it makes sure
// the workspace has a project of that name (a deployment's project), and
// records the deployment in its metadata. Idempotent.
func (s *Service) HandleProjectEnsure(ctx context.Context, payload json.RawMessage) error {
	var m ProjectEnsure
	if err := json.Unmarshal(payload, &m); err != nil || m.WorkspaceID == "" || strings.TrimSpace(m.Name) == "" || len(m.Name) > maxNameLen {
		s.log.Error("tracing: dropping a malformed project.ensure message", "error", fmt.Sprint(err))
		return nil
	}
	var dep *string
	if m.DeploymentID != "" {
		dep = &m.DeploymentID
	}
	p, err := s.ensureProject(ctx, m.WorkspaceID, m.Name, dep)
	if err != nil || dep == nil {
		return err
	}
	// A project that existed before the deployment learns its id too.
	var md map[string]json.RawMessage
	_ = json.Unmarshal(p.Extra["metadata"], &md)
	want, _ := json.Marshal(*dep)
	if string(md["deployment_id"]) == string(want) {
		return nil
	}
	_, err = s.patchProject(ctx, m.WorkspaceID, p.ID, ProjectPatch{SetMetadata: map[string]json.RawMessage{"deployment_id": want}})
	if errors.Is(err, ErrNotFound) {
		return nil // deleted meanwhile
	}
	return err
}

// HandleProjectRelease is the consumer of TopicProjectRelease: the
// project of that name is deleted (its runs purged) if it is still the
// deployment's, that is, if its metadata names that deployment; a project
// adopted by another deployment, or never created, is left alone.
// Idempotent.
func (s *Service) HandleProjectRelease(ctx context.Context, payload json.RawMessage) error {
	var m ProjectEnsure
	if err := json.Unmarshal(payload, &m); err != nil || m.WorkspaceID == "" || m.Name == "" || m.DeploymentID == "" {
		s.log.Error("tracing: dropping a malformed project.release message", "error", fmt.Sprint(err))
		return nil
	}
	p, err := s.projectByName(ctx, m.WorkspaceID, m.Name)
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return err
	}
	var md map[string]json.RawMessage
	_ = json.Unmarshal(p.Extra["metadata"], &md)
	var dep string
	if json.Unmarshal(md["deployment_id"], &dep) != nil || dep != m.DeploymentID {
		return nil
	}
	if err := s.deleteProject(ctx, m.WorkspaceID, p.ID); err != nil && !errors.As(err, &nf) {
		return err
	}
	return nil
}
