package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// LatestTag names the current version in as_of.
const LatestTag = "latest"

// resolve turns as_of (empty, "latest", a timestamp or a tag) into a
// version sequence number: 0 is before the first version (no examples).
func (s *Service) resolve(ctx context.Context, d datasetRec, asOf string) (int64, error) {
	if asOf == "" || asOf == LatestTag {
		return d.Seq, nil
	}
	if t, err := parseTime(asOf); err == nil {
		v, ok, err := s.versionAt(ctx, d.ID, t)
		if err != nil || !ok {
			return 0, err
		}
		return v.Seq, nil
	}
	tg, err := s.tag(ctx, d.ID, asOf)
	if err != nil {
		return 0, err
	}
	return tg.Seq, nil
}

// versionAt is the latest version at or before t (one item read).
func (s *Service) versionAt(ctx context.Context, ds string, t time.Time) (versionRec, bool, error) {
	pg, err := s.st.Query(ctx, store.Query{PK: verPK(ds),
		SK:   store.SKCond{Op: store.SKBetween, A: "v#", B: versionKey(ds, t.Truncate(time.Microsecond)).SK},
		Desc: true, Limit: 1})
	if err != nil || len(pg.Items) == 0 {
		return versionRec{}, false, err
	}
	var v versionRec
	return v, true, decodeJSON(pg.Items[0].Data, &v)
}

func (s *Service) tag(ctx context.Context, ds, tag string) (tagRec, error) {
	it, err := s.st.Get(ctx, tagKey(ds, tag))
	if errors.Is(err, store.ErrNotFound) {
		return tagRec{}, notFound("Dataset version tag %q not found", tag)
	}
	if err != nil {
		return tagRec{}, err
	}
	var t tagRec
	return t, decodeJSON(it.Data, &t)
}

