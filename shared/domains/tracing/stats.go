package tracing

import (
	"context"
	"errors"
	"math"
	"sort"
	"time"
)

// RunStats are statistics over the runs a query selects (POST /runs/stats).
type RunStats struct {
	RunCount         int64                    `json:"run_count"`
	LatencyP50       *float64                 `json:"latency_p50"`
	LatencyP99       *float64                 `json:"latency_p99"`
	FirstTokenP50    *float64                 `json:"first_token_p50"`
	FirstTokenP99    *float64                 `json:"first_token_p99"`
	TotalTokens      int64                    `json:"total_tokens"`
	PromptTokens     int64                    `json:"prompt_tokens"`
	CompletionTokens int64                    `json:"completion_tokens"`
	MedianTokens     *float64                 `json:"median_tokens"`
	TotalCost        *string                  `json:"total_cost"`
	PromptCost       *string                  `json:"prompt_cost"`
	CompletionCost   *string                  `json:"completion_cost"`
	ErrorRate        *float64                 `json:"error_rate"`
	FeedbackStats    map[string]FeedbackStats `json:"feedback_stats"`
	LastRunStartTime *time.Time               `json:"last_run_start_time"`
}

// MaxStatsRuns bounds the runs a filtered statistics query reads.
const MaxStatsRuns = 100000

// ErrStatsTooBroad: a filtered statistics query selects too many runs.
var ErrStatsTooBroad = errors.New("tracing: the query selects too many runs for statistics")

// onlySession reports a query naming one project and nothing else: its
// statistics are the project's counters.
func (q *RunQuery) onlySession() bool {
	return len(q.Sessions) == 1 && len(q.IDs) == 0 && q.Trace == "" && q.ParentRun == "" && q.RunType == "" &&
		q.Error == nil && q.IsRoot == nil && q.StartTime == nil && q.EndTime == nil && len(q.ReferenceExamples) == 0 &&
		q.Filter == nil && q.TraceFilter == nil && q.TreeFilter == nil
}

// runStats serves a project's statistics from its counters (two items),
// or computes them over the runs a query selects (reading them).
func (s *Service) runStats(ctx context.Context, ws string, q *RunQuery) (*RunStats, error) {
	if q.onlySession() {
		ps, err := s.projectStats(ctx, ws, q.Sessions[0])
		if err != nil {
			return nil, err
		}
		return &RunStats{RunCount: ps.RunCount, LatencyP50: ps.LatencyP50, LatencyP99: ps.LatencyP99,
			FirstTokenP50: ps.FirstTokenP50, FirstTokenP99: ps.FirstTokenP99, TotalTokens: ps.TotalTokens,
			PromptTokens: ps.PromptTokens, CompletionTokens: ps.CompletionTokens, TotalCost: ps.TotalCost,
			PromptCost: ps.PromptCost, CompletionCost: ps.CompletionCost, ErrorRate: ps.ErrorRate,
			FeedbackStats: ps.FeedbackStats, LastRunStartTime: ps.LastRunStartTime}, nil
	}
	st := &RunStats{FeedbackStats: map[string]FeedbackStats{}}
	var lat, ft, tokens []float64
	var errs int64
	var pc, cc, tc int64
	hasCost := false
	fb := map[string][3]int64{}
	q.Limit, q.Cursor = 1000, ""
	for {
		runs, next, _, err := s.queryRuns(ctx, ws, q)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			st.RunCount++
			if st.RunCount > MaxStatsRuns {
				return nil, ErrStatsTooBroad
			}
			if !r.EndTime.IsZero() {
				lat = append(lat, r.EndTime.Sub(r.StartTime).Seconds())
			}
			if !r.FirstTokenTime.IsZero() {
				ft = append(ft, r.FirstTokenTime.Sub(r.StartTime).Seconds())
			}
			tokens = append(tokens, float64(r.TotalTokens))
			st.TotalTokens += r.TotalTokens
			st.PromptTokens += r.PromptTokens
			st.CompletionTokens += r.CompletionTokens
			if r.HasCost {
				hasCost = true
				pc, cc, tc = pc+r.PromptCost, cc+r.CompletionCost, tc+r.TotalCost
			}
			if r.HasError {
				errs++
			}
			if st.LastRunStartTime == nil || r.StartTime.After(*st.LastRunStartTime) {
				t := r.StartTime
				st.LastRunStartTime = &t
			}
			for k, v := range feedbackCounts(r.Feedback) {
				x := fb[k]
				fb[k] = [3]int64{x[0] + v[0], x[1] + v[1], x[2] + v[2]}
			}
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	st.LatencyP50, st.LatencyP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	st.FirstTokenP50, st.FirstTokenP99 = quantile(ft, 0.5), quantile(ft, 0.99)
	st.MedianTokens = quantile(tokens, 0.5)
	if st.RunCount > 0 {
		r := float64(errs) / float64(st.RunCount)
		st.ErrorRate = &r
	}
	if hasCost {
		st.TotalCost, st.PromptCost, st.CompletionCost = decimal(tc), decimal(pc), decimal(cc)
	}
	for k, v := range fb {
		f := FeedbackStats{N: v[0]}
		if v[1] > 0 {
			avg := float64(v[2]) / scoreScale / float64(v[1])
			f.Avg = &avg
		}
		st.FeedbackStats[k] = f
	}
	return st, nil
}

// quantile is the nearest-rank q-quantile (nil for no values).
func quantile(vs []float64, q float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	sort.Float64s(vs)
	i := max(int(math.Ceil(q*float64(len(vs))))-1, 0)
	v := vs[i]
	return &v
}
