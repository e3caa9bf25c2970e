package datasets

import (
	"context"
	"errors"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// sweepBudget bounds the items one Sweep deletes, so a round stays short;
// a large dataset is purged over several rounds.
const sweepBudget = 2000

// Sweep purges the examples, revisions, blocks, versions and experiment
// marks of deleted datasets (they are unreachable from the moment of the
// delete). It is idempotent and resumes where a previous round stopped.
func (s *Service) Sweep(ctx context.Context) error {
	budget := sweepBudget
	pg, err := s.st.Query(ctx, store.Query{PK: "dsgc", Limit: 10})
	if err != nil {
		return err
	}
	for _, it := range pg.Items {
		ds := it.SK
		done, err := s.purge(ctx, ds, &budget)
		if err != nil {
			return err
		}
		if !done {
			return nil
		}
		if err := s.st.Delete(ctx, it.Key, store.Condition{}); err != nil {
			return err
		}
	}
	return nil
}

// purge deletes one dataset's items, an example at a time (its revisions
// last, since they say where its blocks are).
func (s *Service) purge(ctx context.Context, ds string, budget *int) (bool, error) {
	errBudget := errors.New("budget")
	var group []revision
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		var keys []store.Key
		for i, r := range group {
			keys = append(keys, openKey(ds, r.ID, r.Seq))
			if i+1 < len(group) {
				for _, b := range blocks(r.Seq, group[i+1].Seq) {
					keys = append(keys, store.Key{PK: segPK(ds, b.level, b.node), SK: orderSK(r.Example)})
				}
			}
		}
		id := group[0].ID
		if it, err := s.st.Get(ctx, headKey(id)); err == nil {
			var h headRec
			if decodeJSON(it.Data, &h) == nil && h.Dataset == ds {
				keys = append(keys, headKey(id))
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		for _, r := range group {
			keys = append(keys, revKey(ds, r.ID, r.Seq))
		}
		for _, k := range keys {
			if err := s.st.Delete(ctx, k, store.Condition{}); err != nil {
				return err
			}
		}
		*budget -= len(keys)
		group = group[:0]
		if *budget <= 0 {
			return errBudget
		}
		return nil
	}
	err := s.each(ctx, store.Query{PK: revPK(ds)}, func(it store.Item) error {
		var r revision
		if err := decodeJSON(it.Data, &r); err != nil {
			return err
		}
		if len(group) > 0 && group[0].ID != r.ID {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, r)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if errors.Is(err, errBudget) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, pk := range []string{verPK(ds), expPK(ds)} {
		err := s.each(ctx, store.Query{PK: pk}, func(it store.Item) error {
			*budget--
			return s.st.Delete(ctx, it.Key, store.Condition{})
		})
		if err != nil {
			return false, err
		}
	}
	return true, nil
}