// ListVersions returns a dataset's versions, newest first.
func (s *Service) ListVersions(ctx context.Context, ws, dataset string, limit, offset int) ([]Version, error) {
	if _, _, err := s.getDataset(ctx, ws, dataset); err != nil {
		return nil, err
	}
	out := []Version{}
	skipped := 0
	q := store.Query{PK: verPK(dataset), SK: store.SKCond{Op: store.SKBeginsWith, A: "v#"}, Desc: true}
	errDone := errors.New("done")
	err := s.each(ctx, q, func(it store.Item) error {
		if skipped < offset {
			skipped++
			return nil
		}
		var v versionRec
		if err := decodeJSON(it.Data, &v); err != nil {
			return err
		}
		out = append(out, Version{AsOf: v.AsOf, Tags: nonNil(v.Tags)})
		if len(out) >= limit {
			return errDone
		}
		return nil
	})
	if err != nil && !errors.Is(err, errDone) {
		return nil, err
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// GetVersion resolves as_of or a tag to its version (GET
// /datasets/{id}/version). A timestamp before the first version, or a
// dataset without versions, is not found.
func (s *Service) GetVersion(ctx context.Context, ws, dataset, asOf, tag string) (Version, error) {
	d, _, err := s.getDataset(ctx, ws, dataset)
	if err != nil {
		return Version{}, err
	}
	var at time.Time
	switch {
	case tag != "" && tag != LatestTag:
		t, err := s.tag(ctx, dataset, tag)
		if err != nil {
			return Version{}, err
		}
		at = t.AsOf
	case asOf != "" && asOf != LatestTag:
		t, err := parseTime(asOf)
		if err != nil {
			return s.GetVersion(ctx, ws, dataset, "", asOf)
		}
		v, ok, err := s.versionAt(ctx, dataset, t)
		if err != nil {
			return Version{}, err
		}
		if !ok {
			return Version{}, notFound("Dataset %s has no version at or before %s", dataset, asOf)
		}
		return Version{AsOf: v.AsOf, Tags: nonNil(v.Tags)}, nil
	default:
		if d.Seq == 0 {
			return Version{}, notFound("Dataset %s has no version yet", dataset)
		}
		at = d.VersionAt
	}
	it, err := s.st.Get(ctx, versionKey(dataset, at))
	if err != nil {
		return Version{}, err
	}
	var v versionRec
	if err := decodeJSON(it.Data, &v); err != nil {
		return Version{}, err
	}
	return Version{AsOf: v.AsOf, Tags: nonNil(v.Tags)}, nil
}

// TagVersion points tag at the version with exactly that timestamp, moving
// it from the version it named before.
func (s *Service) TagVersion(ctx context.Context, ws, dataset string, asOf time.Time, tag string) (Version, error) {
	if tag == "" || len(tag) > 256 || tag == LatestTag {
		return Version{}, invalid([]any{"body", "tag"}, "tag must be 1 to 256 characters and not %q", LatestTag)
	}
	if _, err := parseTime(tag); err == nil {
		return Version{}, invalid([]any{"body", "tag"}, "a tag cannot be a timestamp")
	}
	if _, _, err := s.getDataset(ctx, ws, dataset); err != nil {
		return Version{}, err
	}
	asOf = asOf.UTC().Truncate(time.Microsecond)
	for range maxRetries {
		vit, err := s.st.Get(ctx, versionKey(dataset, asOf))
		if errors.Is(err, store.ErrNotFound) {
			return Version{}, notFound("Dataset %s has no version at exactly %s", dataset, asOf.Format(time.RFC3339Nano))
		}
		if err != nil {
			return Version{}, err
		}
		var v versionRec
		if err := decodeJSON(vit.Data, &v); err != nil {
			return Version{}, err
		}
		tagCond := store.NotExists()
		var ops []store.TxOp
		old, err := s.st.Get(ctx, tagKey(dataset, tag))
		switch {
		case err == nil:
			tagCond = store.HasVersion(old.Version)
			var t tagRec
			if err := decodeJSON(old.Data, &t); err != nil {
				return Version{}, err
			}
			if t.Seq == v.Seq {
				return Version{AsOf: v.AsOf, Tags: nonNil(v.Tags)}, nil
			}
			pit, err := s.st.Get(ctx, versionKey(dataset, t.AsOf))
			if err == nil {
				var pv versionRec
				if err := decodeJSON(pit.Data, &pv); err != nil {
					return Version{}, err
				}
				pv.Tags = without(pv.Tags, tag)
				ops = append(ops, store.TxOp{Kind: store.OpPut, Item: store.Item{Key: pit.Key, Data: mustJSON(pv)}, Cond: store.HasVersion(pit.Version)})
			} else if !errors.Is(err, store.ErrNotFound) {
				return Version{}, err
			}
		case !errors.Is(err, store.ErrNotFound):
			return Version{}, err
		}
		v.Tags = append(without(v.Tags, tag), tag)
		ops = append(ops,
			store.TxOp{Kind: store.OpPut, Item: store.Item{Key: vit.Key, Data: mustJSON(v)}, Cond: store.HasVersion(vit.Version)},
			store.TxOp{Kind: store.OpPut, Item: store.Item{Key: tagKey(dataset, tag), Data: mustJSON(tagRec{Seq: v.Seq, AsOf: v.AsOf})}, Cond: tagCond})
		err = s.st.Transact(ctx, ops)
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		if err != nil {
			return Version{}, err
		}
		return Version{AsOf: v.AsOf, Tags: v.Tags}, nil
	}
	return Version{}, fmt.Errorf("datasets: tag %q: too much contention", tag)
}

func without(tags []string, t string) []string {
	out := []string{}
	for _, x := range tags {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

// ---- experiments (consumer of TopicExperiment) ----

// ExperimentEvent is the payload of TopicExperiment.
type ExperimentEvent struct {
	WorkspaceID        string     `json:"workspace_id"`
	ProjectID          string     `json:"project_id"`
	ReferenceDatasetID string     `json:"reference_dataset_id"`
	StartTime          *time.Time `json:"start_time"`
	Deleted            bool       `json:"deleted"`
}

// expRec is what the dataset knows of one experiment: a tombstone once
// deleted, so a redelivered creation never counts again.
type expRec struct {
	StartTime time.Time `json:"start_time"`
	Deleted   bool      `json:"deleted,omitempty"`
}

// HandleExperiment keeps a dataset's session_count and
// last_session_start_time from experiment events. It is idempotent: each
// (dataset, project) is counted once, and a deletion stays a deletion.
// Malformed events and events about datasets that do not exist (any more)
// are dropped.
func (s *Service) HandleExperiment(ctx context.Context, payload json.RawMessage) error {
	var ev ExperimentEvent
	if err := json.Unmarshal(payload, &ev); err != nil || ev.WorkspaceID == "" || ev.ProjectID == "" || ev.ReferenceDatasetID == "" {
		s.log.Warn("datasets: dropping a malformed experiment event")
		return nil
	}
	key := store.Key{PK: expPK(ev.ReferenceDatasetID), SK: ev.ProjectID}
	for range maxRetries {
		d, ver, err := s.getDataset(ctx, ev.WorkspaceID, ev.ReferenceDatasetID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var cur expRec
		markCond := store.NotExists()
		exists := false
		if it, err := s.st.Get(ctx, key); err == nil {
			if err := decodeJSON(it.Data, &cur); err != nil {
				return err
			}
			markCond, exists = store.HasVersion(it.Version), true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if cur.Deleted {
			return nil
		}
		next := expRec{Deleted: ev.Deleted}
		switch {
		case ev.StartTime != nil:
			next.StartTime = ev.StartTime.UTC().Truncate(time.Microsecond)
		case exists:
			next.StartTime = cur.StartTime
		default:
			next.StartTime = s.clock()
		}
		if exists && !next.Deleted && next.StartTime.Equal(cur.StartTime) {
			return nil // a redelivery
		}
		switch {
		case next.Deleted && exists:
			d.SessionCount--
		case !next.Deleted && !exists:
			d.SessionCount++
		}
		mark := store.Item{Key: key, Data: mustJSON(next)}
		if !next.Deleted {
			mark.Indexes = map[string]store.IndexKey{"gsi1": {PK: expPK(ev.ReferenceDatasetID), SK: ts(next.StartTime) + "#" + ev.ProjectID}}
		}
		// The latest start among the live experiments, this one's change
		// included: one index read.
		last, err := s.latestSession(ctx, ev.ReferenceDatasetID, ev.ProjectID)
		if err != nil {
			return err
		}
		if !next.Deleted && (last == nil || next.StartTime.After(*last)) {
			t := next.StartTime
			last = &t
		}
		d.LastSessionStartTime = last
		if d.SessionCount < 0 {
			d.SessionCount = 0
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: mark, Cond: markCond},
			{Kind: store.OpPut, Item: datasetItem(ev.WorkspaceID, d), Cond: store.HasVersion(ver)},
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return err
	}
	return fmt.Errorf("datasets: experiment %s: too much contention", ev.ProjectID)
}

// latestSession is the latest start time among the dataset's live
// experiments other than project.
func (s *Service) latestSession(ctx context.Context, ds, project string) (*time.Time, error) {
	q := store.Query{Index: "gsi1", PK: expPK(ds), Desc: true, Limit: 2}
	pg, err := s.st.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, it := range pg.Items {
		if it.SK == project {
			continue
		}
		var r expRec
		if err := decodeJSON(it.Data, &r); err != nil {
			return nil, err
		}
		t := r.StartTime
		return &t, nil
	}
	return nil, nil
}
