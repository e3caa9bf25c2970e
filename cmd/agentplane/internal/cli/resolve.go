package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// maxNamePages bounds the pages read to find a deployment by name (100
// deployments a page): name_contains narrows the list, so this only
// matters for names that are substrings of thousands of others.
const maxNamePages = 100

// findByName returns the deployment named exactly name, or nil.
func (c *client) findByName(ctx context.Context, name string) (*deployment, json.RawMessage, error) {
	offset := 0
	for range maxNamePages {
		var p page[json.RawMessage]
		q := url.Values{"name_contains": {name}, "limit": {"100"}, "offset": {strconv.Itoa(offset)}}
		if err := c.get(ctx, "/v2/deployments", q, &p); err != nil {
			return nil, nil, err
		}
		for _, raw := range p.Resources {
			var d deployment
			if err := decodeRaw(raw, &d); err != nil {
				return nil, nil, err
			}
			if d.Name == name {
				return &d, raw, nil
			}
		}
		if len(p.Resources) < 100 {
			return nil, nil, nil
		}
		offset = p.Offset
	}
	return nil, nil, errors.New("too many deployments match this name: use the deployment id")
}

// deployment reads a deployment given by id or by exact name.
func (c *client) deployment(ctx context.Context, ref string) (*deployment, json.RawMessage, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return nil, nil, usageErrorf("the deployment name or id is empty")
	}
	if _, err := uuid.Parse(ref); err == nil {
		var raw json.RawMessage
		err := c.get(ctx, "/v2/deployments/"+seg(ref), nil, &raw)
		var apiErr *APIError
		switch {
		case err == nil:
			var d deployment
			if err := decodeRaw(raw, &d); err != nil {
				return nil, nil, err
			}
			return &d, raw, nil
		case errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound:
			// A name may look like a UUID: try it as a name before giving up.
			d, raw, nerr := c.findByName(ctx, ref)
			if nerr != nil || d == nil {
				return nil, nil, err
			}
			return d, raw, nil
		default:
			return nil, nil, err
		}
	}
	d, raw, err := c.findByName(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, notFoundf("no deployment named %q in this workspace", ref)
	}
	return d, raw, nil
}

// deploymentID resolves a name or id to the id.
func (c *client) deploymentID(ctx context.Context, ref string) (string, error) {
	d, _, err := c.deployment(ctx, ref)
	if err != nil {
		return "", err
	}
	return d.ID, nil
}

// revisionRef splits the forms DEPLOYMENT/REVISION, or REVISION with
// --deployment, into their parts. REVISION may be "latest".
func revisionRef(arg, depFlag string) (dep, rev string, err error) {
	if i := strings.LastIndex(arg, "/"); i >= 0 {
		dep, rev = arg[:i], arg[i+1:]
		if depFlag != "" && depFlag != dep {
			return "", "", usageErrorf("%q names deployment %q but --deployment is %q", arg, dep, depFlag)
		}
	} else {
		dep, rev = depFlag, arg
	}
	if dep == "" {
		return "", "", usageErrorf("a revision needs its deployment: write DEPLOYMENT/REVISION or pass --deployment")
	}
	if rev == "" {
		return "", "", usageErrorf("%q names no revision", arg)
	}
	return dep, rev, nil
}

// latestOr resolves "latest" to the deployment's latest revision.
func latestOr(d *deployment, rev string) (string, error) {
	if rev != "latest" {
		return rev, nil
	}
	if d.LatestRevisionID == nil {
		return "", notFoundf("deployment %s has no revision", d.Name)
	}
	return *d.LatestRevisionID, nil
}

// completeDeployments offers deployment names for shell completion when
// the API is reachable with the configured key; otherwise nothing.
func (a *app) completeDeployments(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := a.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var p page[deployment]
	q := url.Values{"limit": {"100"}}
	if toComplete != "" {
		q.Set("name_contains", toComplete)
	}
	if err := c.get(cmd.Context(), "/v2/deployments", q, &p); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, d := range p.Resources {
		if strings.HasPrefix(d.Name, toComplete) {
			out = append(out, cobra.CompletionWithDesc(d.Name, d.Status))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
