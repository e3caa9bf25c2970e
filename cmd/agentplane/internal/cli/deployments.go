package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// pageFlags are --limit and --offset.
type pageFlags struct{ limit, offset int }

func (p *pageFlags) add(c *cobra.Command, def, max int) {
	c.Flags().IntVar(&p.limit, "limit", def, fmt.Sprintf("page size (1 to %d)", max))
	c.Flags().IntVar(&p.offset, "offset", 0, "number of results to skip")
}

func (p *pageFlags) query(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	q.Set("limit", strconv.Itoa(p.limit))
	q.Set("offset", strconv.Itoa(p.offset))
	return q
}

func (a *app) deploymentsCommand() *cobra.Command {
	return group("deployments", "List, show and delete deployments", []string{"deployment", "deps"},
		a.deploymentsLs(), a.deploymentsGet(), a.deploymentsRm())
}

func (a *app) deploymentsLs() *cobra.Command {
	var pf pageFlags
	var nameContains, status string
	c := leaf("ls", "List the workspace's deployments, newest first", cobra.NoArgs, nil)
	c.Aliases = []string{"list"}
	pf.add(c, 20, 100)
	c.Flags().StringVar(&nameContains, "name-contains", "", "only deployments whose name contains this")
	c.Flags().StringVar(&status, "status", "", "only deployments in this status (READY, AWAITING_DATABASE, ...)")
	c.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		q := pf.query(nil)
		if nameContains != "" {
			q.Set("name_contains", nameContains)
		}
		if status != "" {
			q.Set("status", status)
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), "/v2/deployments", q, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var p page[deployment]
		if err := decodeRaw(raw, &p); err != nil {
			return err
		}
		t := newTable(a.env.Stdout, "NAME", "ID", "STATUS", "ACTIVE REVISION", "REPOSITORY", "UPDATED")
		for _, d := range p.Resources {
			repo := deref(d.SourceConfig.RepoURL)
			if d.Source != "repo_host" {
				repo = deref(d.SourceRevisionConfig.ImageURI)
			}
			t.row(d.Name, d.ID, d.Status, deref(d.ActiveRevisionID), repo, when(d.UpdatedAt))
		}
		if err := t.flush(); err != nil {
			return err
		}
		a.morePages(len(p.Resources), pf.limit, p.Offset)
		return nil
	})
	return c
}

func (a *app) deploymentsGet() *cobra.Command {
	c := leaf("get DEPLOYMENT", "Show a deployment (by name or id)", cobra.ExactArgs(1), nil)
	c.Aliases = []string{"show"}
	c.ValidArgsFunction = a.completeDeployments
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		d, raw, err := cl.deployment(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		names := make([]string, len(d.Secrets))
		for i, s := range d.Secrets {
			names[i] = s.Name
		}
		kv := []string{"name", d.Name, "id", d.ID, "workspace", d.TenantID, "status", d.Status, "source", d.Source}
		if d.Source == "repo_host" {
			kv = append(kv, "repository", deref(d.SourceConfig.RepoURL), "ref", orDefault(deref(d.SourceRevisionConfig.RepoRef), "(default branch)"),
				"config", deref(d.SourceRevisionConfig.GraphConfigPath), "commit", deref(d.SourceRevisionConfig.RepoCommitSHA),
				"type", deref(d.SourceConfig.DeploymentType))
		} else {
			kv = append(kv, "image", deref(d.SourceRevisionConfig.ImageURI))
		}
		kv = append(kv, "url", deref(d.SourceConfig.CustomURL),
			"latest revision", deref(d.LatestRevisionID), "active revision", deref(d.ActiveRevisionID),
			"secrets", strings.Join(names, ", "), "created", when(d.CreatedAt), "updated", when(d.UpdatedAt))
		return fields(a.env.Stdout, kv...)
	})
	return c
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (a *app) deploymentsRm() *cobra.Command {
	var tracing bool
	c := leaf("rm DEPLOYMENT...", "Delete deployments (by name or id)", cobra.MinimumNArgs(1), nil)
	c.Aliases = []string{"delete"}
	c.Long = `Delete deployments. Each answers at once (AWAITING_DELETE, its thread API
stops, its name is free); its threads, build logs, sources and revisions are
removed in the background.`
	c.ValidArgsFunction = a.completeDeployments
	c.Flags().BoolVar(&tracing, "delete-tracing-project", false, "also delete the deployment's tracing project")
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		var q url.Values
		if tracing {
			q = url.Values{"delete_tracing_project": {"true"}}
		}
		deleted := []string{}
		for _, ref := range args {
			d, _, err := cl.deployment(cmd.Context(), ref)
			if err != nil {
				return err
			}
			if _, err := cl.call(cmd.Context(), http.MethodDelete, "/v2/deployments/"+seg(d.ID), q, nil, nil); err != nil {
				return err
			}
			deleted = append(deleted, d.ID)
			if !a.json {
				fmt.Fprintf(a.env.Stdout, "deleted deployment %s (%s)\n", cell(d.Name), d.ID)
			}
		}
		if a.json {
			return printJSON(a.env.Stdout, map[string][]string{"deleted": deleted})
		}
		return nil
	})
	return c
}

func (a *app) revisionsCommand() *cobra.Command {
	return group("revisions", "List and show a deployment's revisions", []string{"revision", "revs"},
		a.revisionsLs(), a.revisionsGet())
}

