package routes

func init() {
	register(Group{
		Name:        "platform",
		Description: "health and the admin API: workspaces and API keys",
		Routes: []Route{
			{"GET", "/health"},
			{"GET", "/api/v1/workspaces"},
			{"POST", "/api/v1/workspaces"},
			{"GET", "/api/v1/api-key"},
			{"POST", "/api/v1/api-key"},
			{"DELETE", "/api/v1/api-key/{api_key_id}"},
		},
	})
}
