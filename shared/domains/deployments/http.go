package deployments

import (
	"io"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the control-plane API (route group "controlplane").
type Handler struct {
	svc *Service
	ids *identity.Service
}

// NewHandler returns the HTTP API over svc, authenticating with ids.
func NewHandler(svc *Service, ids *identity.Service) *Handler {
	return &Handler{svc: svc, ids: ids}
}

// Register adds the routes of the "controlplane" group in shared/routes.
func (h *Handler) Register(mux *web.Mux) {
	ws := func(role identity.Role, f web.HandlerFunc) http.Handler {
		return h.ids.RequireWorkspace(web.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			p, _ := identity.FromContext(r.Context())
			if err := identity.Need(p, role); err != nil {
				return err
			}
			return f(w, r)
		}))
	}
	read, write := identity.RoleViewer, identity.RoleEditor
	mux.Handle("POST", "/v2/deployments", ws(write, h.create))
	mux.Handle("GET", "/v2/deployments", ws(read, h.list))
	mux.Handle("GET", "/v2/deployments/{deployment_id}", ws(read, h.get))
	mux.Handle("PATCH", "/v2/deployments/{deployment_id}", ws(write, h.patch))
	mux.Handle("DELETE", "/v2/deployments/{deployment_id}", ws(write, h.delete))
	mux.Handle("GET", "/v2/deployments/{deployment_id}/revisions", ws(read, h.listRevisions))
	mux.Handle("GET", "/v2/deployments/{deployment_id}/revisions/{revision_id}", ws(read, h.getRevision))
	mux.Handle("GET", "/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", ws(read, h.logs))
	mux.Handle("POST", "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", ws(write, h.redeploy))
	mux.Handle("GET", "/v2/listeners", ws(read, h.listListeners))
	mux.Handle("POST", "/v2/listeners", ws(write, h.createListener))
	mux.Handle("GET", "/v2/listeners/{listener_id}", ws(read, h.getListener))
	mux.Handle("PATCH", "/v2/listeners/{listener_id}", ws(write, h.patchListener))
	mux.Handle("DELETE", "/v2/listeners/{listener_id}", ws(write, h.deleteListener))
	mux.Handle("GET", "/v1/integrations/repo_host/install", ws(read, h.integrations))
	// Signed with the webhook secret instead of an API key.
	mux.HandleFunc("POST", "/v1/integrations/repo_host/webhook", h.webhook)
}

func workspace(r *http.Request) string {
	p, _ := identity.FromContext(r.Context())
	return p.WorkspaceID
}

// listPage is the list envelope: offset is the value to send for the next
// page.
type listPage[T any] struct {
	Resources []T `json:"resources"`
	Offset    int `json:"offset"`
}

const maxOffset = 1 << 30

func paging(r *http.Request, def, max int) (int, int, error) {
	limit, err := web.QueryInt(r, "limit", def, 1, max)
	if err != nil {
		return 0, 0, err
	}
	offset, err := web.QueryInt(r, "offset", 0, 0, maxOffset)
	return limit, offset, err
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) error {
	var req deploymentRequest
	if err := web.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	d, err := h.svc.Create(r.Context(), workspace(r), req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusCreated, d)
	return nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := paging(r, 20, 100)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := ListFilter{NameContains: q.Get("name_contains")}
	var p web.Problems
	if st := q.Get("status"); st != "" {
		names := make([]string, len(deploymentStatuses))
		for i, s := range deploymentStatuses {
			names[i] = string(s)
		}
		if !oneOf(st, names) {
			p.Add(loc("query", "status"), enumMsg(names), "enum")
		}
		f.Status = Status(st)
	}
	if dt := q.Get("deployment_type"); dt != "" {
		if !oneOf(dt, deploymentTypes) {
			p.Add(loc("query", "deployment_type"), enumMsg(deploymentTypes), "enum")
		}
		f.DeploymentType = dt
	}
	if raw := q["deployment_ids"]; len(raw) > 0 {
		f.IDs = map[string]bool{}
		for _, v := range raw {
			for _, part := range strings.Split(v, ",") {
				id, err := web.ParseUUID(strings.TrimSpace(part))
				if err != nil {
					p.Add(loc("query", "deployment_ids"), "Each id should be a valid UUID, "+err.Error(), "uuid_parsing")
					break
				}
				f.IDs[id] = true
			}
		}
		if len(f.IDs) > 100 {
			p.Add(loc("query", "deployment_ids"), "At most 100 ids", "too_long")
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	out, err := h.svc.List(r.Context(), workspace(r), f, limit, offset)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, listPage[Deployment]{Resources: out, Offset: offset + len(out)})
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return err
	}
	d, err := h.svc.Get(r.Context(), workspace(r), id)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return err
	}
	var req deploymentRequest
	if err := web.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	d, err := h.svc.Patch(r.Context(), workspace(r), id, req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return err
	}
	delProject, err := web.QueryBool(r, "delete_tracing_project", false)
	if err != nil {
		return err
	}
	if err := h.svc.Delete(r.Context(), workspace(r), id, delProject); err != nil {
		return err
	}
	web.NoContent(w)
	return nil
}

