package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// waitFlags are the flags of the commands that can wait for a build.
type waitFlags struct {
	wait     bool
	progress string
	timeout  time.Duration
}

func (w *waitFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.BoolVar(&w.wait, "wait", false, "wait for the build and show its progress; exit 3 unless it ends DEPLOYED")
	f.StringVar(&w.progress, "progress", "auto", "progress display with --wait: auto (animated on a terminal), tty or plain")
	f.DurationVar(&w.timeout, "timeout", 30*time.Minute, "with --wait, give up after this long (exit 1)")
}

func (w *waitFlags) check() error {
	switch w.progress {
	case "auto", "tty", "plain":
	default:
		return usageErrorf("--progress must be auto, tty or plain, not %q", w.progress)
	}
	if w.timeout <= 0 {
		return usageErrorf("--timeout must be positive")
	}
	return nil
}

// source is what the DIR|REPO_URL argument names.
type source struct {
	repoURL string
	name    string // the default deployment name
}

var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:`)

// resolveSource reads the argument of deploy: an existing directory is a
// local git repository (sent as a file:// URL, which the local server's
// integration reads in place); anything with a scheme is a repository URL,
// passed on as given.
func resolveSource(arg string) (source, error) {
	if st, err := os.Stat(arg); err == nil && st.IsDir() {
		abs, err := filepath.Abs(arg)
		if err != nil {
			return source{}, err
		}
		if _, err := os.Stat(filepath.Join(abs, ".git")); err != nil {
			return source{}, usageErrorf("%s is not a git repository (no .git): deploy builds a commit, so commit the project first", abs)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		return source{repoURL: u.String(), name: filepath.Base(abs)}, nil
	}
	if strings.Contains(arg, "://") || scpLike.MatchString(arg) {
		u, err := url.Parse(arg)
		name := ""
		if err == nil {
			name = strings.TrimSuffix(path.Base(strings.TrimRight(u.Path, "/")), ".git")
		}
		if name == "" || name == "." || name == "/" {
			name = ""
		}
		return source{repoURL: arg, name: name}, nil
	}
	return source{}, usageErrorf("%s is neither a directory nor a repository URL", arg)
}

// secretFlags collect --secret, --secrets-file and --remove-secret.
type secretFlags struct {
	pairs  []string
	file   string
	remove []string
}

func (s *secretFlags) add(c *cobra.Command) {
	f := c.Flags()
	f.StringArrayVar(&s.pairs, "secret", nil, "secret NAME=VALUE, or NAME to take the value of that environment variable (repeatable)")
	f.StringVar(&s.file, "secrets-file", "", "read secrets from a dotenv file of NAME=VALUE lines (- for stdin)")
	f.StringArrayVar(&s.remove, "remove-secret", nil, "on update, remove the secret NAME (repeatable)")
}

// collect returns the secrets given, in order (a later one replaces an
// earlier one of the same name), and whether any secret flag was used.
func (s *secretFlags) collect(a *app) (map[string]string, []string, bool, error) {
	values := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			order = append(order, name)
		}
		values[name] = value
	}
	if s.file != "" {
		var r io.Reader
		if s.file == "-" {
			r = a.env.Stdin
		} else {
			f, err := os.Open(s.file)
			if err != nil {
				return nil, nil, false, usageErrorf("--secrets-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		pairs, err := parseDotenv(r)
		if err != nil {
			return nil, nil, false, usageErrorf("--secrets-file %s: %v", s.file, err)
		}
		for _, p := range pairs {
			set(p[0], p[1])
		}
	}
	for _, p := range s.pairs {
		name, value, ok := strings.Cut(p, "=")
		if name == "" {
			return nil, nil, false, usageErrorf("--secret %q: expected NAME=VALUE or NAME", p)
		}
		if !ok {
			v, found := lookupEnv(a, name)
			if !found {
				return nil, nil, false, usageErrorf("--secret %s: no value given and no environment variable %s", name, name)
			}
			value = v
		}
		set(name, value)
	}
	for _, name := range s.remove {
		if _, ok := values[name]; ok {
			return nil, nil, false, usageErrorf("secret %s is both set and removed", name)
		}
	}
	return values, order, s.file != "" || len(s.pairs) > 0 || len(s.remove) > 0, nil
}

// lookupEnv tells an empty variable from a missing one where it can.
func lookupEnv(a *app, name string) (string, bool) {
	v := a.env.Getenv(name)
	return v, v != ""
}

func (a *app) deployCommand() *cobra.Command {
	var name, ref, config, depType string
	var sf secretFlags
	var wf waitFlags
	c := leaf("deploy [DIR|REPO_URL]", "Create or update a deployment from a git repository", cobra.MaximumNArgs(1), nil)
	c.Long = `Create a deployment from a git repository, or update the deployment of that
name (a PATCH that makes a new revision).

