package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// backend is the set of adapters a mode provides.
type backend struct {
	store store.Store
	blobs blobs.Bucket
	// send puts a raw message on the queue.
	send func(ctx context.Context, body []byte) error
	// consume runs the in-process consumer (local mode only).
	consume func(ctx context.Context, handle func(ctx context.Context, body []byte) error) error
	// starter builds the workflow starter once every definition is known.
	starter func(defs []workflow.Definition) (workflow.Starter, error)
	// resume continues unfinished executions (local mode only).
	resume  func(ctx context.Context) error
	closers []func() error
}

func (b *backend) close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

func openBackend(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	switch cfg.Mode {
	case ModeLocal:
		return openLocal(ctx, cfg, log)
	case ModeAWS:
		return openAWS(ctx, cfg, log)
	}
	return nil, fmt.Errorf("server: unknown mode %q", cfg.Mode)
}

func openLocal(ctx context.Context, cfg Config, log *slog.Logger) (*backend, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	be := &backend{}
	st, err := boltstore.Open(filepath.Join(cfg.DataDir, "agentplane.db"))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	be.store = st
	be.closers = append(be.closers, st.Close)
	// Partial uploads go to a private folder inside the data folder (same
	// file system, so they rename into place), never to the system's.
	bucket, err := blobs.NewDir(filepath.Join(cfg.DataDir, "blobs"), filepath.Join(cfg.DataDir, "tmp", "blobs"))
	if err != nil {
		be.close()
		return nil, fmt.Errorf("open blobs: %w", err)
	}
	be.blobs = bucket
	be.closers = append(be.closers, bucket.Close)
	if err := wireLocalQueueAndWorkflows(ctx, cfg, be, log); err != nil {
		be.close()
		return nil, err
	}
	return be, nil
}
