// Package cli is the agentplane command-line tool: the local server
// (serve), the tool server (mcp) and a client of the platform's HTTP API
// (deploy, deployments, revisions, logs, redeploy, keys, workspaces,
// threads). Apart from serve, it only talks HTTP: it never opens the store.
//
// It lives under cmd/agentplane/internal so that only the binary links it;
// cmd/agentplane/main.go is a thin main that passes the process's
// environment, the build's version and the tool server to Main.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes (documented in docs/cli.md).
const (
	ExitOK          = 0   // success
	ExitError       = 1   // the API refused the request, the server is unreachable, or another runtime error
	ExitUsage       = 2   // bad command line: unknown command or flag, wrong arguments, bad flag values
	ExitBuildFailed = 3   // deploy/redeploy --wait: the revision ended in a status other than DEPLOYED
	ExitAuth        = 4   // no API key, or the API answered 401 or 403
	ExitNotFound    = 5   // the API answered 404 (or a deployment name matched nothing)
	ExitInterrupted = 130 // interrupted (SIGINT/SIGTERM) while waiting
)

// Env is what the tool gets from its process: arguments (without the
// program name), streams and environment variables.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable (os.Getenv in the binary).
	Getenv func(string) string
	// IsTerminal reports whether w is a terminal, which selects the
	// animated progress display; nil uses x/term on *os.File.
	IsTerminal func(w io.Writer) bool
}

// Build describes the binary (set with -ldflags in cmd/agentplane).
type Build struct {
	Version string
	Commit  string
}

// Options configure Main.
type Options struct {
	Build Build
	// ToolServer builds the MCP tool server for `agentplane mcp`; nil
	// when this build has none (the command then says so and fails).
	ToolServer ToolServerFactory
	// PollInterval is the pause between two reads while waiting for a
	// build or following a log (default 500ms).
	PollInterval time.Duration
	// HTTPClient carries the API calls (default: a client with a 60 s
	// timeout per request).
	HTTPClient *http.Client
}

// exitError carries an exit code; quiet errors were already reported.
type exitError struct {
	code  int
	err   error
	quiet bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the process exit code for this error.
func (e *exitError) ExitCode() int { return e.code }

type exitCoder interface{ ExitCode() int }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

func notFoundf(format string, args ...any) error {
	return &exitError{code: ExitNotFound, err: fmt.Errorf(format, args...)}
}

// app is one invocation: the environment, the options and the global flags.
type app struct {
	env  Env
	opts Options

	url       string
	apiKey    string
	workspace string
	json      bool
}

// Main runs the command line in env and returns the exit code.
func Main(ctx context.Context, env Env, opts Options) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.IsTerminal == nil {
		env.IsTerminal = isTerminal
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	a := &app{env: env, opts: opts}
	root := a.rootCommand()
	root.SetArgs(env.Args)
	_, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitUsage // errors cobra returns itself: unknown commands, flags, arguments
	var c exitCoder
	if errors.As(err, &c) {
		code = c.ExitCode()
	}
	var q *exitError
	if !errors.As(err, &q) || !q.quiet {
		fmt.Fprintf(env.Stderr, "agentplane: error: %v\n", err)
	}
	if code == ExitUsage && (q == nil || !q.quiet) {
		fmt.Fprintln(env.Stderr, "Run 'agentplane --help' for usage.")
	}
	return code
}

// isTerminal is the default Env.IsTerminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// run adapts a command's function: every error it returns is a runtime
// error (exit 1) unless it carries its own code, so that only cobra's own
// errors (parsing) fall through to the usage code.
func (a *app) run(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		var c exitCoder
		if errors.As(err, &c) {
			return err
		}
		if ctxErr := cmd.Context().Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return &exitError{code: ExitInterrupted, err: errors.New("interrupted")}
		}
		return &exitError{code: ExitError, err: err}
	}
}

// args wraps a cobra argument validator so its complaint is a usage error
// that names the command.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return usageErrorf("%s: %v", cmd.CommandPath(), err)
		}
		return nil
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentplane",
		Short: "agentplane: run the local server, deploy agents and manage them over the API",
		Long: `agentplane runs the local all-in-one server (serve) and the MCP tool server
(mcp), and drives the platform's HTTP API: deploy repositories, follow their
builds, list deployments, revisions, build logs, threads and API keys.

API commands read the server's address from --url or AGENTPLANE_URL
(default http://127.0.0.1:8000) and the API key from --api-key or
AGENTPLANE_API_KEY; --workspace (AGENTPLANE_WORKSPACE) selects the workspace.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		// A bare `agentplane` used to start the server: it now prints help
		// and fails, so a script that relied on that stops loudly.
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(a.env.Stderr)
			_ = cmd.Help()
			return &exitError{code: ExitUsage, err: errors.New("no command given"), quiet: true}
		},
	}
	// Streams first: cobra's completion commands capture the output
	// stream when they are made.
	root.SetIn(a.env.Stdin)
	root.SetOut(a.env.Stdout)
	root.SetErr(a.env.Stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.url, "url", "", "API base URL (env AGENTPLANE_URL; default http://127.0.0.1:8000)")
	pf.StringVar(&a.apiKey, "api-key", "", "API key (env AGENTPLANE_API_KEY; prefer the variable: flags show in the process list)")
	pf.StringVar(&a.workspace, "workspace", "", "workspace id, sent as X-Tenant-Id (env AGENTPLANE_WORKSPACE)")
	pf.BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErrorf("%s: %v", cmd.CommandPath(), err)
	})
	root.AddGroup(
		&cobra.Group{ID: "run", Title: "Run:"},
		&cobra.Group{ID: "api", Title: "Deployments and data (HTTP API):"},
	)
	for _, c := range []*cobra.Command{a.serveCommand(), a.mcpCommand(), a.versionCommand()} {
		c.GroupID = "run"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{
		a.deployCommand(), a.redeployCommand(), a.deploymentsCommand(), a.revisionsCommand(),
		a.logsCommand(), a.threadsCommand(), a.keysCommand(), a.workspacesCommand(),
	} {
		c.GroupID = "api"
		root.AddCommand(c)
	}
	// cobra's completion command, made to fail like the other groups when
	// its shell is missing or unknown.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = args(cobra.NoArgs)
			c.RunE = needsSubcommand
		}
	}
	return root
}

// leaf makes a subcommand with the common settings.
func leaf(use, short string, v cobra.PositionalArgs, run func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: args(v), RunE: run}
}

// group makes a command whose only job is to hold subcommands.
func group(use, short string, aliases []string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Aliases: aliases, Args: args(cobra.NoArgs), RunE: needsSubcommand}
	c.AddCommand(subs...)
	return c
}

// needsSubcommand answers a group called alone: its help on stderr, exit 2.
func needsSubcommand(cmd *cobra.Command, _ []string) error {
	cmd.SetOut(cmd.ErrOrStderr())
	_ = cmd.Help()
	return &exitError{code: ExitUsage, err: fmt.Errorf("%s needs a subcommand", cmd.CommandPath()), quiet: true}
}
