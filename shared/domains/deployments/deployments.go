package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"log/slog"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

const defaultGraphConfigPath = "langgraph.json"

var sourceNames = []string{string(SourceRepoHost), string(SourceExternalContainer)}

func secretAAD(dep, name string) string { return "deployment/" + dep + "/secret/" + name }

func (s *Service) sourceAllowed(src Source) error {
	switch {
	case src == SourceRepoHost && !s.o.RepoHost:
		return fault.Bad("Source repo_host is only available on the hosted (cloud) service; self-hosted installations deploy external_container images.")
	case src == SourceExternalContainer && !s.o.ExternalContainer:
		return fault.Bad("Source external_container is only available on self-hosted installations; the hosted service deploys repo_host repositories.")
	}
	return nil
}

// sealNew seals the new values of a request's secrets (not the ones sent
// back redacted), once, before any retry loop.
func (s *Service) sealNew(ctx context.Context, dep string, in []secretInput) (map[string]string, error) {
	out := map[string]string{}
	for _, sec := range in {
		if sec.Keep {
			continue
		}
		sealed, err := s.o.Keeper.Seal(ctx, []byte(sec.Value), secretAAD(dep, sec.Name))
		if err != nil {
			return nil, fmt.Errorf("deployments: seal secret: %w", err)
		}
		out[sec.Name] = sealed
	}
	return out, nil
}

// resolveSecrets builds the stored secret list of a request: new values
// sealed, redacted values replaced by the stored value of that name.
func resolveSecrets(in []secretInput, fresh map[string]string, stored []sealedSecret) ([]sealedSecret, error) {
	old := map[string]string{}
	for _, s := range stored {
		old[s.Name] = s.Sealed
	}
	var p fault.Problems
	out := make([]sealedSecret, 0, len(in))
	for i, sec := range in {
		if !sec.Keep {
			out = append(out, sealedSecret{Name: sec.Name, Sealed: fresh[sec.Name]})
			continue
		}
		v, ok := old[sec.Name]
		if !ok {
			p.Add(loc("body", "secrets", i, "value"), fmt.Sprintf("%q is the redacted placeholder, and no value of secret %s is stored to keep: send the secret's value", Redacted, sec.Name), "value_error")
			continue
		}
		out = append(out, sealedSecret{Name: sec.Name, Sealed: v})
	}
	return out, p.Err()
}

// newRevision numbers a new revision of d and makes it the latest.
func (s *Service) newRevision(d *deployment, trigger string, cfg revisionConfig, now time.Time) *revision {
	d.RevisionCount++
	r := &revision{
		ID: uuid.NewString(), DeploymentID: d.ID, WorkspaceID: d.WorkspaceID, Seq: d.RevisionCount,
		Source: d.Source, Status: RevQueued, CreatedAt: now, UpdatedAt: now, Config: cfg, Trigger: trigger,
	}
	d.LatestRevisionID = r.ID
	d.Current = cfg
	d.UpdatedAt = now
	if d.Status == StatusUnused {
		// Nothing served it; now a revision is on its way.
		d.Status = StatusAwaitingDatabase
	}
	return r
}

// supersedeOp ends d's latest revision if it is unfinished (SKIPPED while it
// waits to build, INTERRUPTED once building), as a versioned transaction
// operation.
func (s *Service) supersedeOp(ctx context.Context, d *deployment, now time.Time, why string) (*store.TxOp, error) {
	if d.LatestRevisionID == "" {
		return nil, nil
	}
	old, v, err := s.loadRevision(ctx, d.ID, d.LatestRevisionID)
	if errors.Is(err, errRevisionMissing) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if old.Status.Terminal() {
		return nil, nil
	}
	old.Status = old.Status.supersededStatus()
	old.StatusMessage = why
	old.UpdatedAt = now
	return &store.TxOp{Kind: store.OpPut, Item: revItem(old), Cond: store.HasVersion(v)}, nil
}

// commitRevision writes the deployment (at version v), its new revision and
// the superseded one in one transaction.
func (s *Service) commitRevision(ctx context.Context, d *deployment, v int64, r *revision, sup *store.TxOp) error {
	ops := []store.TxOp{
		{Kind: store.OpPut, Item: s.depItem(d), Cond: store.HasVersion(v)},
		{Kind: store.OpPut, Item: revItem(r), Cond: store.NotExists()},
	}
	if sup != nil {
		ops = append(ops, *sup)
	}
	return s.changed(d.ID, s.st.Transact(ctx, ops))
}

