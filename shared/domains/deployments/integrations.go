package deployments

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// Integration is a repository-host integration of a workspace: what
// source_config.integration_id names. Each workspace has one seeded
// integration: in local mode it may read repositories on this machine
// (file:// URLs and absolute paths) and loopback or private hosts; hosted, it
// reads public https repositories only.
type Integration struct {
	ID string `json:"id"`
	// InstallationID mirrors the repository host's installation number.
	InstallationID int64  `json:"installation_id"`
	Name           string `json:"name"`
	// Kind is "local" or "https".
	Kind string `json:"kind"`
	// AllowsLocalRepositories says whether file:// URLs, absolute paths
	// and non-public hosts are accepted.
	AllowsLocalRepositories bool      `json:"allows_local_repositories"`
	CreatedAt               time.Time `json:"created_at"`
	WorkspaceID             string    `json:"-"`
}

type storedIntegration struct {
	Integration
	WorkspaceID string `json:"workspace_id"`
}

const (
	kindLocal = "local"
	kindHTTPS = "https"
)

func intgKey(id string) store.Key { return store.Key{PK: "intg#" + id, SK: "#intg"} }

// integrationNS derives seeded integration ids, so seeding is idempotent
// across processes without a lookup.
var integrationNS = uuid.MustParse("6f0f3c52-6a35-4f43-9d55-7a0b1f3c9e21")

func seededID(ws, kind string) string {
	return uuid.NewSHA1(integrationNS, []byte(ws+"/"+kind)).String()
}

// seededKind is the kind of integration this installation seeds.
func (s *Service) seededKind() string {
	if s.o.AllowLocalRepos {
		return kindLocal
	}
	return kindHTTPS
}

// ensureIntegration creates the workspace's seeded integration if it is
// missing and returns it.
func (s *Service) ensureIntegration(ctx context.Context, ws string) (Integration, error) {
	kind := s.seededKind()
	id := seededID(ws, kind)
	if in, err := s.integration(ctx, id); err == nil {
		return in, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return Integration{}, err
	}
	h := sha256.Sum256([]byte(id))
	in := Integration{
		ID: id, InstallationID: int64(binary.BigEndian.Uint64(h[:8]) >> 11), Kind: kind,
		AllowsLocalRepositories: kind == kindLocal, CreatedAt: s.now(), WorkspaceID: ws,
		Name: "Public HTTPS repositories",
	}
	if kind == kindLocal {
		in.Name = "Local repositories"
	}
	it := store.Item{Key: intgKey(id), Data: mustJSON(storedIntegration{Integration: in, WorkspaceID: ws}),
		Indexes: map[string]store.IndexKey{idxList: {PK: "intgws#" + ws, SK: ts(in.CreatedAt) + "#" + id}}}
	if _, err := s.st.Put(ctx, it, store.NotExists()); err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return Integration{}, err
	}
	return s.integration(ctx, id)
}

func (s *Service) integration(ctx context.Context, id string) (Integration, error) {
	it, err := s.st.Get(ctx, intgKey(id))
	if err != nil {
		return Integration{}, err
	}
	var si storedIntegration
	if err := json.Unmarshal(it.Data, &si); err != nil {
		return Integration{}, fmt.Errorf("deployments: decode integration: %w", err)
	}
	si.Integration.WorkspaceID = si.WorkspaceID
	return si.Integration, nil
}

// Integrations lists a workspace's integrations, seeding its default one.
func (s *Service) Integrations(ctx context.Context, ws string) ([]Integration, error) {
	if _, err := s.ensureIntegration(ctx, ws); err != nil {
		return nil, err
	}
	out := []Integration{}
	q := store.Query{Index: idxList, PK: "intgws#" + ws}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var si storedIntegration
			if json.Unmarshal(it.Data, &si) == nil {
				out = append(out, si.Integration)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// allowsLocal reports whether a deployment's integration may read local
// repositories now: the integration must allow it and so must this
// installation's configuration.
func (s *Service) allowsLocal(ctx context.Context, integrationID *string) bool {
	if !s.o.AllowLocalRepos || integrationID == nil {
		return false
	}
	in, err := s.integration(ctx, *integrationID)
	return err == nil && in.AllowsLocalRepositories
}
