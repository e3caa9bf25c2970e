// Package builds is the revision-build workflow: one list of Go steps that
// the local runner executes in-process and that the CDK app turns into a
// Step Functions state machine (one Task state per step, Retry on transient
// errors, Catch to the step's failure handler).
//
// A revision walks QUEUED → AWAITING_BUILD (Queue) → BUILDING (FetchSource,
// ValidateConfig, Build) → AWAITING_DEPLOY → DEPLOYING → DEPLOYED (Deploy).
// A failure ends it CREATE_FAILED, BUILD_FAILED or DEPLOY_FAILED with the
// reason in its status message and build log. When a newer revision
// supersedes it, or its deployment is deleted, the remaining steps see that
// and stop without touching it (the execution still succeeds).
//
// Locally the Build step validates and packages the source into an
// artifact (a tarball in blob storage) but builds no container image; in AWS
// the state machine runs CodeBuild for that state instead (AWSService).
//
// Every step is idempotent: after a restart the runner runs the interrupted
// step again.
package builds

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/distribution/reference"
)

// WorkflowName is the build workflow's name (and the state machine's
// logical name).
const WorkflowName = "build"

// Step names, as the Step Functions console shows them.
const (
	StepQueue            = "Queue"
	StepFetchSource      = "FetchSource"
	StepValidateConfig   = "ValidateConfig"
	StepBuild            = "Build"
	StepDeploy           = "Deploy"
	StepMarkCreateFailed = "MarkCreateFailed"
	StepMarkBuildFailed  = "MarkBuildFailed"
	StepMarkDeployFailed = "MarkDeployFailed"
)

// State keys passed between steps (the execution input holds the first two).
const (
	KeyDeploymentID = "deployment_id"
	KeyRevisionID   = "revision_id"
	// KeyHalted: the revision was superseded or its deployment deleted;
	// later steps do nothing.
	KeyHalted = "halted"
	// KeyReuseArtifact: a redeploy whose artifact exists skips the build.
	KeyReuseArtifact = "reuse_artifact"
	// KeySourceKey: blob key of the fetched source archive (the Build
	// state's input in AWS).
	KeySourceKey = "source_key"
	// KeyArtifactKey: blob key of the artifact to deploy.
	KeyArtifactKey = "artifact_key"
)

// Revisions is what the steps need from the control plane
// (*deployments.Service).
type Revisions interface {
	BuildJob(ctx context.Context, depID, revID string) (deployments.BuildJob, error)
	Advance(ctx context.Context, depID, revID string, p deployments.Progress) error
	MarkDeployed(ctx context.Context, depID, revID string) error
	MarkFailed(ctx context.Context, depID, revID string, status deployments.RevisionStatus, reason string) error
	AppendLog(ctx context.Context, depID, revID, step, message string) error
	OpenSecrets(ctx context.Context, depID, revID string) (map[string]string, error)
}

// Deps are what a Builder runs with.
type Deps struct {
	Revisions Revisions
	Blobs     blobs.Bucket
	// DeploymentURL returns where a deployment is served.
	DeploymentURL func(deploymentID string) string
	Logger        *slog.Logger
	// FetchTimeout bounds fetching a repository (default 10 minutes).
	FetchTimeout time.Duration
}

// Builder binds the steps to their dependencies.
type Builder struct {
	d Deps
}

