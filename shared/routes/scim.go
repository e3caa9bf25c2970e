package routes

func init() {
	register(Group{
		Name:        "scim",
		Description: "SCIM 2.0 (RFC 7643/7644): Users, Groups and discovery, authenticated with per-organization SCIM tokens",
		Routes: []Route{
			{"GET", "/scim/v2/ServiceProviderConfig"},
			{"GET", "/scim/v2/ResourceTypes"},
			{"GET", "/scim/v2/ResourceTypes/{id}"},
			{"GET", "/scim/v2/Schemas"},
			{"GET", "/scim/v2/Schemas/{id}"},
			{"GET", "/scim/v2/Users"},
			{"POST", "/scim/v2/Users"},
			{"GET", "/scim/v2/Users/{id}"},
			{"PUT", "/scim/v2/Users/{id}"},
			{"PATCH", "/scim/v2/Users/{id}"},
			{"DELETE", "/scim/v2/Users/{id}"},
			{"GET", "/scim/v2/Groups"},
			{"POST", "/scim/v2/Groups"},
			{"GET", "/scim/v2/Groups/{id}"},
			{"PUT", "/scim/v2/Groups/{id}"},
			{"PATCH", "/scim/v2/Groups/{id}"},
			{"DELETE", "/scim/v2/Groups/{id}"},
		},
	})
}