func (a *app) revisionsLs() *cobra.Command {
	var pf pageFlags
	var status string
	c := leaf("ls DEPLOYMENT", "List a deployment's revisions, newest first", cobra.ExactArgs(1), nil)
	c.Aliases = []string{"list"}
	c.ValidArgsFunction = a.completeDeployments
	pf.add(c, 20, 100)
	c.Flags().StringVar(&status, "status", "", "only these statuses (comma-separated, e.g. DEPLOYED,BUILD_FAILED)")
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		id, err := cl.deploymentID(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		q := pf.query(nil)
		if status != "" {
			q.Set("status", status)
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), "/v2/deployments/"+seg(id)+"/revisions", q, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var p page[revision]
		if err := decodeRaw(raw, &p); err != nil {
			return err
		}
		t := newTable(a.env.Stdout, "ID", "STATUS", "TRIGGER", "REF", "COMMIT", "CREATED", "MESSAGE")
		for _, r := range p.Resources {
			t.row(r.ID, r.Status, r.Trigger, deref(r.SourceRevisionConfig.RepoRef), short(deref(r.SourceRevisionConfig.RepoCommitSHA), 12),
				when(r.CreatedAt), short(deref(r.StatusMessage), 60))
		}
		if err := t.flush(); err != nil {
			return err
		}
		a.morePages(len(p.Resources), pf.limit, p.Offset)
		return nil
	})
	return c
}

func (a *app) revisionsGet() *cobra.Command {
	var depFlag string
	c := leaf("get DEPLOYMENT/REVISION", "Show a revision (REVISION may be latest)", cobra.ExactArgs(1), nil)
	c.Aliases = []string{"show"}
	c.Flags().StringVar(&depFlag, "deployment", "", "the revision's deployment (name or id), instead of DEPLOYMENT/")
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		depRef, revRef, err := revisionRef(args[0], depFlag)
		if err != nil {
			return err
		}
		cl, err := a.client()
		if err != nil {
			return err
		}
		d, _, err := cl.deployment(cmd.Context(), depRef)
		if err != nil {
			return err
		}
		revID, err := latestOr(d, revRef)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), "/v2/deployments/"+seg(d.ID)+"/revisions/"+seg(revID), nil, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var r revision
		if err := decodeRaw(raw, &r); err != nil {
			return err
		}
		return fields(a.env.Stdout, "id", r.ID, "deployment", d.Name+" ("+d.ID+")", "status", r.Status,
			"message", deref(r.StatusMessage), "trigger", r.Trigger, "redeployed from", deref(r.RedeployedFrom),
			"ref", deref(r.SourceRevisionConfig.RepoRef), "config", deref(r.SourceRevisionConfig.GraphConfigPath),
			"commit", deref(r.SourceRevisionConfig.RepoCommitSHA), "image", deref(r.SourceRevisionConfig.ImageURI),
			"graphs", strings.Join(r.Graphs, ", "), "created", when(r.CreatedAt), "updated", when(r.UpdatedAt))
	})
	return c
}

func (a *app) logsCommand() *cobra.Command {
	var depFlag string
	var follow bool
	c := leaf("logs DEPLOYMENT/REVISION", "Print a revision's build log (REVISION may be latest)", cobra.ExactArgs(1), nil)
	c.Long = `Print a revision's build log: one line per entry, "time [step] message".
A revision belongs to a deployment: write DEPLOYMENT/REVISION (DEPLOYMENT a
name or id) or pass --deployment. REVISION may be "latest".

--follow keeps reading until the revision is final (DEPLOYED or failed).
--json prints one JSON object per line ({"timestamp","step","message"}).`
	c.Example = `  agentplane logs my-agent/latest --follow
  agentplane logs 0192f0c1-... --deployment my-agent --json`
	c.Flags().StringVar(&depFlag, "deployment", "", "the revision's deployment (name or id), instead of DEPLOYMENT/")
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until the revision is final")
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		depRef, revRef, err := revisionRef(args[0], depFlag)
		if err != nil {
			return err
		}
		cl, err := a.client()
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		d, _, err := cl.deployment(ctx, depRef)
		if err != nil {
			return err
		}
		revID, err := latestOr(d, revRef)
		if err != nil {
			return err
		}
		revPath := "/v2/deployments/" + seg(d.ID) + "/revisions/" + seg(revID)
		// Reading the revision first gives a clear 404 for a wrong id.
		var rev revision
		if err := cl.get(ctx, revPath, nil, &rev); err != nil {
			return err
		}
		enc := json.NewEncoder(a.env.Stdout)
		logs := &logReader{cl: cl, depID: d.ID, rev: revID}
		for {
			final := terminal(rev.Status)
			lines, err := logs.next(ctx)
			for _, l := range lines {
				if a.json {
					if err := enc.Encode(l); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(a.env.Stdout, "%s [%s] %s\n", l.Timestamp.UTC().Format(time.RFC3339Nano), sanitize(l.Step), sanitize(l.Message))
				}
			}
			if err != nil {
				return err
			}
			if !follow || final {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(a.opts.PollInterval):
			}
			if err := cl.get(ctx, revPath, nil, &rev); err != nil {
				return err
			}
		}
	})
	return c
}
