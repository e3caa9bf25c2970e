package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// IngestGrace is how long a stored batch waits for its queue message
// before the sweep applies it itself.
const IngestGrace = 5 * time.Minute

// sweepBatch bounds the work of one Sweep per kind.
const sweepBatch = 200

// Sweep repairs what a lost message or a crash leaves behind, and expires
// blobs. It applies ingest batches older than IngestGrace (their message
// was lost: the in-process queue does not survive a restart), publishes
// project events a failed request left pending, and deletes the blob
// folders whose expiry day has passed (run items expire by their TTL).
// Run it periodically (every minute is plenty); each call does a bounded
// amount of work.
func (s *Service) Sweep(ctx context.Context) error {
	var errs []error
	now := s.now()
	// Orphaned ingest batches.
	var due []string
	err := s.blobs.List(ctx, ingestPrefix, func(key string, _ int64) error {
		name := key[strings.LastIndexByte(key, '/')+1:]
		ms, _, _ := strings.Cut(name, "-")
		at, err := strconv.ParseInt(ms, 10, 64)
		if err == nil && now.Sub(time.UnixMilli(at)) > IngestGrace {
			due = append(due, key)
		}
		if len(due) >= sweepBatch {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		errs = append(errs, err)
	}
	for _, key := range due {
		if err := s.applyStored(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	// Pending project events.
	page, err := s.st.Query(ctx, store.Query{Index: "gsi5", PK: pendingEventPK, Limit: sweepBatch})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, it := range page.Items {
			ws, id, ok := strings.Cut(it.Indexes["gsi5"].SK, "#")
			if ok {
				if err := s.publishOutbox(ctx, ws, id); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	// Usage events a crash left in the outbox (publishing twice is
	// harmless: the event id names the trace).
	for shard := 0; shard < usageShards; shard++ {
		page, err := s.st.Query(ctx, store.Query{PK: usagePK(shard), Limit: sweepBatch})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var events []UsageEvent
		for _, it := range page.Items {
			var ev UsageEvent
			if json.Unmarshal(it.Data, &ev) == nil {
				events = append(events, ev)
			}
		}
		if err := s.reportUsage(ctx, events); err != nil {
			errs = append(errs, err)
		}
	}
	// Expired blob folders.
	page, err = s.st.Query(ctx, store.Query{PK: segmentDayPK, SK: store.SKCond{Op: store.SKLess, A: dayOf(now)}, Limit: sweepBatch})
	if err != nil {
		errs = append(errs, err)
	} else {
		for _, it := range page.Items {
			parts := strings.SplitN(it.SK, "#", 3)
			if len(parts) != 3 {
				continue
			}
			if err := blobs.DeletePrefix(ctx, blobAdapter{s.blobs}, runFolder(parts[1], parts[2], parts[0])); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := s.st.Delete(ctx, it.Key, store.Condition{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

var errStop = errors.New("stop")
