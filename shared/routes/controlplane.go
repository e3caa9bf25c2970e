package routes

func init() {
	register(Group{
		Name:        "controlplane",
		Description: "deployment control plane: deployments, revisions, redeploy, build logs, listeners, repository integrations and the push webhook",
		Routes: []Route{
			{"POST", "/v2/deployments"},
			{"GET", "/v2/deployments"},
			{"GET", "/v2/deployments/{deployment_id}"},
			{"PATCH", "/v2/deployments/{deployment_id}"},
			{"DELETE", "/v2/deployments/{deployment_id}"},
			{"GET", "/v2/deployments/{deployment_id}/revisions"},
			{"GET", "/v2/deployments/{deployment_id}/revisions/{revision_id}"},
			{"GET", "/v2/deployments/{deployment_id}/revisions/{revision_id}/logs"},
			{"POST", "/v2/deployments/{deployment_id}/revisions/{revision_id}/redeploy"},
			{"GET", "/v2/listeners"},
			{"POST", "/v2/listeners"},
			{"GET", "/v2/listeners/{listener_id}"},
			{"PATCH", "/v2/listeners/{listener_id}"},
			{"DELETE", "/v2/listeners/{listener_id}"},
			{"GET", "/v1/integrations/repo_host/install"},
			{"POST", "/v1/integrations/repo_host/webhook"},
		},
	})
}