// New returns a Builder.
func New(d Deps) (*Builder, error) {
	if d.Revisions == nil || d.Blobs == nil || d.DeploymentURL == nil {
		return nil, errors.New("builds: revisions, blobs and a deployment URL function are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.FetchTimeout <= 0 {
		d.FetchTimeout = 10 * time.Minute
	}
	return &Builder{d: d}, nil
}

// Definition returns the build workflow's shape — step names, comments,
// retries, failure handlers and the CodeBuild integration of Build — for the
// CDK app. Its Run functions are not bound to a runtime and fail; the
// runtime uses (*Builder).Definition.
func Definition() workflow.Definition { return (&Builder{}).Definition() }

// Definition returns the workflow with its steps bound to b.
func (b *Builder) Definition() workflow.Definition {
	return workflow.Definition{Name: WorkflowName, Steps: []workflow.Step{
		{Name: StepQueue, Comment: "Take the revision off the queue: QUEUED to AWAITING_BUILD, or stop if a newer revision superseded it",
			Run: b.step(StepQueue, b.queue), MaxAttempts: 3, Backoff: time.Second, OnFailure: StepMarkCreateFailed},
		{Name: StepFetchSource, Comment: "BUILDING: clone the repository at its ref (or check the image reference) and record the commit",
			Run: b.step(StepFetchSource, b.fetchSource), MaxAttempts: 3, Backoff: 2 * time.Second, OnFailure: StepMarkBuildFailed},
		{Name: StepValidateConfig, Comment: "Check the graph configuration file (graphs and dependencies) and record the graph ids",
			Run: b.step(StepValidateConfig, b.validateConfig), MaxAttempts: 3, Backoff: time.Second, OnFailure: StepMarkBuildFailed},
		{Name: StepBuild, Comment: "Build the deployable artifact from the source (CodeBuild in AWS; locally the source is packaged, no image is built); then AWAITING_DEPLOY",
			Run: b.step(StepBuild, b.build), MaxAttempts: 2, Backoff: 5 * time.Second, OnFailure: StepMarkBuildFailed, AWSService: "codebuild"},
		{Name: StepDeploy, Comment: "DEPLOYING: hand the secrets to the container, make the thread API live at the deployment URL and mark the revision DEPLOYED and active",
			Run: b.step(StepDeploy, b.deploy), MaxAttempts: 3, Backoff: 2 * time.Second, OnFailure: StepMarkDeployFailed},
		{Name: StepMarkCreateFailed, Comment: "Catch: end the revision CREATE_FAILED with the error",
			Run: b.failure(deployments.RevCreateFailed), MaxAttempts: 5, Backoff: time.Second, FailureOnly: true},
		{Name: StepMarkBuildFailed, Comment: "Catch: end the revision BUILD_FAILED with the error, which the build log also shows",
			Run: b.failure(deployments.RevBuildFailed), MaxAttempts: 5, Backoff: time.Second, FailureOnly: true},
		{Name: StepMarkDeployFailed, Comment: "Catch: end the revision DEPLOY_FAILED with the error",
			Run: b.failure(deployments.RevDeployFailed), MaxAttempts: 5, Backoff: time.Second, FailureOnly: true},
	}}
}

// Input is the execution input for a revision.
func Input(deploymentID, revisionID string) workflow.State {
	return workflow.State{KeyDeploymentID: deploymentID, KeyRevisionID: revisionID}
}

type stepFunc func(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error)

func ids(st workflow.State) (string, string, error) {
	dep, _ := st[KeyDeploymentID].(string)
	rev, _ := st[KeyRevisionID].(string)
	if dep == "" || rev == "" {
		return "", "", fail("execution input lacks %s and %s", KeyDeploymentID, KeyRevisionID)
	}
	return dep, rev, nil
}

// step wraps a step: it loads the revision's job, stops quietly when the
// revision halted, and sorts errors into transient (retried) and permanent.
func (b *Builder) step(name string, f stepFunc) workflow.StepFunc {
	return func(ctx context.Context, st workflow.State) (workflow.State, error) {
		if b.d.Revisions == nil {
			return nil, fmt.Errorf("builds: step %s run without a runtime (use builds.New)", name)
		}
		if halted, _ := st[KeyHalted].(bool); halted {
			return st, nil
		}
		dep, rev, err := ids(st)
		if err != nil {
			return nil, err
		}
		job, err := b.d.Revisions.BuildJob(ctx, dep, rev)
		if err == nil {
			st, err = f(ctx, job, st)
		}
		if errors.Is(err, deployments.ErrHalted) {
			b.logf(ctx, dep, rev, name, "Stopping: %v", errors.Unwrap(err))
			st[KeyHalted] = true
			return st, nil
		}
		if err != nil && ctx.Err() == nil {
			var p permanent
			if !errors.As(err, &p) && !errors.Is(err, workflow.ErrTransient) {
				// Store and blob errors: worth another try.
				err = transient(err)
			}
			b.logf(ctx, dep, rev, name, "Error: %s", strings.TrimPrefix(err.Error(), workflow.ErrTransient.Error()+": "))
		}
		return st, err
	}
}

// logf appends to the revision's build log; a log failure never fails a
// step, it is only reported in the process log.
func (b *Builder) logf(ctx context.Context, dep, rev, step, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if err := b.d.Revisions.AppendLog(context.WithoutCancel(ctx), dep, rev, step, msg); err != nil {
		b.d.Logger.Warn("builds: cannot append to build log", slog.String("revision_id", rev), slog.String("error", err.Error()))
	}
}

func (b *Builder) advance(ctx context.Context, job deployments.BuildJob, p deployments.Progress) error {
	return b.d.Revisions.Advance(ctx, job.DeploymentID, job.RevisionID, p)
}

func (b *Builder) queue(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error) {
	if job.Status == deployments.RevQueued || job.Status == deployments.RevCreating {
		if err := b.advance(ctx, job, deployments.Progress{Status: deployments.RevAwaitingBuild}); err != nil {
			return st, err
		}
	}
	what := "image " + job.ImageURI
	if job.Source == deployments.SourceRepoHost {
		what = job.RepoURL + " at " + refName(job)
	}
	b.logf(ctx, job.DeploymentID, job.RevisionID, StepQueue, "Revision %s taken off the queue: building %s", job.RevisionID, what)
	return st, nil
}

func (b *Builder) blobExists(ctx context.Context, key string) (bool, error) {
	ok, err := b.d.Blobs.Exists(ctx, key)
	if err != nil {
		return false, transient(err)
	}
	return ok, nil
}

func (b *Builder) fetchSource(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error) {
	if err := b.advance(ctx, job, deployments.Progress{Status: deployments.RevBuilding}); err != nil {
		return st, err
	}
	dep, rev := job.DeploymentID, job.RevisionID
	if job.Source == deployments.SourceExternalContainer {
		named, err := reference.ParseNormalizedNamed(job.ImageURI)
		if err != nil {
			return st, fail("image_uri %q is not a valid OCI image reference: %v", job.ImageURI, err)
		}
		b.logf(ctx, dep, rev, StepFetchSource, "Image reference %s is valid (%s); nothing to fetch", job.ImageURI, named.String())
		return st, nil
	}
	if job.ArtifactKey != "" {
		ok, err := b.blobExists(ctx, job.ArtifactKey)
		if err != nil {
			return st, err
		}
		if ok {
			st[KeyReuseArtifact] = true
			st[KeyArtifactKey] = job.ArtifactKey
			b.logf(ctx, dep, rev, StepFetchSource, "Redeploy of revision %s: its build artifact exists, so fetch, validation and build are skipped", job.RedeployOf)
			return st, nil
		}
	}
	at := refName(job)
	if job.CommitSHA != "" {
		at = "commit " + job.CommitSHA
	}
	b.logf(ctx, dep, rev, StepFetchSource, "Fetching %s at %s", job.RepoURL, at)
	fctx, cancel := context.WithTimeout(ctx, b.d.FetchTimeout)
	defer cancel()
	src, err := Fetch(fctx, job)
	if err != nil {
		if ctx.Err() == nil && fctx.Err() != nil {
			return st, transient(fmt.Errorf("fetching took longer than %s", b.d.FetchTimeout))
		}
		return st, err
	}
	key := deployments.SourceKey(dep, rev)
	var files Tree
	err = b.writeBlob(ctx, key, func(w io.Writer) error {
		var err error
		files, err = src.WriteArchive(ctx, w)
		return err
	})
	if err != nil {
		return st, err
	}
	p := deployments.Progress{CommitSHA: src.Commit.Hash.String(), RepoRef: src.Branch}
	if err := b.advance(ctx, job, p); err != nil {
		return st, err
	}
	st[KeySourceKey] = key
	msg := "Fetched commit %s (%d files)"
	if src.Branch != "" {
		msg += " of the default branch " + src.Branch
	}
	b.logf(ctx, dep, rev, StepFetchSource, msg, src.Commit.Hash, len(files))
	return st, nil
}

// errUploadEnded stops an archive writer whose upload has failed.
var errUploadEnded = errors.New("builds: the upload ended")

// writeBlob streams what write produces to the blob key (gzip). When write
// fails its error is returned as it is (it may be permanent) and the blob is
// left as it was; an upload failure is transient.
func (b *Builder) writeBlob(ctx context.Context, key string, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err) // nil: the upload sees the end of the archive
		produced <- err
	}()
	err := b.d.Blobs.Put(ctx, key, pr, "application/gzip")
	pr.CloseWithError(errUploadEnded) // a writer still writing stops
	werr := <-produced
	switch {
	case werr != nil && !errors.Is(werr, errUploadEnded):
		return werr
	case err != nil:
		return transient(err)
	}
	return nil
}

