package deployments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// This file is the build workflow's view of revisions: what to build, and
// the status changes and log lines the steps record.

// BuildJob is what the build workflow needs to know about a revision.
type BuildJob struct {
	DeploymentID string
	RevisionID   string
	WorkspaceID  string
	Source       Source
	Status       RevisionStatus
	// RepoURL and AllowLocal: where the source is and whether local paths
	// and non-public hosts may be read.
	RepoURL    string
	AllowLocal bool
	// RepoRef is a branch name or refs/tags/ ref; "" means the
	// repository's default branch.
	RepoRef string
	// CommitSHA is set once fetched, or inherited by a redeploy: the build
	// then uses exactly that commit.
	CommitSHA       string
	GraphConfigPath string
	ImageURI        string
	Graphs          []string
	// ArtifactKey is the blob key of the build artifact ("" before Build;
	// inherited by a redeploy).
	ArtifactKey    string
	RedeployOf     string
	InstallCommand string
	BuildCommand   string
	SecretNames    []string
}

// Blob layout of a deployment: everything under "deployments/{id}/", so a
// purge removes it with one prefix.
func blobPrefix(dep string) string { return "deployments/" + dep + "/" }

// LogKey is the blob key of a revision's build log.
func LogKey(dep, rev string) string { return blobPrefix(dep) + "revisions/" + rev + "/build.log" }

// SourceKey is the blob key of a revision's fetched source archive.
func SourceKey(dep, rev string) string {
	return blobPrefix(dep) + "revisions/" + rev + "/source.tar.gz"
}

// ArtifactKey is the blob key of the build artifact a revision produces.
func ArtifactKey(dep, rev string) string { return blobPrefix(dep) + "artifacts/" + rev + ".tar.gz" }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// liveRevision loads a revision that may still build: ErrHalted when it is
// gone or finished, or its deployment is gone or being deleted.
func (s *Service) liveRevision(ctx context.Context, depID, revID string) (*deployment, int64, *revision, int64, error) {
	r, rv, err := s.loadRevision(ctx, depID, revID)
	if errors.Is(err, errRevisionMissing) {
		return nil, 0, nil, 0, fmt.Errorf("%w: revision %s no longer exists", ErrHalted, revID)
	}
	if err != nil {
		return nil, 0, nil, 0, err
	}
	if r.Status.Terminal() {
		return nil, 0, r, rv, fmt.Errorf("%w: revision %s is %s", ErrHalted, revID, r.Status)
	}
	d, dv, err := s.loadDeployment(ctx, depID)
	if errors.Is(err, ErrDeploymentNotFound) || (err == nil && d.Status == StatusAwaitingDelete) {
		return nil, 0, r, rv, fmt.Errorf("%w: deployment %s is deleted", ErrHalted, depID)
	}
	if err != nil {
		return nil, 0, nil, 0, err
	}
	return d, dv, r, rv, nil
}

// BuildJob returns the job of a revision that may still build, or
// ErrHalted.
func (s *Service) BuildJob(ctx context.Context, depID, revID string) (BuildJob, error) {
	d, _, r, _, err := s.liveRevision(ctx, depID, revID)
	if err != nil {
		return BuildJob{}, err
	}
	j := BuildJob{
		DeploymentID: d.ID, RevisionID: r.ID, WorkspaceID: d.WorkspaceID, Source: d.Source, Status: r.Status,
		RepoURL: deref(d.Config.RepoURL), AllowLocal: s.allowsLocal(ctx, d.Config.IntegrationID),
		RepoRef: deref(r.Config.RepoRef), CommitSHA: deref(r.Config.RepoCommitSHA),
		GraphConfigPath: deref(r.Config.GraphConfigPath), ImageURI: deref(r.Config.ImageURI),
		Graphs: r.Graphs, ArtifactKey: r.ArtifactKey, RedeployOf: r.RedeployOf,
		InstallCommand: deref(d.Config.InstallCommand), BuildCommand: deref(d.Config.BuildCommand),
	}
	if j.Source == SourceRepoHost && j.GraphConfigPath == "" {
		j.GraphConfigPath = defaultGraphConfigPath
	}
	for _, sec := range r.Config.Secrets {
		j.SecretNames = append(j.SecretNames, sec.Name)
	}
	return j, nil
}

