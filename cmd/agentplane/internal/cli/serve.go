package cli

import (
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/compose/local"
	"github.com/spf13/cobra"
)

// serveGCPercent is the garbage collector's target of `serve` when GOGC
// is not set.
const serveGCPercent = 400

func (a *app) serveCommand() *cobra.Command {
	var addr, dataDir, cpuProfile string
	c := leaf("serve", "Run the local all-in-one server (every service on one port)", cobra.NoArgs, nil)
	c.Long = `Run the local all-in-one server: every route group of the platform on one
port, over the embedded store in the data directory. On an empty data directory
it creates a default organization, workspace and admin API key, and prints the
key once. SIGINT or SIGTERM stops it cleanly (exit 0).

Configuration comes from the AGENTPLANE_* environment variables (README):
AGENTPLANE_ADDR, AGENTPLANE_DATA_DIR, AGENTPLANE_BOOTSTRAP_API_KEY,
AGENTPLANE_BASE_URL, AGENTPLANE_LOG_LEVEL, AGENTPLANE_SELF_HOSTED,
AGENTPLANE_ALLOW_LOCAL_REPOS, AGENTPLANE_WEBHOOK_SECRET, ...
--addr and --data-dir override their variables.`
	c.RunE = a.run(func(cmd *cobra.Command, _ []string) error {
		cfg, err := compose.ConfigFromEnv()
		if err != nil {
			return usageErrorf("%v", err)
		}
		if addr != "" {
			cfg.Addr = addr
			if os.Getenv("AGENTPLANE_BASE_URL") == "" {
				cfg.BaseURL = "" // derived from the new address by Check
			}
		}
		if dataDir != "" {
			cfg.DataDir = dataDir
		}
		if err := cfg.Check(); err != nil {
			return usageErrorf("%v", err)
		}
		if cpuProfile != "" {
			// For measuring the server under a real load generator
			// (docs/performance.md); written when the server stops.
			f, err := os.Create(cpuProfile)
			if err != nil {
				return usageErrorf("--cpu-profile: %v", err)
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		if os.Getenv("GOGC") == "" {
			// The live heap of a serving process is small, so at the
			// default (100) it collects very often under load; 400
			// measured 5-10% more requests per second on two cores
			// (docs/performance.md). GOGC in the environment overrides.
			debug.SetGCPercent(serveGCPercent)
		}
		ctx := cmd.Context()
		pr, err := local.New(ctx, cfg, nil)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			pr.Close()
			return err
		}
		return local.Serve(ctx, pr, ln, a.env.Stdout)
	})
	c.Flags().StringVar(&addr, "addr", "", "listen address (overrides AGENTPLANE_ADDR; default 127.0.0.1:8000)")
	c.Flags().StringVar(&dataDir, "data-dir", "", "data directory (overrides AGENTPLANE_DATA_DIR; default .data)")
	c.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile (pprof) of the whole run to this file when the server stops")
	return c
}

// versionInfo is what `agentplane version` prints.
type versionInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildInfo fills what -ldflags did not set: the module version (set by
// `go install module@vX`) and the VCS revision go build records.
func (a *app) buildInfo() versionInfo {
	v := versionInfo{Version: a.opts.Build.Version, Commit: a.opts.Build.Commit,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if ok && v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	if ok && v.Commit == "" {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			v.Commit = rev
			if dirty {
				v.Commit += "-dirty"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	v.Version = strings.TrimSpace(v.Version)
	return v
}

func (a *app) versionCommand() *cobra.Command {
	c := leaf("version", "Print the version, commit and Go version of this binary", cobra.NoArgs, nil)
	c.RunE = a.run(func(*cobra.Command, []string) error {
		v := a.buildInfo()
		if a.json {
			return printJSON(a.env.Stdout, v)
		}
		return fields(a.env.Stdout, "agentplane", v.Version, "commit", v.Commit, "go", v.Go, "platform", v.Platform)
	})
	return c
}
