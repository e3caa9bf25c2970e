package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

type apiKey struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	ShortKey    string    `json:"short_key"`
	OrgRole     string    `json:"org_role"`
	Workspaces  []grant   `json:"workspaces"`
	CreatedAt   time.Time `json:"created_at"`
	// Key is set only in the answer to a creation.
	Key string `json:"key"`
}

type grant struct {
	WorkspaceID string `json:"workspace_id"`
	Role        string `json:"role"`
}

func grants(gs []grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.WorkspaceID + "=" + g.Role
	}
	return strings.Join(parts, ", ")
}

var roles = []string{"Viewer", "User", "Editor", "Admin"}

// role accepts a role in any case and returns its canonical spelling.
func role(s string) (string, bool) {
	for _, r := range roles {
		if strings.EqualFold(s, r) {
			return r, true
		}
	}
	return "", false
}

func (a *app) keysCommand() *cobra.Command {
	return group("keys", "Create, list and revoke API keys (organization admin)", []string{"key", "api-keys"},
		a.keysCreate(), a.keysLs(), a.keysRevoke())
}

func (a *app) keysCreate() *cobra.Command {
	var description, orgRole string
	var grantFlags []string
	c := leaf("create", "Create an API key; the key is printed once", cobra.NoArgs, nil)
	c.Long = `Create an API key. The new key is printed once, on stdout, and cannot be
shown again (the server keeps only its hash). --org-role sets the organization
role (Viewer by default; an Admin key reaches every workspace); --grant
WORKSPACE_ID=ROLE gives a role in one workspace (repeatable).`
	c.Example = `  agentplane keys create --description ci --grant 7c9e...=Editor
  KEY=$(agentplane keys create --description ci --json | jq -r .key)`
	c.Flags().StringVar(&description, "description", "", "what the key is for (at most 500 characters)")
	c.Flags().StringVar(&orgRole, "org-role", "", "organization role: Viewer, User, Editor or Admin (default Viewer)")
	c.Flags().StringArrayVar(&grantFlags, "grant", nil, "workspace role WORKSPACE_ID=ROLE (repeatable)")
	c.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		body := map[string]any{"description": description}
		if orgRole != "" {
			r, ok := role(orgRole)
			if !ok {
				return usageErrorf("--org-role must be one of %s, not %q", strings.Join(roles, ", "), orgRole)
			}
			body["org_role"] = r
		}
		gs := []grant{}
		for _, g := range grantFlags {
			ws, r, ok := strings.Cut(g, "=")
			canon, valid := role(r)
			if !ok || ws == "" || !valid {
				return usageErrorf("--grant %q: expected WORKSPACE_ID=ROLE with ROLE one of %s", g, strings.Join(roles, ", "))
			}
			gs = append(gs, grant{WorkspaceID: ws, Role: canon})
		}
		body["workspaces"] = gs
		cl, err := a.client()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if _, err := cl.call(cmd.Context(), http.MethodPost, "/api/v1/api-key", nil, body, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var k apiKey
		if err := decodeRaw(raw, &k); err != nil {
			return err
		}
		if err := fields(a.env.Stdout, "id", k.ID, "description", k.Description, "org role", k.OrgRole,
			"workspaces", grants(k.Workspaces), "key", k.Key); err != nil {
			return err
		}
		fmt.Fprintln(a.env.Stderr, "Store the key now: it is shown only once.")
		return nil
	})
	return c
}

func (a *app) keysLs() *cobra.Command {
	c := leaf("ls", "List the organization's API keys (records, never keys)", cobra.NoArgs, nil)
	c.Aliases = []string{"list"}
	c.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), "/api/v1/api-key", nil, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var keys []apiKey
		if err := decodeRaw(raw, &keys); err != nil {
			return err
		}
		t := newTable(a.env.Stdout, "ID", "KEY", "DESCRIPTION", "ORG ROLE", "WORKSPACES", "CREATED")
		for _, k := range keys {
			t.row(k.ID, k.ShortKey, short(k.Description, 40), k.OrgRole, grants(k.Workspaces), when(k.CreatedAt))
		}
		return t.flush()
	})
	return c
}

func (a *app) keysRevoke() *cobra.Command {
	c := leaf("revoke KEY_ID...", "Revoke API keys by id", cobra.MinimumNArgs(1), nil)
	c.Aliases = []string{"rm", "delete"}
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		for _, id := range args {
			if _, err := cl.call(cmd.Context(), http.MethodDelete, "/api/v1/api-key/"+seg(id), nil, nil, nil); err != nil {
				return err
			}
			if !a.json {
				fmt.Fprintf(a.env.Stdout, "revoked API key %s\n", id)
			}
		}
		if a.json {
			return printJSON(a.env.Stdout, map[string][]string{"revoked": args})
		}
		return nil
	})
	return c
}

type workspace struct {
	ID          string    `json:"id"`
	DisplayName string    `json:"display_name"`
	Role        string    `json:"role"`
	CreatedAt   time.Time `json:"created_at"`
}

func (a *app) workspacesCommand() *cobra.Command {
	ls := leaf("ls", "List the workspaces the key reaches, with its role in each", cobra.NoArgs, nil)
	ls.Aliases = []string{"list"}
	ls.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := cl.get(cmd.Context(), "/api/v1/workspaces", nil, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var ws []workspace
		if err := decodeRaw(raw, &ws); err != nil {
			return err
		}
		t := newTable(a.env.Stdout, "ID", "NAME", "ROLE", "CREATED")
		for _, w := range ws {
			t.row(w.ID, w.DisplayName, w.Role, when(w.CreatedAt))
		}
		return t.flush()
	})
	create := leaf("create NAME", "Create a workspace (organization admin)", cobra.ExactArgs(1), nil)
	create.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		cl, err := a.client()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if _, err := cl.call(cmd.Context(), http.MethodPost, "/api/v1/workspaces", nil, map[string]string{"display_name": args[0]}, &raw); err != nil {
			return err
		}
		if a.json {
			return printJSON(a.env.Stdout, raw)
		}
		var w workspace
		if err := decodeRaw(raw, &w); err != nil {
			return err
		}
		return fields(a.env.Stdout, "id", w.ID, "name", w.DisplayName, "created", when(w.CreatedAt))
	})
	return group("workspaces", "List and create workspaces (select one with --workspace)", []string{"workspace", "ws"}, ls, create)
}