// enqueueBuild sends a revision to the build queue. A failure is logged,
// not returned: the revision is recorded QUEUED and the sweep (and local
// start-up) enqueues unfinished revisions again.
func (s *Service) enqueueBuild(ctx context.Context, r *revision) {
	if err := s.o.Queue.Enqueue(context.WithoutCancel(ctx), TopicBuild, BuildMessage{DeploymentID: r.DeploymentID, RevisionID: r.ID}); err != nil {
		s.log.Error("deployments: cannot enqueue build; the sweep will retry", slog.String("revision_id", r.ID), slog.String("error", err.Error()))
	}
}

// enqueueProject asks the tracing domain for the deployment's project ("a
// tracing project of the same name is created automatically"). A lost
// message is sent again by the sweep while the first revision is queued.
func (s *Service) enqueueProject(ctx context.Context, d *deployment) {
	m := ProjectMessage{WorkspaceID: d.WorkspaceID, Name: d.Name, DeploymentID: d.ID}
	if err := s.o.Queue.Enqueue(context.WithoutCancel(ctx), TopicProjectEnsure, m); err != nil {
		s.log.Error("deployments: cannot ask for the tracing project; the sweep will retry", slog.String("deployment_id", d.ID), slog.String("error", err.Error()))
	}
}

// Create creates a deployment and its first revision (workspace ws).
func (s *Service) Create(ctx context.Context, ws string, req DeploymentRequest) (Deployment, error) {
	var p fault.Problems
	name := checkName(&p, loc("body", "name"), req.Name)
	var src Source
	switch {
	case req.Source == nil:
		p.Add(loc("body", "source"), "Field required", "missing")
	case !oneOf(*req.Source, sourceNames):
		p.Add(loc("body", "source"), enumMsg(sourceNames), "enum")
	default:
		src = Source(*req.Source)
	}
	sc, rc := req.SourceConfig, req.SourceRevisionConfig
	if sc == nil {
		p.Add(loc("body", "source_config"), "Field required", "missing")
		sc = &SourceConfig{}
	}
	if rc == nil {
		p.Add(loc("body", "source_revision_config"), "Field required", "missing")
		rc = &SourceRevisionConfig{}
	}
	var secretsIn []secretInput
	if req.Secrets == nil {
		p.Add(loc("body", "secrets"), "Field required", "missing")
	} else {
		secretsIn = checkSecrets(&p, loc("body", "secrets"), *req.Secrets)
		for i, sec := range *req.Secrets {
			if sec.Value != nil && *sec.Value == Redacted {
				p.Add(loc("body", "secrets", i, "value"), fmt.Sprintf("%q is the redacted placeholder: send the secret's value", Redacted), "value_error")
			}
		}
	}
	checkImageVersion(&p, loc("body", "image_version"), req.ImageVersion)
	if src != "" {
		checkSourceConfig(&p, src, sc, true)
		checkRevisionConfig(&p, src, rc)
	}
	switch src {
	case SourceRepoHost:
		if isTagRef(rc.RepoRef) && sc.BuildOnPush != nil && *sc.BuildOnPush {
			p.Add(loc("body", "source_config", "build_on_push"), "build_on_push cannot be true when source_revision_config.repo_ref is a tag (refs/tags/...): tags do not move", "value_error")
		}
	case SourceExternalContainer:
		if rc.ImageURI == nil {
			p.Add(loc("body", "source_revision_config", "image_uri"), "Field required for external_container deployments", "missing")
		}
	}
	if err := p.Err(); err != nil {
		return Deployment{}, err
	}
	if err := s.sourceAllowed(src); err != nil {
		return Deployment{}, err
	}
	switch src {
	case SourceRepoHost:
		if err := s.resolveIntegration(ctx, ws, sc, &p); err != nil {
			return Deployment{}, err
		}
		if sc.DeploymentType == nil {
			sc.DeploymentType = strPtrAlways("dev")
		}
		if sc.BuildOnPush == nil {
			sc.BuildOnPush = boolPtr(false)
		}
		if rc.GraphConfigPath == nil {
			rc.GraphConfigPath = strPtrAlways(defaultGraphConfigPath)
		}
	case SourceExternalContainer:
		if err := s.checkListenerRef(ctx, ws, sc, &p); err != nil {
			return Deployment{}, err
		}
	}
	if err := p.Err(); err != nil {
		return Deployment{}, err
	}

	id := uuid.NewString()
	fresh, err := s.sealNew(ctx, id, secretsIn)
	if err != nil {
		return Deployment{}, err
	}
	sealed, err := resolveSecrets(secretsIn, fresh, nil)
	if err != nil {
		return Deployment{}, err
	}
	now := s.now()
	cfg := revisionConfig{SourceRevisionConfig: *rc, Secrets: sealed, ResourceSpec: sc.ResourceSpec}
	conf := *sc
	conf.ResourceSpec, conf.CustomURL = nil, sc.CustomURL
	d := &deployment{ID: id, WorkspaceID: ws, Name: name, Source: src, CreatedAt: now, UpdatedAt: now,
		Status: StatusAwaitingDatabase, Config: conf, ImageVersion: req.ImageVersion}
	r := s.newRevision(d, "create", cfg, now)

	err = retry(ctx, func() error {
		err := s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: nameKey(ws, name), Data: mustJSON(map[string]string{"deployment_id": id})}, Cond: store.NotExists()},
			{Kind: store.OpPut, Item: s.depItem(d), Cond: store.NotExists()},
			{Kind: store.OpPut, Item: revItem(r), Cond: store.NotExists()},
		})
		var tce *store.TxConditionError
		if errors.As(err, &tce) && tce.Index == 0 {
			return fault.Clash("A deployment named '%s' already exists in this workspace.", name)
		}
		return err
	})
	if err != nil {
		return Deployment{}, apiError(err)
	}
	s.enqueueProject(ctx, d)
	s.enqueueBuild(ctx, r)
	return d.view(s.o.BaseURL), nil
}

