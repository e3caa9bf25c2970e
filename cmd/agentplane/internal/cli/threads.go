package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

type thread struct {
	ThreadID       string         `json:"thread_id"`
	CreatedAt      string         `json:"created_at"`
	UpdatedAt      string         `json:"updated_at"`
	StateUpdatedAt string         `json:"state_updated_at"`
	Metadata       map[string]any `json:"metadata"`
	Status         string         `json:"status"`
	Values         map[string]any `json:"values"`
}

var (
	threadStatuses = []string{"idle", "busy", "interrupted", "error"}
	threadSorts    = []string{"thread_id", "status", "created_at", "updated_at", "state_updated_at"}
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

func (a *app) threadsCommand() *cobra.Command {
	return group("threads", "List, show and search a deployment's threads", []string{"thread"},
		a.threadsSearch("ls", "List a deployment's threads (most recently updated first)", false),
		a.threadsGet(),
		a.threadsSearch("search", "Search a deployment's threads by metadata, values and status", true))
}

// threadsBase is the thread API of a deployment given by id or name. An id
// is used as is: the thread API needs no workspace, so a key that reaches
// several workspaces needs no --workspace for it.
func (c *client) threadsBase(ctx context.Context, ref string) (string, error) {
	id := ref
	if _, err := uuid.Parse(ref); err != nil {
		if id, err = c.deploymentID(ctx, ref); err != nil {
			return "", err
		}
	}
	return "/deployments/" + seg(id) + "/threads", nil
}

// pairs parses repeated k=v flags; a value that is valid JSON (a number,
// true, "quoted", {...}) is that value, anything else is a string.
func pairs(flag string, in []string) (map[string]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]any{}
	for _, p := range in {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--%s %q: expected KEY=VALUE", flag, p)
		}
		var val any
		if err := json.Unmarshal([]byte(v), &val); err != nil {
			val = v
		}
		out[k] = val
	}
	return out, nil
}

func (a *app) threadsSearch(use, short string, filters bool) *cobra.Command {
	var pf pageFlags
	var metadata, values []string
	var status, sortBy, sortOrder string
	c := leaf(use+" DEPLOYMENT", short, cobra.ExactArgs(1), nil)
	if use == "ls" {
		c.Aliases = []string{"list"}
	}
	c.ValidArgsFunction = a.completeDeployments
	pf.add(c, 10, 1000)
	f := c.Flags()
	if filters {
		c.Long = `Search a deployment's threads (POST /threads/search). --metadata and --values
match top-level keys exactly; a VALUE that is valid JSON (1, true, "1",
{"a":1}) is that JSON value, anything else is a string. The total number of
matches is printed on stderr.`
		c.Example = `  agentplane threads search my-agent --metadata graph_id=agent --status idle --limit 50
  agentplane threads search my-agent --metadata user=42 --sort-by created_at --sort-order asc --json`
		f.StringArrayVar(&metadata, "metadata", nil, "metadata KEY=VALUE to match (repeatable)")
		f.StringArrayVar(&values, "values", nil, "state values KEY=VALUE to match (repeatable)")
		f.StringVar(&status, "status", "", "only threads in this status: "+strings.Join(threadStatuses, ", "))
		f.StringVar(&sortBy, "sort-by", "", "order by: "+strings.Join(threadSorts, ", ")+" (default updated_at)")
		f.StringVar(&sortOrder, "sort-order", "", "asc or desc (default desc)")
	}
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		body := map[string]any{"limit": pf.limit, "offset": pf.offset}
		md, err := pairs("metadata", metadata)
		if err != nil {
			return err
		}
		if md != nil {
			body["metadata"] = md
		}
		vs, err := pairs("values", values)
		if err != nil {
			return err
		}
		if vs != nil {
			body["values"] = vs
		}
		if status != "" {
			if !oneOf(status, threadStatuses) {
				return usageErrorf("--status must be one of %s, not %q", strings.Join(threadStatuses, ", "), status)
			}
			body["status"] = status
		}
		if sortBy != "" {
			if !oneOf(sortBy, threadSorts) {
				return usageErrorf("--sort-by must be one of %s, not %q", strings.Join(threadSorts, ", "), sortBy)
			}
			body["sort_by"] = sortBy
		}
		if sortOrder != "" {
			if sortOrder != "asc" && sortOrder != "desc" {
				return usageErrorf("--sort-order must be asc or desc, not %q", sortOrder)
			}
			body["sort_order"] = sortOrder
		}
		cl, err := a.client()
		if err != nil {
			return err
		}
		base, err := cl.threadsBase(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		h, err := cl.call(cmd.Context(), http.MethodPost, base+"/search", nil, body, &raw)
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var ts []thread
		if err := decodeRaw(raw, &ts); err != nil {
			return err
		}
		t := newTable(a.env.Stdout, "THREAD ID", "STATUS", "CREATED", "UPDATED", "METADATA")
		for _, th := range ts {
			t.row(th.ThreadID, th.Status, th.CreatedAt, th.UpdatedAt, compactJSON(th.Metadata, 60))
		}
		if err := t.flush(); err != nil {
			return err
		}
		if total := h.Get("X-Pagination-Total"); total != "" && filters {
			fmt.Fprintf(a.env.Stderr, "(%s matching)\n", total)
		}
		if next := h.Get("X-Pagination-Next"); next != "" {
			if _, err := strconv.Atoi(next); err == nil {
				fmt.Fprintf(a.env.Stderr, "(more results: --offset %s)\n", next)
			}
		}
		return nil
	})
	return c
}

func (a *app) threadsGet() *cobra.Command {
	c := leaf("get DEPLOYMENT THREAD_ID", "Show a thread with its metadata and values", cobra.ExactArgs(2), nil)
	c.Aliases = []string{"show"}
	c.ValidArgsFunction = a.completeDeployments
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		base, err := cl.threadsBase(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), base+"/"+seg(args[1]), nil, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var th thread
		if err := decodeRaw(raw, &th); err != nil {
			return err
		}
		if err := fields(a.env.Stdout, "thread id", th.ThreadID, "status", th.Status, "created", th.CreatedAt,
			"updated", th.UpdatedAt, "state updated", th.StateUpdatedAt); err != nil {
			return err
		}
		for _, part := range []struct {
			name string
			v    map[string]any
		}{{"metadata", th.Metadata}, {"values", th.Values}} {
			if len(part.v) == 0 {
				fmt.Fprintf(a.env.Stdout, "%s  {}\n", part.name)
				continue
			}
			b, err := json.MarshalIndent(part.v, "  ", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintf(a.env.Stdout, "%s\n  %s\n", part.name, sanitize(string(b)))
		}
		return nil
	})
	return c
}
