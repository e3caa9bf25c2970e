package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/secrets"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
)

// The controlplane group: deployments, revisions, listeners, integrations
// and the push webhook; the build workflow; the build and deletion queue
// consumers. Its Service (*deployments.Service) is what the threads module
// asks about deployments (ThreadTarget).
func init() {
	RegisterModule("controlplane", newControlPlane)
}

func newControlPlane(d *Deps) (*Module, error) {
	keeper, err := openKeeper(d.Config)
	if err != nil {
		return nil, err
	}
	local := d.Config.Mode == ModeLocal
	svc, err := deployments.New(deployments.Options{
		Store: d.Store, Blobs: d.Blobs, Queue: d.Queue, Keeper: keeper,
		BaseURL:         d.Config.BaseURL,
		AllowLocalRepos: d.Config.AllowLocalRepos,
		WebhookSecret:   d.Config.WebhookSecret,
		// The local all-in-one server stands in for both offerings.
		RepoHost:          local || !d.Config.SelfHosted,
		ExternalContainer: local || d.Config.SelfHosted,
		Listeners:         local || d.Config.SelfHosted,
		Threads:           func() any { return d.Modules.Service("threads") },
		Logger:            d.Logger,
	})
	if err != nil {
		return nil, err
	}
	b, err := builds.New(builds.Deps{
		Revisions:     svc,
		Blobs:         d.Blobs,
		DeploymentURL: func(id string) string { return deployments.DeploymentURL(d.Config.BaseURL, id) },
		Logger:        d.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Module{
		Group:     "controlplane",
		Register:  deployments.NewHandler(svc, d.Identity).Register,
		Workflows: []workflow.Definition{b.Definition()},
		Consumers: map[string]func(context.Context, json.RawMessage) error{
			deployments.TopicBuild: func(ctx context.Context, p json.RawMessage) error {
				var m deployments.BuildMessage
				if err := json.Unmarshal(p, &m); err != nil || m.RevisionID == "" || m.DeploymentID == "" {
					d.Logger.Error("controlplane: dropping malformed build message")
					return nil
				}
				// The revision id is the execution id: starting it twice
				// is a no-op, so redelivered messages are harmless.
				err := d.Workflows.Start(ctx, builds.WorkflowName, m.RevisionID, builds.Input(m.DeploymentID, m.RevisionID))
				if errors.Is(err, workflow.ErrInvalid) {
					d.Logger.Error("controlplane: build cannot start", slog.String("revision_id", m.RevisionID), slog.String("error", err.Error()))
					return nil
				}
				return err
			},
			deployments.TopicDelete: func(ctx context.Context, p json.RawMessage) error {
				var m deployments.DeleteMessage
				if err := json.Unmarshal(p, &m); err != nil || m.DeploymentID == "" {
					d.Logger.Error("controlplane: dropping malformed delete message")
					return nil
				}
				return svc.Purge(ctx, m.DeploymentID)
			},
		},
		// The local queue lives in memory: after a restart, put unfinished
		// revisions and deletions back on it.
		Background: []func(context.Context) error{svc.Recover},
		Sweep:      svc.Sweep,
		Service:    svc,
	}, nil
}

// openKeeper returns the secret keeper: a key file in the data directory
// locally, KMS envelope encryption in AWS.
func openKeeper(cfg Config) (secrets.Keeper, error) {
	if cfg.Mode == ModeLocal {
		return secrets.OpenLocal(filepath.Join(cfg.DataDir, "keys"))
	}
	if cfg.KMSKeyID == "" {
		return unavailableKeeper{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("aws config for KMS: %w", err)
	}
	return secrets.NewKMS(kms.NewFromConfig(awsCfg), cfg.KMSKeyID)
}

// unavailableKeeper refuses to handle secret values when AWS mode has no
// KMS key configured: deployments without secrets still work, and secrets
// are never stored unencrypted.
type unavailableKeeper struct{}

var errNoKMSKey = errors.New("secrets: AGENTPLANE_KMS_KEY_ID is not set, so secrets cannot be encrypted")

func (unavailableKeeper) Seal(context.Context, []byte, string) (string, error) {
	return "", errNoKMSKey
}
func (unavailableKeeper) Open(context.Context, string, string) ([]byte, error) {
	return nil, errNoKMSKey
}