func (h *Handler) listRevisions(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return err
	}
	limit, offset, err := paging(r, 20, 100)
	if err != nil {
		return err
	}
	statuses, err := parseRevisionStatuses(r.URL.Query().Get("status"))
	if err != nil {
		return err
	}
	out, err := h.svc.Revisions(r.Context(), workspace(r), id, statuses, limit, offset)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, listPage[Revision]{Resources: out, Offset: offset + len(out)})
	return nil
}

func revisionPath(r *http.Request) (string, string, error) {
	dep, err := web.PathUUID(r, "deployment_id")
	if err != nil {
		return "", "", err
	}
	rev, err := web.PathUUID(r, "revision_id")
	return dep, rev, err
}

func (h *Handler) getRevision(w http.ResponseWriter, r *http.Request) error {
	dep, rev, err := revisionPath(r)
	if err != nil {
		return err
	}
	out, err := h.svc.Revision(r.Context(), workspace(r), dep, rev)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) logs(w http.ResponseWriter, r *http.Request) error {
	dep, rev, err := revisionPath(r)
	if err != nil {
		return err
	}
	limit, offset, err := paging(r, 100, 1000)
	if err != nil {
		return err
	}
	out, err := h.svc.Logs(r.Context(), workspace(r), dep, rev, limit, offset)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, listPage[LogLine]{Resources: out, Offset: offset + len(out)})
	return nil
}

func (h *Handler) redeploy(w http.ResponseWriter, r *http.Request) error {
	dep, rev, err := revisionPath(r)
	if err != nil {
		return err
	}
	d, err := h.svc.Redeploy(r.Context(), workspace(r), dep, rev)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, d)
	return nil
}

func (h *Handler) listListeners(w http.ResponseWriter, r *http.Request) error {
	limit, offset, err := paging(r, 20, 100)
	if err != nil {
		return err
	}
	out, err := h.svc.Listeners(r.Context(), workspace(r), limit, offset)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, listPage[Listener]{Resources: out, Offset: offset + len(out)})
	return nil
}

func (h *Handler) createListener(w http.ResponseWriter, r *http.Request) error {
	var req listenerBody
	if err := web.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	l, err := h.svc.CreateListener(r.Context(), workspace(r), req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusCreated, l)
	return nil
}

func (h *Handler) getListener(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "listener_id")
	if err != nil {
		return err
	}
	l, err := h.svc.GetListener(r.Context(), workspace(r), id)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, l)
	return nil
}

func (h *Handler) patchListener(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "listener_id")
	if err != nil {
		return err
	}
	var req listenerBody
	if err := web.DecodeJSON(r, &req, false); err != nil {
		return err
	}
	l, err := h.svc.PatchListener(r.Context(), workspace(r), id, req)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, l)
	return nil
}

func (h *Handler) deleteListener(w http.ResponseWriter, r *http.Request) error {
	id, err := web.PathUUID(r, "listener_id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteListener(r.Context(), workspace(r), id); err != nil {
		return err
	}
	web.NoContent(w)
	return nil
}

func (h *Handler) integrations(w http.ResponseWriter, r *http.Request) error {
	out, err := h.svc.Integrations(r.Context(), workspace(r))
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) webhook(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// Oversized (MaxBody) or a broken connection.
		return web.Errorf(http.StatusRequestEntityTooLarge, "Webhook body too large or unreadable")
	}
	if h.svc.o.WebhookSecret == "" {
		return web.Forbidden("Webhooks are disabled: this installation has no webhook secret (AGENTPLANE_WEBHOOK_SECRET)")
	}
	sig := r.Header.Get(SignatureHeader)
	if sig == "" {
		return web.Unauthorized("Missing " + SignatureHeader + " header")
	}
	if !VerifySignature(h.svc.o.WebhookSecret, body, sig) {
		return web.Unauthorized("Invalid " + SignatureHeader + " signature")
	}
	res, err := h.svc.HandleWebhook(r.Context(), r.Header.Get(EventHeader), body)
	if err != nil {
		return err
	}
	web.WriteJSON(w, http.StatusOK, res)
	return nil
}