DIR is a local git repository (default: the current directory when creating):
it is sent as a file:// URL, which only a server on this machine reads (the
local server, AGENTPLANE_ALLOW_LOCAL_REPOS). REPO_URL (https://...) is passed
on as the deployment's repo_url. The deployment name defaults to the
directory's or repository's base name.

On update, the repository cannot change; --ref and --config change the
revision's configuration (left out, the stored values are kept), --secret and
--secrets-file add or replace secrets (the others keep their stored values)
and --remove-secret drops one.

With --wait, the build's progress is shown step by step (status changes and
build log lines), animated on a terminal and as plain lines otherwise, and the
command exits 3 with the failing step's log if the revision does not end
DEPLOYED.`
	c.Example = `  agentplane deploy . --name my-agent --wait
  agentplane deploy https://github.com/acme/agent --ref main --secret OPENAI_API_KEY --wait
  agentplane deploy --name my-agent --ref release --secrets-file .env`
	sf.add(c)
	wf.add(c)
	f := c.Flags()
	f.StringVar(&name, "name", "", "deployment name (default: the directory's or repository's base name)")
	f.StringVar(&ref, "ref", "", "branch, or refs/tags/<tag>, to build (default on create: the repository's default branch)")
	f.StringVar(&config, "config", "", "path of the graph configuration in the repository (default on create: langgraph.json)")
	f.StringVar(&depType, "type", "", "deployment type on create: dev, dev_free or prod (default: dev)")
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		if err := wf.check(); err != nil {
			return err
		}
		values, order, anySecret, err := sf.collect(a)
		if err != nil {
			return err
		}
		var src *source
		if len(args) == 1 {
			s, err := resolveSource(args[0])
			if err != nil {
				return err
			}
			src = &s
		}
		if name == "" {
			if src == nil {
				s, err := resolveSource(".")
				if err != nil {
					return usageErrorf("no DIR or REPO_URL and no --name: %v", err)
				}
				src = &s
			}
			name = src.name
			if name == "" {
				return usageErrorf("cannot derive a deployment name from %s: pass --name", args[0])
			}
		}
		cl, err := a.client()
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		existing, _, err := cl.findByName(ctx, name)
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if existing == nil {
			if src == nil {
				s, err := resolveSource(".")
				if err != nil {
					return usageErrorf("deployment %q does not exist yet and no DIR or REPO_URL was given: %v", name, err)
				}
				src = &s
			}
			if len(sf.remove) > 0 {
				return usageErrorf("--remove-secret applies to an existing deployment; %q does not exist", name)
			}
			sc := map[string]any{"repo_url": src.repoURL, "build_on_push": false}
			if depType != "" {
				sc["deployment_type"] = depType
			}
			rc := map[string]any{"repo_ref": nil, "graph_config_path": "langgraph.json"}
			if ref != "" {
				rc["repo_ref"] = ref
			}
			if config != "" {
				rc["graph_config_path"] = config
			}
			secrets := []secret{}
			for _, n := range order {
				secrets = append(secrets, secret{Name: n, Value: values[n]})
			}
			body := map[string]any{"name": name, "source": "repo_host", "source_config": sc,
				"source_revision_config": rc, "secrets": secrets}
			if _, err := cl.call(ctx, http.MethodPost, "/v2/deployments", nil, body, &raw); err != nil {
				return err
			}
		} else {
			if existing.Source != "repo_host" {
				return usageErrorf("deployment %q deploys a container image (source %s): deploy handles repository deployments", name, existing.Source)
			}
			if src != nil && len(args) == 1 && !sameRepo(deref(existing.SourceConfig.RepoURL), src.repoURL) {
				return usageErrorf("deployment %q builds %s; its repository cannot change to %s (delete it, or pick another --name)",
					name, deref(existing.SourceConfig.RepoURL), src.repoURL)
			}
			if depType != "" && depType != deref(existing.SourceConfig.DeploymentType) {
				return usageErrorf("deployment %q is of type %s; the type cannot change", name, deref(existing.SourceConfig.DeploymentType))
			}
			// A non-null graph_config_path always makes a revision, even
			// unchanged: that is how an update without new values rebuilds.
			rc := map[string]any{"graph_config_path": deref(existing.SourceRevisionConfig.GraphConfigPath)}
			if config != "" {
				rc["graph_config_path"] = config
			}
			if ref != "" {
				rc["repo_ref"] = ref
			}
			body := map[string]any{"source_revision_config": rc}
			if anySecret {
				body["secrets"] = mergeSecrets(existing.Secrets, values, order, sf.remove)
			}
			if _, err := cl.call(ctx, http.MethodPatch, "/v2/deployments/"+seg(existing.ID), nil, body, &raw); err != nil {
				return err
			}
		}
		return a.afterRevision(cmd, cl, raw, existing == nil, wf)
	})
	return c
}

// sameRepo compares repository URLs as the server reads them: a stored
// absolute path names the same repository as its file:// URL, and a
// trailing slash or .git changes nothing.
func sameRepo(a, b string) bool {
	norm := func(s string) string {
		if strings.HasPrefix(s, "/") {
			s = (&url.URL{Scheme: "file", Path: s}).String()
		}
		return strings.TrimSuffix(strings.TrimRight(s, "/"), ".git")
	}
	return norm(a) == norm(b)
}

// mergeSecrets keeps the stored secrets (sent back redacted, which keeps
// their values), replaces or adds the given ones and drops the removed.
func mergeSecrets(stored []secret, values map[string]string, order, remove []string) []secret {
	drop := map[string]bool{}
	for _, n := range remove {
		drop[n] = true
	}
	out := []secret{}
	seen := map[string]bool{}
	for _, s := range stored {
		if drop[s.Name] {
			continue
		}
		seen[s.Name] = true
		if v, ok := values[s.Name]; ok {
			out = append(out, secret{Name: s.Name, Value: v})
			continue
		}
		out = append(out, secret{Name: s.Name, Value: "********"})
	}
	for _, n := range order {
		if !seen[n] {
			out = append(out, secret{Name: n, Value: values[n]})
		}
	}
	return out
}

// afterRevision reports a deployment answer that started a revision, and
// waits for it with --wait.
func (a *app) afterRevision(cmd *cobra.Command, cl *client, raw json.RawMessage, created bool, wf waitFlags) error {
	var d deployment
	if err := decodeRaw(raw, &d); err != nil {
		return err
	}
	if d.LatestRevisionID == nil {
		return errors.New("the API answered without a latest_revision_id")
	}
	revID := *d.LatestRevisionID
	ctx := cmd.Context()
	verb := "Updated"
	if created {
		verb = "Created"
	}
	if !a.json {
		fmt.Fprintf(a.env.Stderr, "%s deployment %s (%s): revision %s\n", verb, cell(d.Name), d.ID, revID)
	}
	var rev revision
	var revRaw json.RawMessage
	var failure error
	if wf.wait {
		r, rr, err := a.waitRevision(ctx, cl, d.ID, revID, wf)
		if err != nil {
			return err
		}
		rev, revRaw = r, rr
		if rev.Status != "DEPLOYED" {
			failure = &exitError{code: ExitBuildFailed, err: fmt.Errorf("revision %s ended %s", rev.ID, rev.Status), quiet: true}
		}
		// The deployment as it is now (READY once deployed).
		if err := cl.get(ctx, "/v2/deployments/"+seg(d.ID), nil, &raw); err != nil {
			return err
		}
		if err := decodeRaw(raw, &d); err != nil {
			return err
		}
	} else {
		if err := cl.get(ctx, "/v2/deployments/"+seg(d.ID)+"/revisions/"+seg(revID), nil, &revRaw); err != nil {
			return err
		}
		if err := decodeRaw(revRaw, &rev); err != nil {
			return err
		}
	}
	if a.json {
		if err := printJSON(a.env.Stdout, map[string]json.RawMessage{"deployment": raw, "revision": revRaw}); err != nil {
			return err
		}
		return failure
	}
	if err := fields(a.env.Stdout,
		"deployment", d.Name, "id", d.ID, "status", d.Status,
		"revision", rev.ID, "revision status", rev.Status,
		"url", deref(d.SourceConfig.CustomURL)); err != nil {
		return err
	}
	return failure
}

func (a *app) redeployCommand() *cobra.Command {
	var wf waitFlags
	c := leaf("redeploy DEPLOYMENT REVISION", "Redeploy an earlier revision (as a new revision)", cobra.RangeArgs(1, 2), nil)
	c.Long = `Make a new revision with the configuration of an earlier revision (ref,
config path, secrets, commit) and roll the deployment to it. DEPLOYMENT is a
name or id; the revision may also be given as DEPLOYMENT/REVISION. --wait
follows the build as deploy --wait does.`
	c.Example = `  agentplane redeploy my-agent 0192f0c1-...
  agentplane redeploy my-agent/0192f0c1-... --wait`
	c.ValidArgsFunction = a.completeDeployments
	wf.add(c)
	c.RunE = a.run(func(cmd *cobra.Command, args []string) error {
		if err := wf.check(); err != nil {
			return err
		}
		var depRef, rev string
		if len(args) == 2 {
			depRef, rev = args[0], args[1]
		} else {
			var err error
			if depRef, rev, err = revisionRef(args[0], ""); err != nil {
				return err
			}
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
		if rev, err = latestOr(d, rev); err != nil {
			return err
		}
		var raw json.RawMessage
		if _, err := cl.call(ctx, http.MethodPost, "/v2/deployments/"+seg(d.ID)+"/revisions/"+seg(rev)+"/redeploy", nil, nil, &raw); err != nil {
			return err
		}
		return a.afterRevision(cmd, cl, raw, false, wf)
	})
	return c
}