func strPtrAlways(s string) *string { return &s }
func boolPtr(b bool) *bool          { return &b }

// resolveIntegration fills a create's integration_id (the workspace's seeded
// integration when absent), checks that it belongs to the workspace, and
// checks repo_url against what the integration may read.
func (s *Service) resolveIntegration(ctx context.Context, ws string, sc *SourceConfig, p *fault.Problems) error {
	l := loc("body", "source_config")
	var in Integration
	if sc.IntegrationID == nil {
		seeded, err := s.ensureIntegration(ctx, ws)
		if err != nil {
			return err
		}
		in = seeded
		sc.IntegrationID = &in.ID
	} else {
		found, err := s.integration(ctx, *sc.IntegrationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil || found.WorkspaceID != ws {
			p.Add(with(l, "integration_id"), "No integration "+*sc.IntegrationID+" in this workspace (see GET /v1/integrations/repo_host/install)", "value_error")
			return nil
		}
		in = found
	}
	if msg := CheckRepoURL(*sc.RepoURL, in.AllowsLocalRepositories && s.o.AllowLocalRepos); msg != "" {
		p.Add(with(l, "repo_url"), msg, "value_error")
	}
	return nil
}

// Get reads a deployment of workspace ws.
func (s *Service) Get(ctx context.Context, ws, id string) (Deployment, error) {
	d, _, err := s.deploymentFor(ctx, ws, id)
	if err != nil {
		return Deployment{}, err
	}
	return d.view(s.o.BaseURL), nil
}

// ListFilter filters the deployment list.
type ListFilter struct {
	NameContains   string
	Status         Status
	DeploymentType string
	IDs            map[string]bool
}

func (f ListFilter) match(d *deployment) bool {
	if f.NameContains != "" && !strings.Contains(d.Name, f.NameContains) {
		return false
	}
	if f.Status != "" && d.Status != f.Status {
		return false
	}
	if f.DeploymentType != "" && (d.Config.DeploymentType == nil || *d.Config.DeploymentType != f.DeploymentType) {
		return false
	}
	if f.IDs != nil && !f.IDs[d.ID] {
		return false
	}
	return true
}

// eachDeployment calls fn for the workspace's deployments, newest first,
// until it returns false.
func (s *Service) eachDeployment(ctx context.Context, ws string, fn func(*deployment) bool) error {
	q := store.Query{Index: idxList, PK: "depws#" + ws, Desc: true}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			var d deployment
			if json.Unmarshal(it.Data, &d) != nil {
				continue
			}
			if !fn(&d) {
				return nil
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}

// List returns a page of the workspace's deployments, newest first.
func (s *Service) List(ctx context.Context, ws string, f ListFilter, limit, offset int) ([]Deployment, error) {
	out := []Deployment{}
	skipped := 0
	err := s.eachDeployment(ctx, ws, func(d *deployment) bool {
		if !f.match(d) {
			return true
		}
		if skipped < offset {
			skipped++
			return true
		}
		out = append(out, d.view(s.o.BaseURL))
		return len(out) < limit
	})
	return out, err
}

// Patch updates a deployment. A non-null repo_ref, graph_config_path,
// image_uri, secrets or resource_spec creates a new revision.
func (s *Service) Patch(ctx context.Context, ws, id string, req DeploymentRequest) (Deployment, error) {
	var p fault.Problems
	immutable(&p, loc("body", "name"), req.Name != nil)
	immutable(&p, loc("body", "source"), req.Source != nil)
	checkImageVersion(&p, loc("body", "image_version"), req.ImageVersion)
	var secretsIn []secretInput
	if req.Secrets != nil {
		secretsIn = checkSecrets(&p, loc("body", "secrets"), *req.Secrets)
	}
	d0, _, err := s.deploymentFor(ctx, ws, id)
	if err != nil {
		return Deployment{}, err
	}
	sc, rc := req.SourceConfig, req.SourceRevisionConfig
	if sc != nil {
		checkSourceConfig(&p, d0.Source, sc, false)
	}
	if rc != nil {
		checkRevisionConfig(&p, d0.Source, rc)
	}
	if err := p.Err(); err != nil {
		return Deployment{}, err
	}
	makesRevision := req.Secrets != nil || (sc != nil && sc.ResourceSpec != nil) ||
		(rc != nil && (rc.RepoRef != nil || rc.GraphConfigPath != nil || rc.ImageURI != nil))
	fresh, err := s.sealNew(ctx, id, secretsIn)
	if err != nil {
		return Deployment{}, err
	}
	var out *deployment
	var created *revision
	err = retry(ctx, func() error {
		d, v, err := s.deploymentFor(ctx, ws, id)
		if err != nil {
			return err
		}
		if d.Status == StatusAwaitingDelete {
			return fault.Bad("Deployment ID %s is being deleted.", id)
		}
		now := s.now()
		d.UpdatedAt = now
		if sc != nil {
			if sc.BuildOnPush != nil {
				d.Config.BuildOnPush = sc.BuildOnPush
			}
			if sc.CustomURL != nil {
				d.Config.CustomURL = sc.CustomURL
			}
			if sc.InstallCommand != nil {
				d.Config.InstallCommand = sc.InstallCommand
			}
			if sc.BuildCommand != nil {
				d.Config.BuildCommand = sc.BuildCommand
			}
		}
		if req.ImageVersion != nil {
			d.ImageVersion = req.ImageVersion
		}
		cfg := d.Current
		if rc != nil {
			if rc.RepoRef != nil {
				cfg.RepoRef = rc.RepoRef
			}
			if rc.GraphConfigPath != nil {
				cfg.GraphConfigPath = rc.GraphConfigPath
			}
			if rc.ImageURI != nil {
				cfg.ImageURI = rc.ImageURI
			}
		}
		if d.Source == SourceRepoHost && isTagRef(cfg.RepoRef) && d.Config.BuildOnPush != nil && *d.Config.BuildOnPush {
			l := loc("body", "source_config", "build_on_push")
			if sc == nil || sc.BuildOnPush == nil {
				l = loc("body", "source_revision_config", "repo_ref")
			}
			return fault.Invalid(l, "build_on_push cannot be true while repo_ref is a tag (refs/tags/...): tags do not move", "value_error")
		}
		if !makesRevision {
			if _, err := s.st.Put(ctx, s.depItem(d), store.HasVersion(v)); s.changed(d.ID, err) != nil {
				return err
			}
			out = d
			return nil
		}
		if req.Secrets != nil {
			sealed, err := resolveSecrets(secretsIn, fresh, d.Current.Secrets)
			if err != nil {
				return err
			}
			cfg.Secrets = sealed
		}
		if sc != nil && sc.ResourceSpec != nil {
			cfg.ResourceSpec = sc.ResourceSpec
		}
		// A new build records its own commit.
		cfg.RepoCommitSHA = nil
		sup, err := s.supersedeOp(ctx, d, now, "Superseded by a newer revision")
		if err != nil {
			return err
		}
		r := s.newRevision(d, "patch", cfg, now)
		if err := s.commitRevision(ctx, d, v, r, sup); err != nil {
			return err
		}
		out, created = d, r
		return nil
	})
	if err != nil {
		return Deployment{}, apiError(err)
	}
	if created != nil {
		s.enqueueBuild(ctx, created)
	}
	return out.view(s.o.BaseURL), nil
}

// Redeploy rolls the deployment to revision revID: a new revision with that
// revision's configuration and build artifact (the build is skipped when the
// artifact still exists).
func (s *Service) Redeploy(ctx context.Context, ws, depID, revID string) (Deployment, error) {
	var out *deployment
	var created *revision
	err := retry(ctx, func() error {
		d, v, err := s.deploymentFor(ctx, ws, depID)
		if err != nil {
			return err
		}
		if d.Status == StatusAwaitingDelete {
			return fault.Bad("Deployment ID %s is being deleted.", depID)
		}
		target, _, err := s.loadRevision(ctx, depID, revID)
		if errors.Is(err, errRevisionMissing) {
			return revisionNotFound(revID)
		}
		if err != nil {
			return err
		}
		if !target.Status.Terminal() {
			return fault.Bad("Revision ID %s is still in progress (status %s); wait for it to finish before redeploying it.", revID, target.Status)
		}
		now := s.now()
		sup, err := s.supersedeOp(ctx, d, now, "Superseded by a redeploy of revision "+revID)
		if err != nil {
			return err
		}
		r := s.newRevision(d, "redeploy", target.Config, now)
		r.RedeployOf = target.ID
		r.ArtifactKey = target.ArtifactKey
		r.Graphs = append([]string(nil), target.Graphs...)
		if err := s.commitRevision(ctx, d, v, r, sup); err != nil {
			return err
		}
		out, created = d, r
		return nil
	})
	if err != nil {
		return Deployment{}, apiError(err)
	}
	s.enqueueBuild(ctx, created)
	return out.view(s.o.BaseURL), nil
}

// Delete marks a deployment AWAITING_DELETE (its name is free again at
// once), ends its unfinished revision, and queues the removal of everything
// it owns; the deployment is 404 once that is done.
func (s *Service) Delete(ctx context.Context, ws, id string, deleteTracingProject bool) error {
	err := retry(ctx, func() error {
		d, v, err := s.deploymentFor(ctx, ws, id)
		if err != nil {
			return err
		}
		if d.Status == StatusAwaitingDelete {
			return nil
		}
		now := s.now()
		sup, err := s.supersedeOp(ctx, d, now, "The deployment was deleted")
		if err != nil {
			return err
		}
		d.Status, d.UpdatedAt, d.DeleteRequestedAt, d.DeleteTracingProject = StatusAwaitingDelete, now, &now, deleteTracingProject
		ops := []store.TxOp{
			{Kind: store.OpPut, Item: s.depItem(d), Cond: store.HasVersion(v)},
			{Kind: store.OpDelete, Key: nameKey(ws, d.Name)},
		}
		if sup != nil {
			ops = append(ops, *sup)
		}
		return s.changed(d.ID, s.st.Transact(ctx, ops))
	})
	if err != nil {
		return apiError(err)
	}
	if err := s.o.Queue.Enqueue(context.WithoutCancel(ctx), TopicDelete, DeleteMessage{DeploymentID: id}); err != nil {
		s.log.Error("deployments: cannot enqueue deletion; the sweep will retry", slog.String("deployment_id", id), slog.String("error", err.Error()))
	}
	return nil
}

// RevisionStatuses parses a comma-separated status filter.
func parseRevisionStatuses(raw string) (map[RevisionStatus]bool, error) {
	if raw == "" {
		return nil, nil
	}
	out := map[RevisionStatus]bool{}
	for _, part := range strings.Split(raw, ",") {
		st := RevisionStatus(strings.TrimSpace(part))
		ok := false
		for _, known := range revisionStatuses {
			ok = ok || known == st
		}
		if !ok {
			names := make([]string, len(revisionStatuses))
			for i, k := range revisionStatuses {
				names[i] = string(k)
			}
			return nil, fault.Invalid(loc("query", "status"), "Each status should be one of "+strings.Join(names, ", "), "enum")
		}
		out[st] = true
	}
	return out, nil
}

// Revisions lists a deployment's revisions, newest first.
func (s *Service) Revisions(ctx context.Context, ws, depID string, statuses map[RevisionStatus]bool, limit, offset int) ([]Revision, error) {
	if _, _, err := s.deploymentFor(ctx, ws, depID); err != nil {
		return nil, err
	}
	out := []Revision{}
	skipped := 0
	q := store.Query{Index: idxList, PK: "deprevs#" + depID, Desc: true}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var r revision
			if json.Unmarshal(it.Data, &r) != nil || (statuses != nil && !statuses[r.Status]) {
				continue
			}
			if skipped < offset {
				skipped++
				continue
			}
			out = append(out, r.view())
			if len(out) == limit {
				return out, nil
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// Revision reads one revision of a deployment of workspace ws.
func (s *Service) Revision(ctx context.Context, ws, depID, revID string) (Revision, error) {
	if _, _, err := s.deploymentFor(ctx, ws, depID); err != nil {
		return Revision{}, err
	}
	r, _, err := s.loadRevision(ctx, depID, revID)
	if errors.Is(err, errRevisionMissing) {
		return Revision{}, revisionNotFound(revID)
	}
	if err != nil {
		return Revision{}, err
	}
	return r.view(), nil
}
