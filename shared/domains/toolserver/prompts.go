package toolserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

type listPromptsIn struct {
	IsPublic string `json:"is_public"`
	Limit    int    `json:"limit"`
}

var promptFields = []string{
	"repo_handle", "description", "id", "is_public", "tags", "owner", "full_name",
	"num_likes", "num_downloads", "num_views", "created_at", "updated_at",
}

func (s *Service) listPrompts(ctx context.Context, p *platform, in listPromptsIn) (toolResult, error) {
	limit := clampLimit(in.Limit, maxListLimit)
	public := "false"
	if isTrue(in.IsPublic) {
		public = "true"
	}
	var prompts []map[string]any
	var total any
	for len(prompts) < limit {
		n := min(limit-len(prompts), 100)
		q := url.Values{
			"limit": {strconv.Itoa(n)}, "offset": {strconv.Itoa(len(prompts))}, "is_public": {public},
			"is_archived": {"false"}, "sort_field": {"updated_at"}, "sort_direction": {"desc"},
		}
		var page struct {
			Repos []map[string]any `json:"repos"`
			Total any              `json:"total"`
		}
		if err := p.get(ctx, "/repos/", q, &page); err != nil {
			return nil, fmt.Errorf("Error fetching prompts: %w", err)
		}
		total = page.Total
		for _, r := range page.Repos {
			prompts = append(prompts, pick(r, promptFields))
		}
		if len(page.Repos) < n {
			break
		}
	}
	if len(prompts) > limit {
		prompts = prompts[:limit]
	}
	if total == nil {
		total = len(prompts)
	}
	return map[string]any{"prompts": nonNil(prompts), "total_count": total}, nil
}

// pick copies the named fields of m, null where absent.
func pick(m map[string]any, fields []string) map[string]any {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = m[f]
	}
	return out
}

type getPromptIn struct {
	PromptName string `json:"prompt_name"`
}

// parsePromptID splits "owner/name:commit": owner "-" (the caller's
// workspace) and commit "latest" when left out.
func parsePromptID(id string) (owner, name, commit string, err error) {
	id = strings.TrimSpace(id)
	owner, commit = "-", "latest"
	if i := strings.LastIndex(id, ":"); i >= 0 {
		id, commit = id[:i], id[i+1:]
	}
	name = id
	if i := strings.Index(id, "/"); i >= 0 {
		owner, name = id[:i], id[i+1:]
	}
	if owner == "" || name == "" || commit == "" || strings.Contains(name, "/") {
		return "", "", "", fmt.Errorf("prompt_name %q must be \"name\", \"owner/name\", optionally followed by \":<commit>\"", id)
	}
	return owner, name, commit, nil
}

func (s *Service) getPromptByName(ctx context.Context, p *platform, in getPromptIn) (toolResult, error) {
	owner, name, commit, err := parsePromptID(in.PromptName)
	if err != nil {
		return nil, err
	}
	var c struct {
		CommitHash string `json:"commit_hash"`
		Manifest   any    `json:"manifest"`
		Examples   any    `json:"examples"`
	}
	path := "/commits/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/" + url.PathEscape(commit)
	if err := p.get(ctx, path, nil, &c); err != nil {
		var pe *PlatformError
		if errors.As(err, &pe) && pe.Status == 404 {
			return nil, fmt.Errorf("Error fetching prompt: prompt %q not found", in.PromptName)
		}
		return nil, fmt.Errorf("Error fetching prompt: %w", err)
	}
	out, ok := revive(c.Manifest).(map[string]any)
	if !ok {
		out = map[string]any{"manifest": c.Manifest}
	}
	meta, _ := out["metadata"].(map[string]any)
	merged := map[string]any{}
	for k, v := range meta {
		merged[k] = v
	}
	merged["lc_hub_owner"] = owner
	merged["lc_hub_repo"] = name
	merged["lc_hub_commit_hash"] = c.CommitHash
	out["metadata"] = merged
	return out, nil
}

// revive turns a LangChain-serialized manifest into plain objects: each
// {"lc": 1, "type": "constructor", "id": [..., Class], "kwargs": {...}}
// becomes its kwargs (revived in turn) with "_type": Class, which is what
// the pulled prompt object holds.
func revive(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t["type"] == "constructor" && t["lc"] != nil {
			kwargs, _ := t["kwargs"].(map[string]any)
			out := make(map[string]any, len(kwargs)+1)
			for k, e := range kwargs {
				out[k] = revive(e)
			}
			if id, ok := t["id"].([]any); ok && len(id) > 0 {
				out["_type"] = id[len(id)-1]
			}
			return out
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = revive(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = revive(e)
		}
		return out
	}
	return v
}
