package deployments

import (
	"io"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/identity"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Handler serves the control-plane API (route group "controlplane").
type Handler struct {
	svc *Service
}

// NewHandler returns the HTTP API over svc.
func NewHandler(svc *Service) *Handler { return &Handler{svc: svc} }

var (
	pageQuery = []api.Param{
		{Name: "limit", Type: "integer", Description: "Page size"},
		{Name: "offset", Type: "integer", Description: "Items to skip; a page's offset field is the value for the next page"},
	}
	read, write = identity.RoleViewer, identity.RoleEditor
)

// Routes is the "controlplane" route group. Every route but the webhook
// acts in the workspace of X-Tenant-Id (optional when the key reaches one);
// the webhook is signed with the webhook secret instead of an API key.
var Routes = api.Group[*Handler]{
	Name:        "controlplane",
	Description: "deployment control plane: deployments, revisions, redeploy, build logs, listeners, repository integrations and the push webhook",
	Routes: []api.Route[*Handler]{
		{Method: "POST", Path: "/v2/deployments", Summary: "Create a deployment and its first revision", Auth: api.Workspace, Role: write, Body: DeploymentRequest{}, Result: Deployment{}, Status: http.StatusCreated, Handle: (*Handler).create},
		{Method: "GET", Path: "/v2/deployments", Summary: "List deployments", Auth: api.Workspace, Role: read, Result: listPage[Deployment]{}, Query: append([]api.Param{{Name: "name_contains", Type: "string"}, {Name: "status", Type: "string"}}, pageQuery...), Handle: (*Handler).list},
		{Method: "GET", Path: "/v2/deployments/{deployment_id}", Summary: "Read a deployment", Auth: api.Workspace, Role: read, Result: Deployment{}, Handle: (*Handler).get},
		{Method: "PATCH", Path: "/v2/deployments/{deployment_id}", Summary: "Update a deployment (some changes create a revision)", Auth: api.Workspace, Role: write, Body: DeploymentRequest{}, Result: Deployment{}, Handle: (*Handler).patch},
		{Method: "DELETE", Path: "/v2/deployments/{deployment_id}", Summary: "Delete a deployment", Auth: api.Workspace, Role: write, Query: []api.Param{{Name: "delete_tracing_project", Type: "boolean"}}, Status: http.StatusNoContent, Handle: (*Handler).delete},
		{Method: "GET", Path: "/v2/deployments/{deployment_id}/revisions", Summary: "List a deployment's revisions, newest first", Auth: api.Workspace, Role: read, Result: listPage[Revision]{}, Query: append([]api.Param{{Name: "status", Type: "string"}}, pageQuery...), Handle: (*Handler).listRevisions},
		{Method: "GET", Path: "/v2/deployments/{deployment_id}/revisions/{revision_id}", Summary: "Read a revision", Auth: api.Workspace, Role: read, Result: Revision{}, Handle: (*Handler).getRevision},
		{Method: "GET", Path: "/v2/deployments/{deployment_id}/revisions/{revision_id}/logs", Summary: "Read a revision's build log", Auth: api.Workspace, Role: read, Result: listPage[LogLine]{}, Query: pageQuery, Handle: (*Handler).logs},
		{Method: "POST", Path: "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy", Summary: "Redeploy a revision", Auth: api.Workspace, Role: write, Result: Deployment{}, Handle: (*Handler).redeploy},
		{Method: "GET", Path: "/v2/listeners", Summary: "List listeners", Auth: api.Workspace, Role: read, Result: listPage[Listener]{}, Query: pageQuery, Handle: (*Handler).listListeners},
		{Method: "POST", Path: "/v2/listeners", Summary: "Register a listener (self-hosted)", Auth: api.Workspace, Role: write, Body: ListenerRequest{}, Result: Listener{}, Status: http.StatusCreated, Handle: (*Handler).createListener},
		{Method: "GET", Path: "/v2/listeners/{listener_id}", Summary: "Read a listener", Auth: api.Workspace, Role: read, Result: Listener{}, Handle: (*Handler).getListener},
		{Method: "PATCH", Path: "/v2/listeners/{listener_id}", Summary: "Update a listener", Auth: api.Workspace, Role: write, Body: ListenerRequest{}, Result: Listener{}, Handle: (*Handler).patchListener},
		{Method: "DELETE", Path: "/v2/listeners/{listener_id}", Summary: "Delete an unused listener", Auth: api.Workspace, Role: write, Status: http.StatusNoContent, Handle: (*Handler).deleteListener},
		{Method: "GET", Path: "/v1/integrations/repo_host/install", Summary: "Repository integrations (source of source_config.integration_id)", Auth: api.Workspace, Role: read, Result: []Integration{}, Handle: (*Handler).integrations},
		{Method: "POST", Path: "/v1/integrations/repo_host/webhook", Summary: "Push webhook (X-Hub-Signature-256 signed)", Auth: api.Own, Result: WebhookResult{}, Handle: (*Handler).webhook},
	},
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
	var req DeploymentRequest
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
	var req DeploymentRequest
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
	var req ListenerRequest
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
	var req ListenerRequest
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
