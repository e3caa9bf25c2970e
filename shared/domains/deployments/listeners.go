package deployments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// Listener is a self-hosted data plane agent that reports the compute it may
// deploy to. The control plane never connects to it; it polls.
type Listener struct {
	ID            string        `json:"id"`
	ComputeType   string        `json:"compute_type"`
	ComputeID     string        `json:"compute_id"`
	ComputeConfig ComputeConfig `json:"compute_config"`
	Version       *string       `json:"version"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
}

// ComputeConfig lists the Kubernetes namespaces a listener may deploy to.
type ComputeConfig struct {
	K8sNamespaces []string `json:"k8s_namespaces"`
}

type storedListener struct {
	Listener
	WorkspaceID string `json:"workspace_id"`
}

// ListenerRequest is the request of both create and patch: the same fields,
// required on create, optional on patch.
type ListenerRequest struct {
	ComputeType   *string        `json:"compute_type"`
	ComputeID     *string        `json:"compute_id"`
	ComputeConfig *ComputeConfig `json:"compute_config"`
	Version       *string        `json:"version"`
}

const (
	computeK8s        = "k8s"
	maxComputeID      = 253
	maxNamespaces     = 1000
	maxListenerVerLen = 128
)

func lisKey(id string) store.Key { return store.Key{PK: "lis#" + id, SK: "#lis"} }
func computeKey(ws, computeID string) store.Key {
	return store.Key{PK: "liscompute#" + ws + "#" + computeID, SK: "#c"}
}

func lisItem(l storedListener) store.Item {
	return store.Item{Key: lisKey(l.ID), Data: mustJSON(l),
		Indexes: map[string]store.IndexKey{idxList: {PK: "lisws#" + l.WorkspaceID, SK: ts(l.CreatedAt) + "#" + l.ID}}}
}

func checkComputeConfig(p *fault.Problems, l []any, cc *ComputeConfig) {
	if cc == nil {
		return
	}
	if len(cc.K8sNamespaces) > maxNamespaces {
		p.Add(with(l, "k8s_namespaces"), fmt.Sprintf("List should have at most %d items", maxNamespaces), "too_long")
		return
	}
	seen := map[string]bool{}
	for i, ns := range cc.K8sNamespaces {
		if !isDNSLabel(ns) {
			p.Add(with(l, "k8s_namespaces", i), "A namespace is a DNS label: at most 63 lower-case letters, digits and -", "value_error")
		} else if seen[ns] {
			p.Add(with(l, "k8s_namespaces", i), "Duplicate namespace "+ns, "value_error")
		}
		seen[ns] = true
	}
}

func checkListenerVersion(p *fault.Problems, l []any, v *string) {
	if v != nil && (len(*v) > maxListenerVerLen || hasControl(*v)) {
		p.Add(l, fmt.Sprintf("version must have at most %d characters", maxListenerVerLen), "value_error")
	}
}

func (s *Service) listenersForbidden(ws string) error {
	return fault.Denied("Listeners cannot be created for workspace ID '%s'. Creating listeners is only allowed on self-hosted installations.", ws)
}

// CreateListener registers a listener in workspace ws.
func (s *Service) CreateListener(ctx context.Context, ws string, req ListenerRequest) (Listener, error) {
	var p fault.Problems
	l := loc("body")
	if req.ComputeType == nil {
		p.Add(with(l, "compute_type"), "Field required", "missing")
	} else if *req.ComputeType != computeK8s {
		p.Add(with(l, "compute_type"), "Input should be 'k8s'", "literal_error")
	}
	if req.ComputeID == nil {
		p.Add(with(l, "compute_id"), "Field required", "missing")
	} else if id := *req.ComputeID; id == "" || len(id) > maxComputeID || hasControl(id) || strings.ContainsAny(id, " \t#") {
		p.Add(with(l, "compute_id"), fmt.Sprintf("compute_id must have 1 to %d characters without spaces or #", maxComputeID), "value_error")
	}
	if req.ComputeConfig == nil {
		p.Add(with(l, "compute_config"), "Field required", "missing")
	}
	checkComputeConfig(&p, with(l, "compute_config"), req.ComputeConfig)
	checkListenerVersion(&p, with(l, "version"), req.Version)
	if err := p.Err(); err != nil {
		return Listener{}, err
	}
	if !s.o.Listeners {
		return Listener{}, s.listenersForbidden(ws)
	}
	now := s.now()
	sl := storedListener{WorkspaceID: ws, Listener: Listener{
		ID: uuid.NewString(), ComputeType: computeK8s, ComputeID: *req.ComputeID,
		ComputeConfig: *req.ComputeConfig, Version: req.Version, CreatedAt: now, UpdatedAt: now,
	}}
	err := s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: store.Item{Key: computeKey(ws, sl.ComputeID), Data: mustJSON(map[string]string{"listener_id": sl.ID})}, Cond: store.NotExists()},
		{Kind: store.OpPut, Item: lisItem(sl), Cond: store.NotExists()},
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return Listener{}, fault.Clash("Listener for workspace ID '%s' and compute ID '%s' already exists.", ws, sl.ComputeID)
	}
	if err != nil {
		return Listener{}, apiError(err)
	}
	return sl.Listener, nil
}

func (s *Service) loadListener(ctx context.Context, ws, id string) (storedListener, int64, error) {
	it, err := s.st.Get(ctx, lisKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return storedListener{}, 0, listenerNotFound(id)
	}
	if err != nil {
		return storedListener{}, 0, err
	}
	var sl storedListener
	if err := json.Unmarshal(it.Data, &sl); err != nil {
		return storedListener{}, 0, fmt.Errorf("deployments: decode listener: %w", err)
	}
	if sl.WorkspaceID != ws {
		return storedListener{}, 0, listenerNotFound(id)
	}
	return sl, it.Version, nil
}

// GetListener reads a listener of workspace ws.
func (s *Service) GetListener(ctx context.Context, ws, id string) (Listener, error) {
	sl, _, err := s.loadListener(ctx, ws, id)
	return sl.Listener, err
}

// PatchListener changes a listener's version or compute configuration.
func (s *Service) PatchListener(ctx context.Context, ws, id string, req ListenerRequest) (Listener, error) {
	var p fault.Problems
	immutable(&p, loc("body", "compute_type"), req.ComputeType != nil)
	immutable(&p, loc("body", "compute_id"), req.ComputeID != nil)
	checkComputeConfig(&p, loc("body", "compute_config"), req.ComputeConfig)
	checkListenerVersion(&p, loc("body", "version"), req.Version)
	if err := p.Err(); err != nil {
		return Listener{}, err
	}
	var out Listener
	err := retry(ctx, func() error {
		sl, v, err := s.loadListener(ctx, ws, id)
		if err != nil {
			return err
		}
		if req.ComputeConfig != nil {
			sl.ComputeConfig = *req.ComputeConfig
		}
		if req.Version != nil {
			sl.Version = req.Version
		}
		sl.UpdatedAt = s.now()
		if _, err := s.st.Put(ctx, lisItem(sl), store.HasVersion(v)); err != nil {
			return err
		}
		out = sl.Listener
		return nil
	})
	return out, apiError(err)
}

// DeleteListener removes a listener no live deployment uses.
func (s *Service) DeleteListener(ctx context.Context, ws, id string) error {
	sl, v, err := s.loadListener(ctx, ws, id)
	if err != nil {
		return err
	}
	users := 0
	err = s.eachDeployment(ctx, ws, func(d *deployment) bool {
		if d.Status != StatusAwaitingDelete && d.Config.ListenerID != nil && *d.Config.ListenerID == id {
			users++
		}
		return true
	})
	if err != nil {
		return err
	}
	if users > 0 {
		return fault.Clash("Listener ID %s is used by %d deployment(s); delete them first.", id, users)
	}
	err = s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpDelete, Key: lisKey(id), Cond: store.HasVersion(v)},
		{Kind: store.OpDelete, Key: computeKey(ws, sl.ComputeID)},
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return fault.Clash("Listener ID %s changed while it was being deleted; retry.", id)
	}
	return err
}

// Listeners lists a workspace's listeners, oldest first.
func (s *Service) Listeners(ctx context.Context, ws string, limit, offset int) ([]Listener, error) {
	out := []Listener{}
	skipped := 0
	q := store.Query{Index: idxList, PK: "lisws#" + ws}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var sl storedListener
			if json.Unmarshal(it.Data, &sl) != nil {
				continue
			}
			if skipped < offset {
				skipped++
				continue
			}
			out = append(out, sl.Listener)
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

// checkListenerRef checks a create's listener_id and listener_config
// against the workspace's listener: it must exist, and a k8s namespace must
// be one the listener offers (when it lists any).
func (s *Service) checkListenerRef(ctx context.Context, ws string, sc *SourceConfig, p *fault.Problems) error {
	if sc.ListenerID == nil {
		return nil
	}
	l := loc("body", "source_config")
	sl, _, err := s.loadListener(ctx, ws, *sc.ListenerID)
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Kind == fault.NotFound {
		p.Add(with(l, "listener_id"), "No listener "+*sc.ListenerID+" in this workspace (see GET /v2/listeners)", "value_error")
		return nil
	}
	if err != nil {
		return err
	}
	if lc := sc.ListenerConfig; lc != nil && lc.K8sNamespace != nil && len(sl.ComputeConfig.K8sNamespaces) > 0 {
		if !oneOf(*lc.K8sNamespace, sl.ComputeConfig.K8sNamespaces) {
			p.Add(with(l, "listener_config", "k8s_namespace"), "Listener "+sl.ID+" offers the namespaces "+strings.Join(sl.ComputeConfig.K8sNamespaces, ", "), "value_error")
		}
	}
	return nil
}
