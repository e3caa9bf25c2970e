package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

type listExperimentsIn struct {
	ReferenceDatasetID   *string `json:"reference_dataset_id"`
	ReferenceDatasetName *string `json:"reference_dataset_name"`
	Limit                int     `json:"limit"`
	ProjectName          *string `json:"project_name"`
}

func (s *Service) listExperiments(ctx context.Context, p *platform, in listExperimentsIn) (toolResult, error) {
	id, name := str(in.ReferenceDatasetID), str(in.ReferenceDatasetName)
	switch {
	case id == "" && name == "":
		return nil, errors.New("either reference_dataset_id or reference_dataset_name must be provided")
	case id != "" && name != "":
		return nil, errors.New("give only one of reference_dataset_id and reference_dataset_name")
	case name != "":
		var err error
		if id, err = p.resolveDataset(ctx, name); err != nil {
			return nil, err
		}
	}
	q := url.Values{"reference_dataset": {id}, "reference_free": {"false"}, "include_stats": {"true"}}
	if n := str(in.ProjectName); n != "" {
		q.Set("name_contains", n)
	}
	projects, err := p.listArray(ctx, "/sessions", q, clampLimit(in.Limit, maxListLimit), 0)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(projects))
	for _, pr := range projects {
		e := map[string]any{"name": pr["name"], "experiment_id": pr["id"], "feedback_stats": pr["feedback_stats"]}
		for from, to := range map[string]string{"latency_p50": "latency_p50_seconds", "latency_p99": "latency_p99_seconds"} {
			if v, ok := seconds(pr[from]); ok {
				e[to] = v
			}
		}
		for _, k := range []string{"total_cost", "prompt_cost", "completion_cost"} {
			if v, ok := number(pr[k]); ok {
				e[k] = v
			}
		}
		if dep := findKey(pr, "deployment_id"); dep != nil {
			e["agent_deployment_id"] = dep
		}
		out = append(out, e)
	}
	return map[string]any{"experiments": out}, nil
}

// number reads a JSON number or a decimal string (costs are decimals).
func number(v any) (float64, bool) {
	switch t := v.(type) {
	case json.Number:
		f, err := t.Float64()
		return f, err == nil
	case float64:
		return t, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return f, err == nil
	}
	return 0, false
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// seconds reads a latency: a number of seconds, or an ISO 8601 duration
// (PnDTnHnMnS).
func seconds(v any) (float64, bool) {
	if f, ok := number(v); ok {
		return f, true
	}
	s, ok := v.(string)
	if !ok || s == "P" || s == "PT" {
		return 0, false
	}
	m := isoDuration.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil {
		return 0, false
	}
	total := 0.0
	for i, unit := range []float64{86400, 3600, 60, 1} {
		if m[i+1] != "" {
			f, _ := strconv.ParseFloat(m[i+1], 64)
			total += f * unit
		}
	}
	return total, true
}
