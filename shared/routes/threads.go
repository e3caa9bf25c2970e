package routes

func init() {
	register(Group{
		Name:        "threads",
		Description: "the thread API of deployed agent servers, under each deployment URL",
		Routes: []Route{
			{"POST", "/deployments/{deployment_id}/threads"},
			{"POST", "/deployments/{deployment_id}/threads/search"},
			{"POST", "/deployments/{deployment_id}/threads/count"},
			{"GET", "/deployments/{deployment_id}/threads/{thread_id}"},
			{"PATCH", "/deployments/{deployment_id}/threads/{thread_id}"},
			{"DELETE", "/deployments/{deployment_id}/threads/{thread_id}"},
			{"POST", "/deployments/{deployment_id}/threads/{thread_id}/copy"},
			{"GET", "/deployments/{deployment_id}/threads/{thread_id}/state"},
			{"POST", "/deployments/{deployment_id}/threads/{thread_id}/state"},
			{"GET", "/deployments/{deployment_id}/threads/{thread_id}/state/{checkpoint_id}"},
			{"POST", "/deployments/{deployment_id}/threads/{thread_id}/state/checkpoint"},
			{"GET", "/deployments/{deployment_id}/threads/{thread_id}/history"},
			{"POST", "/deployments/{deployment_id}/threads/{thread_id}/history"},
		},
	})
}