// Progress is what a build step records on its revision; zero fields keep
// their value.
type Progress struct {
	Status      RevisionStatus
	RepoRef     string
	CommitSHA   string
	Graphs      []string
	ArtifactKey string
}

// Advance records progress on a revision that may still build (ErrHalted
// otherwise). A resolved ref or commit of the latest revision is copied to
// the deployment in the same transaction, since the deployment shows its
// latest revision's source_revision_config.
func (s *Service) Advance(ctx context.Context, depID, revID string, pr Progress) error {
	if pr.Status != "" && pr.Status.Terminal() {
		return fmt.Errorf("deployments: Advance to terminal status %s", pr.Status)
	}
	return retry(ctx, func() error {
		d, dv, r, rv, err := s.liveRevision(ctx, depID, revID)
		if err != nil {
			return err
		}
		now := s.now()
		if pr.Status != "" {
			r.Status = pr.Status
		}
		if pr.RepoRef != "" {
			r.Config.RepoRef = &pr.RepoRef
		}
		if pr.CommitSHA != "" {
			r.Config.RepoCommitSHA = &pr.CommitSHA
		}
		if pr.Graphs != nil {
			r.Graphs = pr.Graphs
		}
		if pr.ArtifactKey != "" {
			r.ArtifactKey = pr.ArtifactKey
		}
		r.UpdatedAt = now
		if (pr.RepoRef == "" && pr.CommitSHA == "") || d.LatestRevisionID != r.ID {
			_, err := s.st.Put(ctx, revItem(r), store.HasVersion(rv))
			return err
		}
		d.Current.RepoRef, d.Current.RepoCommitSHA = r.Config.RepoRef, r.Config.RepoCommitSHA
		d.UpdatedAt = now
		return s.changed(d.ID, s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: revItem(r), Cond: store.HasVersion(rv)},
			{Kind: store.OpPut, Item: s.depItem(d), Cond: store.HasVersion(dv)},
		}))
	})
}

// MarkDeployed ends a revision DEPLOYED and makes it the deployment's active
// revision (READY from then on), in one transaction, so a revision
// superseded meanwhile is never activated.
func (s *Service) MarkDeployed(ctx context.Context, depID, revID string) error {
	return retry(ctx, func() error {
		d, dv, r, rv, err := s.liveRevision(ctx, depID, revID)
		if errors.Is(err, ErrHalted) && r != nil && r.Status == RevDeployed {
			return nil // already done (a re-run after a restart)
		}
		if err != nil {
			return err
		}
		now := s.now()
		r.Status, r.StatusMessage, r.UpdatedAt = RevDeployed, "", now
		d.ActiveRevisionID = r.ID
		d.ActiveGraphs = append([]string(nil), r.Graphs...)
		if d.Status == StatusAwaitingDatabase || d.Status == StatusUnused {
			d.Status = StatusReady
		}
		d.UpdatedAt = now
		return s.changed(d.ID, s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: revItem(r), Cond: store.HasVersion(rv)},
			{Kind: store.OpPut, Item: s.depItem(d), Cond: store.HasVersion(dv)},
		}))
	})
}

