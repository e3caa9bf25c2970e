package toolserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
)

type billingUsageIn struct {
	StartingOn    string  `json:"starting_on"`
	EndingBefore  string  `json:"ending_before"`
	Workspace     *string `json:"workspace"`
	OnCurrentPlan string  `json:"on_current_plan"`
}

func (s *Service) getBillingUsage(ctx context.Context, p *platform, in billingUsageIn) (toolResult, error) {
	for name, v := range map[string]string{"starting_on": in.StartingOn, "ending_before": in.EndingBefore} {
		if _, err := parseTime(strings.TrimSpace(v)); err != nil {
			return nil, fmt.Errorf("%s must be an ISO 8601 date or date-time such as 2025-09-01T00:00:00Z, not %q", name, v)
		}
	}
	plan := "false"
	if isTrue(in.OnCurrentPlan) {
		plan = "true"
	}
	var raw any
	q := url.Values{"starting_on": {strings.TrimSpace(in.StartingOn)}, "ending_before": {strings.TrimSpace(in.EndingBefore)}, "on_current_plan": {plan}}
	if err := p.getAPI(ctx, "/api/v1/orgs/current/billing/usage", q, &raw); err != nil {
		return nil, err
	}
	usage, ok := raw.([]any)
	if !ok {
		//lint:ignore ST1005 the original server's message, kept for clients that match it
		return nil, errors.New("Unexpected billing usage response")
	}
	names, err := p.workspaceNames(ctx)
	if err != nil {
		return nil, err
	}
	only := ""
	if w := str(in.Workspace); w != "" {
		if _, ok := names[w]; ok {
			only = w
		} else {
			ids := make([]string, 0, len(names))
			for id := range names {
				ids = append(ids, id)
			}
			sort.Strings(ids) // a name two workspaces share picks the same one every time
			for _, id := range ids {
				if strings.EqualFold(names[id], w) {
					only = id
					break
				}
			}
		}
		if only == "" {
			return nil, fmt.Errorf("workspace %q not found among the organization's workspaces", w)
		}
	}
	out := make([]any, 0, len(usage))
	for _, u := range usage {
		m, ok := u.(map[string]any)
		if !ok {
			out = append(out, u)
			continue
		}
		c := make(map[string]any, len(m))
		for k, v := range m {
			c[k] = v
		}
		if groups, ok := m["groups"].(map[string]any); ok {
			ng := make(map[string]any, len(groups))
			for id, val := range groups {
				if only != "" && id != only {
					continue
				}
				name := names[id]
				if name == "" {
					name = id
				}
				ng[id] = map[string]any{"workspace_name": name, "value": val}
			}
			c["groups"] = ng
		}
		out = append(out, c)
	}
	return map[string]any{"usage": out}, nil
}

// workspaceNames maps the organization's workspace ids to their display
// names, from GET /api/v1/workspaces (a list, or one wrapped in
// "workspaces" or "items").
func (p *platform) workspaceNames(ctx context.Context) (map[string]string, error) {
	var raw any
	if err := p.getAPI(ctx, "/api/v1/workspaces", nil, &raw); err != nil {
		return nil, err
	}
	list, _ := raw.([]any)
	if m, ok := raw.(map[string]any); ok {
		if l, ok := m["workspaces"].([]any); ok {
			list = l
		} else if l, ok := m["items"].([]any); ok {
			list = l
		}
	}
	names := map[string]string{}
	for _, w := range list {
		m, _ := w.(map[string]any)
		id, _ := m["id"].(string)
		if id == "" {
			continue
		}
		name, _ := m["display_name"].(string)
		if name == "" {
			name, _ = m["name"].(string)
		}
		if name == "" {
			name = id
		}
		names[id] = name
	}
	return names, nil
}
