package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// MaxRange is the longest usage query.
const MaxRange = 366 * 24 * time.Hour

// Query asks for an organization's usage between two instants. Usage is
// counted per UTC day: the days that overlap [StartingOn, EndingBefore)
// are summed, and the answer's timestamps say which days those were.
type Query struct {
	OrganizationID string    `json:"organization_id"`
	StartingOn     time.Time `json:"starting_on"`
	EndingBefore   time.Time `json:"ending_before"`
	// AllWorkspaces shows every workspace's usage; otherwise only the
	// workspaces listed in Workspaces are shown (none when it is empty), so
	// a forgotten field hides rather than reveals.
	AllWorkspaces bool     `json:"all_workspaces,omitempty"`
	Workspaces    []string `json:"workspaces,omitempty"`
}

// MetricUsage is one metric's usage over the query's days, in the shape
// of LangSmith's OrgUsage: value is the sum over the groups shown, groups
// maps workspace ids to their usage.
type MetricUsage struct {
	CustomerID         string           `json:"customer_id"`
	BillableMetricID   string           `json:"billable_metric_id"`
	BillableMetricName string           `json:"billable_metric_name"`
	StartTimestamp     string           `json:"start_timestamp"`
	EndTimestamp       string           `json:"end_timestamp"`
	Value              int64            `json:"value"`
	Groups             map[string]int64 `json:"groups"`
}

// metricNamespace derives stable billable_metric_id values from names.
var metricNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://agentplane.dev/billing/metrics"))

// MetricID is the billable_metric_id of a metric.
func MetricID(metric string) string { return uuid.NewSHA1(metricNamespace, []byte(metric)).String() }

// alwaysReported metrics appear in every answer, with zero when unused
// (the tool server's get_billing_usage treats an empty list as an error).
var alwaysReported = []string{MetricTraces}

// Validate checks q's dates.
func (q Query) Validate() error {
	if _, err := uuid.Parse(q.OrganizationID); err != nil {
		return queryError("organization_id", "must be a UUID")
	}
	switch {
	case q.StartingOn.IsZero():
		return queryError("starting_on", "required")
	case q.EndingBefore.IsZero():
		return queryError("ending_before", "required")
	case !q.EndingBefore.After(q.StartingOn):
		return queryError("ending_before", "must be after starting_on")
	case q.EndingBefore.Sub(q.StartingOn) > MaxRange:
		return queryError("ending_before", "the range may span at most 366 days")
	}
	return nil
}

// days returns the UTC days the query covers: [first, end).
func (q Query) days() (first, end time.Time) {
	first = q.StartingOn.UTC().Truncate(24 * time.Hour)
	end = q.EndingBefore.UTC().Truncate(24 * time.Hour)
	if end.Before(q.EndingBefore) {
		end = end.AddDate(0, 0, 1)
	}
	return first, end
}

// Usage answers q: one MetricUsage per metric, sorted by name. Outside the
// home region it asks the home region (ErrHomeUnavailable when that fails).
func (s *Service) Usage(ctx context.Context, q Query) ([]MetricUsage, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if s.home != nil {
		out, err := s.home.Usage(ctx, q)
		if err != nil {
			if errors.Is(err, ErrInvalidQuery) {
				return nil, err
			}
			s.log.ErrorContext(ctx, "billing: usage query to the home region failed", slog.String("error", err.Error()))
			return nil, fmt.Errorf("%w: %v", ErrHomeUnavailable, err)
		}
		return out, nil
	}
	org, _ := uuid.Parse(q.OrganizationID)
	q.OrganizationID = org.String()
	visible := func(string) bool { return true }
	if !q.AllWorkspaces {
		set := make(map[string]bool, len(q.Workspaces))
		for _, ws := range q.Workspaces {
			if u, err := uuid.Parse(ws); err == nil {
				set[u.String()] = true
			}
		}
		visible = func(ws string) bool { return set[ws] }
	}

	first, end := q.days()
	totals := map[string]map[string]int64{} // metric → workspace → quantity
	add := func(it store.Item) {
		parts := strings.Split(it.SK, "#")
		if len(parts) != 4 || !visible(parts[3]) {
			return
		}
		metric, ws := parts[2], parts[3]
		if totals[metric] == nil {
			totals[metric] = map[string]int64{}
		}
		totals[metric][ws] += it.Nums[numQty]
	}
	for _, r := range plan(first, end) {
		if err := s.scan(ctx, q.OrganizationID, r, add); err != nil {
			return nil, err
		}
	}

	for _, m := range alwaysReported {
		if totals[m] == nil {
			totals[m] = map[string]int64{}
		}
	}
	names := make([]string, 0, len(totals))
	for m := range totals {
		names = append(names, m)
	}
	sort.Strings(names)
	out := make([]MetricUsage, 0, len(names))
	for _, m := range names {
		mu := MetricUsage{
			CustomerID: q.OrganizationID, BillableMetricID: MetricID(m), BillableMetricName: m,
			StartTimestamp: first.Format(time.RFC3339), EndTimestamp: end.Format(time.RFC3339),
			Groups: totals[m],
		}
		for _, v := range mu.Groups {
			mu.Value += v
		}
		out = append(out, mu)
	}
	return out, nil
}

// skRange is one sort-key range of the organization's usage partition.
type skRange struct{ from, to string }

// plan splits the days [first, end) into the fewest ranges of counters:
// whole calendar months read month counters, the days around them read day
// counters. A query thus reads at most 60 day counters and 12 month
// counters per metric and workspace.
func plan(first, end time.Time) []skRange {
	monthStart := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC) }
	fullFrom := monthStart(first)
	if fullFrom.Before(first) {
		fullFrom = fullFrom.AddDate(0, 1, 0)
	}
	fullTo := monthStart(end) // months in [fullFrom, fullTo) are whole
	days := func(a, b time.Time) skRange {
		return skRange{"d#" + a.Format("2006-01-02"), "d#" + b.AddDate(0, 0, -1).Format("2006-01-02") + "$"}
	}
	if !fullFrom.Before(fullTo) {
		return []skRange{days(first, end)}
	}
	var out []skRange
	if first.Before(fullFrom) {
		out = append(out, days(first, fullFrom))
	}
	out = append(out, skRange{"m#" + fullFrom.Format("2006-01"), "m#" + fullTo.AddDate(0, -1, 0).Format("2006-01") + "$"})
	if fullTo.Before(end) {
		out = append(out, days(fullTo, end))
	}
	return out
}

// scan reads every counter of one range ('$' sorts after the '#' that
// follows a date, so "d#<last>$" bounds the last day's counters).
func (s *Service) scan(ctx context.Context, org string, r skRange, f func(store.Item)) error {
	q := store.Query{PK: usagePK(org), SK: store.SKCond{Op: store.SKBetween, A: r.from, B: r.to}, Limit: 100}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return fmt.Errorf("billing: reading usage: %w", err)
		}
		for _, it := range page.Items {
			f(it)
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}