// MarkFailed ends an unfinished revision with a failure (or INTERRUPTED)
// status and the reason; a finished revision is left as it is. When it is
// the latest revision of a deployment that no revision serves, the
// deployment turns UNUSED in the same transaction: nothing serves it and
// nothing is on its way (a new revision makes it AWAITING_DATABASE again).
func (s *Service) MarkFailed(ctx context.Context, depID, revID string, status RevisionStatus, reason string) error {
	if !status.Terminal() || status == RevDeployed {
		return fmt.Errorf("deployments: MarkFailed with status %s", status)
	}
	if len(reason) > 2000 {
		reason = strings.ToValidUTF8(reason[:2000], "") + "…"
	}
	return retry(ctx, func() error {
		r, rv, err := s.loadRevision(ctx, depID, revID)
		if errors.Is(err, errRevisionMissing) {
			return nil
		}
		if err != nil || r.Status.Terminal() {
			return err
		}
		now := s.now()
		r.Status, r.StatusMessage, r.UpdatedAt = status, reason, now
		ops := []store.TxOp{{Kind: store.OpPut, Item: revItem(r), Cond: store.HasVersion(rv)}}
		d, dv, err := s.loadDeployment(ctx, depID)
		if err != nil && !errors.Is(err, ErrDeploymentNotFound) {
			return err
		}
		if err == nil && d.LatestRevisionID == r.ID && d.ActiveRevisionID == "" && d.Status == StatusAwaitingDatabase {
			d.Status, d.UpdatedAt = StatusUnused, now
			ops = append(ops, store.TxOp{Kind: store.OpPut, Item: s.depItem(d), Cond: store.HasVersion(dv)})
		}
		return s.changed(depID, s.st.Transact(ctx, ops))
	})
}

// OpenSecrets decrypts a revision's secrets (for the deploy step, which
// hands them to the container as environment variables). Never log them.
func (s *Service) OpenSecrets(ctx context.Context, depID, revID string) (map[string]string, error) {
	r, _, err := s.loadRevision(ctx, depID, revID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(r.Config.Secrets))
	for _, sec := range r.Config.Secrets {
		v, err := s.o.Keeper.Open(ctx, sec.Sealed, secretAAD(depID, sec.Name))
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", sec.Name, err)
		}
		out[sec.Name] = string(v)
	}
	return out, nil
}

// LogLine is one line of a build log.
type LogLine struct {
	Timestamp time.Time `json:"timestamp"`
	Step      string    `json:"step"`
	Message   string    `json:"message"`
}

// maxLogBytes caps a build log; later lines are dropped after a marker.
const maxLogBytes = 1 << 20

const truncatedMarker = "log truncated: it exceeded 1 MiB"

// AppendLog adds a line to a revision's build log (JSON lines in blob
// storage). Steps of one revision run one after another, so
// read-append-write does not race.
func (s *Service) AppendLog(ctx context.Context, depID, revID, step, message string) error {
	key := LogKey(depID, revID)
	old, err := blobs.ReadAll(ctx, s.o.Blobs, key)
	if err != nil && !errors.Is(err, blobs.ErrNotFound) {
		return err
	}
	if bytes.Contains(old, []byte(truncatedMarker)) {
		return nil
	}
	line := mustJSON(LogLine{Timestamp: s.now(), Step: step, Message: strings.ToValidUTF8(message, "?")})
	if len(old)+len(line) > maxLogBytes {
		line = mustJSON(LogLine{Timestamp: s.now(), Step: step, Message: truncatedMarker})
	}
	buf := append(append(old, line...), '\n')
	return blobs.WriteAll(ctx, s.o.Blobs, key, buf, "application/x-ndjson")
}

// Logs returns a page of a revision's build log, oldest line first.
func (s *Service) Logs(ctx context.Context, ws, depID, revID string, limit, offset int) ([]LogLine, error) {
	if _, err := s.Revision(ctx, ws, depID, revID); err != nil {
		return nil, err
	}
	data, err := blobs.ReadAll(ctx, s.o.Blobs, LogKey(depID, revID))
	if errors.Is(err, blobs.ErrNotFound) {
		return []LogLine{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []LogLine{}
	i := 0
	for _, raw := range bytes.Split(data, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var l LogLine
		if json.Unmarshal(raw, &l) != nil {
			continue
		}
		if i >= offset && len(out) < limit {
			out = append(out, l)
		}
		i++
	}
	return out, nil
}