// skipsBuild reports whether the build steps have nothing to do.
func skipsBuild(job deployments.BuildJob, st workflow.State) bool {
	reuse, _ := st[KeyReuseArtifact].(bool)
	return reuse || job.Source == deployments.SourceExternalContainer
}

func (b *Builder) validateConfig(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error) {
	dep, rev := job.DeploymentID, job.RevisionID
	if skipsBuild(job, st) {
		b.logf(ctx, dep, rev, StepValidateConfig, "Nothing to validate")
		return st, nil
	}
	r, err := b.d.Blobs.Get(ctx, deployments.SourceKey(dep, rev))
	if err != nil {
		return st, transient(err)
	}
	defer r.Close()
	tree := Tree{}
	var config []byte
	found := false
	err = readArchive(r, func(hdr *tar.Header, body io.Reader) error {
		tree[hdr.Name] = true
		if hdr.Name == job.GraphConfigPath {
			found = true
			if hdr.Typeflag != tar.TypeReg {
				return fail("graph configuration %s is not a regular file", job.GraphConfigPath)
			}
			data, err := io.ReadAll(io.LimitReader(body, maxConfigBytes+1))
			if err != nil {
				return err
			}
			config = data
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if !found {
		return st, fail("graph configuration file %s not found in the repository", job.GraphConfigPath)
	}
	cfg, err := ParseGraphConfig(job.GraphConfigPath, config, tree)
	if err != nil {
		return st, permanent{err}
	}
	graphs := cfg.IDs()
	if err := b.advance(ctx, job, deployments.Progress{Graphs: graphs}); err != nil {
		return st, err
	}
	b.logf(ctx, dep, rev, StepValidateConfig, "Graph configuration %s is valid: graphs %s", job.GraphConfigPath, strings.Join(graphs, ", "))
	return st, nil
}

// manifest is written into every artifact.
type manifest struct {
	DeploymentID    string   `json:"deployment_id"`
	RevisionID      string   `json:"revision_id"`
	RepoURL         string   `json:"repo_url"`
	Commit          string   `json:"commit"`
	GraphConfigPath string   `json:"graph_config_path"`
	Graphs          []string `json:"graphs"`
	InstallCommand  string   `json:"install_command,omitempty"`
	BuildCommand    string   `json:"build_command,omitempty"`
	// SecretNames are the environment variables the container gets; the
	// values never enter an artifact.
	SecretNames []string  `json:"secret_names"`
	BuiltAt     time.Time `json:"built_at"`
}

// ManifestName is the manifest's path inside an artifact.
const ManifestName = ".agentplane/build.json"

func (b *Builder) build(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error) {
	dep, rev := job.DeploymentID, job.RevisionID
	done := func(key string) (workflow.State, error) {
		if err := b.advance(ctx, job, deployments.Progress{Status: deployments.RevAwaitingDeploy, ArtifactKey: key}); err != nil {
			return st, err
		}
		if key != "" {
			st[KeyArtifactKey] = key
		}
		return st, nil
	}
	if skipsBuild(job, st) {
		if job.Source == deployments.SourceExternalContainer {
			b.logf(ctx, dep, rev, StepBuild, "External image: nothing to build")
		}
		return done("")
	}
	key := deployments.ArtifactKey(dep, rev)
	if job.ArtifactKey == key {
		// Built already (the step re-runs after a restart).
		return done(key)
	}
	src, err := b.d.Blobs.Get(ctx, deployments.SourceKey(dep, rev))
	if err != nil {
		return st, transient(err)
	}
	defer src.Close()
	graphs := append([]string(nil), job.Graphs...)
	sort.Strings(graphs)
	m := manifest{DeploymentID: dep, RevisionID: rev, RepoURL: job.RepoURL, Commit: job.CommitSHA,
		GraphConfigPath: job.GraphConfigPath, Graphs: graphs, InstallCommand: job.InstallCommand,
		BuildCommand: job.BuildCommand, SecretNames: job.SecretNames, BuiltAt: time.Now().UTC()}
	var n int
	err = b.writeBlob(ctx, key, func(w io.Writer) error {
		var err error
		n, err = packageArtifact(src, w, m)
		return err
	})
	if err != nil {
		return st, err
	}
	out, err := done(key)
	if err != nil {
		return out, err
	}
	_ = b.d.Blobs.Delete(ctx, deployments.SourceKey(dep, rev))
	b.logf(ctx, dep, rev, StepBuild, "Packaged %d files and the build manifest into artifact %s; the local builder builds no container image", n, key)
	return out, nil
}

// packageArtifact copies the source archive into the artifact, preceded by
// the manifest, and returns the number of files.
func packageArtifact(src io.Reader, dst io.Writer, m manifest) (int, error) {
	aw, err := newArchiveWriter(dst)
	if err != nil {
		return 0, err
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := aw.add(&tar.Header{Name: ManifestName, Mode: 0o644, Size: int64(len(data)), ModTime: m.BuiltAt, Typeflag: tar.TypeReg}, strings.NewReader(string(data))); err != nil {
		return 0, err
	}
	n := 0
	err = readArchive(src, func(hdr *tar.Header, r io.Reader) error {
		n++
		return aw.add(hdr, r)
	})
	if err != nil {
		return 0, err
	}
	return n, aw.close()
}

func (b *Builder) deploy(ctx context.Context, job deployments.BuildJob, st workflow.State) (workflow.State, error) {
	dep, rev := job.DeploymentID, job.RevisionID
	if err := b.advance(ctx, job, deployments.Progress{Status: deployments.RevDeploying}); err != nil {
		return st, err
	}
	if job.Source == deployments.SourceRepoHost {
		if job.ArtifactKey == "" {
			return st, fail("no build artifact recorded for revision %s", rev)
		}
		ok, err := b.blobExists(ctx, job.ArtifactKey)
		if err != nil {
			return st, err
		}
		if !ok {
			return st, fail("build artifact %s is missing", job.ArtifactKey)
		}
	}
	env, err := b.d.Revisions.OpenSecrets(ctx, dep, rev)
	if err != nil {
		return st, fail("cannot decrypt the secrets: %v", err)
	}
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	clear(env)
	if len(names) > 0 {
		b.logf(ctx, dep, rev, StepDeploy, "Secrets set as environment variables: %s", strings.Join(names, ", "))
	}
	// Logged first, so the log is complete once the status is final.
	b.logf(ctx, dep, rev, StepDeploy, "Activating revision %s as DEPLOYED; the thread API is served at %s", rev, b.d.DeploymentURL(dep))
	return st, b.d.Revisions.MarkDeployed(ctx, dep, rev)
}

// failure is a Catch handler: it ends the revision with status and the
// failed step's error.
func (b *Builder) failure(status deployments.RevisionStatus) workflow.StepFunc {
	return func(ctx context.Context, st workflow.State) (workflow.State, error) {
		if b.d.Revisions == nil {
			return nil, errors.New("builds: failure handler run without a runtime (use builds.New)")
		}
		dep, rev, err := ids(st)
		if err != nil {
			return nil, err
		}
		cause := "unknown error"
		if e, ok := st[workflow.ErrorKey].(map[string]any); ok {
			if c, ok := e["Cause"].(string); ok && c != "" {
				cause = c
			}
		}
		cause = strings.TrimPrefix(cause, workflow.ErrTransient.Error()+": ")
		b.logf(ctx, dep, rev, "Mark"+string(status), "Revision ends %s: %s", status, cause)
		if err := b.d.Revisions.MarkFailed(ctx, dep, rev, status, cause); err != nil {
			return st, transient(err)
		}
		return st, nil
	}
}
