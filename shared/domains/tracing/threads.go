package tracing

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// ThreadSummary is one conversation thread of a project: the runs whose
// metadata names it (thread_id, session_id or conversation_id).
type ThreadSummary struct {
	ThreadID       string    `json:"thread_id"`
	RunCount       int64     `json:"run_count"`
	TraceCount     int64     `json:"trace_count"`
	TotalTokens    int64     `json:"total_tokens"`
	FirstStartTime time.Time `json:"first_start_time"`
	LastStartTime  time.Time `json:"last_start_time"`
	LastRunID      string    `json:"last_run_id"`
}

// listThreads reads a project's thread summaries, latest activity first:
// offset + limit index items (plus threads emptied by run moves, skipped).
func (s *Service) listThreads(ctx context.Context, ws, project string, limit, offset int) ([]ThreadSummary, error) {
	out := []ThreadSummary{}
	q := store.Query{Index: "gsi1", PK: threadsByActivityPK(ws, project), Desc: true}
	skipped := 0
	for {
		q.Limit = min(offset+limit+1, 1000)
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if it.Nums["runs"] <= 0 {
				continue
			}
			if skipped < offset {
				skipped++
				continue
			}
			var t threadRecord
			if json.Unmarshal(it.Data, &t) != nil {
				continue
			}
			out = append(out, ThreadSummary{ThreadID: t.ThreadID, RunCount: it.Nums["runs"], TraceCount: it.Nums["roots"],
				TotalTokens: it.Nums["tokens"], FirstStartTime: t.FirstStart, LastStartTime: t.LastStart, LastRunID: t.LastRunID})
			if len(out) == limit {
				return out, nil
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}
