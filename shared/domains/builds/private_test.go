package builds_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/builds/gittest"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
)

// revisions is the control plane's side of one build, kept in memory: the
// steps under test only read the job and report progress.
type revisions struct {
	mu     sync.Mutex
	job    deployments.BuildJob
	log    []string
	failed string
}

func (r *revisions) BuildJob(_ context.Context, dep, rev string) (deployments.BuildJob, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.job, nil
}

func (r *revisions) Advance(_ context.Context, dep, rev string, p deployments.Progress) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.Status != "" {
		r.job.Status = p.Status
	}
	if p.CommitSHA != "" {
		r.job.CommitSHA = p.CommitSHA
	}
	if p.ArtifactKey != "" {
		r.job.ArtifactKey = p.ArtifactKey
	}
	if p.Graphs != nil {
		r.job.Graphs = p.Graphs
	}
	return nil
}

func (r *revisions) MarkDeployed(context.Context, string, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.job.Status = deployments.RevDeployed
	return nil
}

func (r *revisions) MarkFailed(_ context.Context, _, _ string, status deployments.RevisionStatus, reason string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.job.Status, r.failed = status, reason
	return nil
}

func (r *revisions) AppendLog(_ context.Context, _, _, step, msg string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, step+": "+msg)
	return nil
}

func (r *revisions) OpenSecrets(context.Context, string, string) (map[string]string, error) {
	return map[string]string{"OPENAI_API_KEY": "sk-test"}, nil
}

// A build writes the user's source only inside the data folder, with
// private modes: nothing reaches the system temp folder (issue 15, defect
// 3), whether the repository is read in place or cloned over HTTP.
func TestBuildWritesNothingOutsideTheDataFolder(t *testing.T) {
	r := gittest.NewRepo(t, filepath.Join(t.TempDir(), "agent"))
	r.Commit("agent", gittest.Agent("agent"))
	srv := gittest.NewServer(t)
	remote := srv.Add("agent", r.Dir)

	for name, url := range map[string]string{"local path": r.Dir, "smart http": remote} {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			sys := filepath.Join(t.TempDir(), "system-tmp")
			if err := os.Mkdir(sys, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", sys)

			bucket, err := blobs.NewDir(filepath.Join(data, "blobs"), filepath.Join(data, "tmp", "blobs"))
			if err != nil {
				t.Fatal(err)
			}
			revs := &revisions{job: deployments.BuildJob{DeploymentID: "dep-1", RevisionID: "rev-1",
				Source: deployments.SourceRepoHost, Status: deployments.RevQueued, RepoURL: url, AllowLocal: true,
				GraphConfigPath: "langgraph.json"}}
			b, err := builds.New(builds.Deps{Revisions: revs, Blobs: bucket, DeploymentURL: func(id string) string { return "http://x/" + id }})
			if err != nil {
				t.Fatal(err)
			}
			st := builds.Input("dep-1", "rev-1")
			for _, step := range b.Definition().Steps {
				if step.FailureOnly {
					continue
				}
				if st, err = step.Run(context.Background(), st); err != nil {
					t.Fatalf("step %s: %v\nlog:\n%s", step.Name, err, strings.Join(revs.log, "\n"))
				}
			}
			if revs.job.Status != deployments.RevDeployed {
				t.Fatalf("revision ended %s (%s)", revs.job.Status, revs.failed)
			}
			if ok, err := bucket.Exists(context.Background(), deployments.ArtifactKey("dep-1", "rev-1")); err != nil || !ok {
				t.Fatalf("artifact: %v %v", ok, err)
			}

			entries, err := os.ReadDir(sys)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("written to the system temp folder: %s", e.Name())
			}
			err = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == data {
					return err
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				if want := map[bool]fs.FileMode{true: 0o700, false: 0o600}[d.IsDir()]; info.Mode().Perm() != want {
					t.Errorf("%s: mode %v, want %v", p, info.Mode().Perm(), want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
