package routes

func init() {
	register(Group{
		Name:        "orgaccess",
		Description: "organization access: SSO settings, default SSO settings, invites, members, SSO sign-in decisions, SCIM tokens, audit",
		Routes: []Route{
			{"GET", "/api/v1/organizations/current/info"},
			{"PATCH", "/api/v1/organizations/current/info"},
			{"GET", "/api/v1/orgs/current/sso-settings"},
			{"PATCH", "/api/v1/orgs/current/sso-settings"},
			{"GET", "/api/v1/orgs/current/invites"},
			{"POST", "/api/v1/orgs/current/invites"},
			{"DELETE", "/api/v1/orgs/current/invites/{invite_id}"},
			{"GET", "/api/v1/orgs/current/members"},
			{"POST", "/api/v1/orgs/current/members"},
			{"GET", "/api/v1/orgs/current/members/{member_id}"},
			{"PATCH", "/api/v1/orgs/current/members/{member_id}"},
			{"DELETE", "/api/v1/orgs/current/members/{member_id}"},
			{"GET", "/api/v1/orgs/current/audit"},
			{"GET", "/api/v1/orgs/current/scim-tokens"},
			{"POST", "/api/v1/orgs/current/scim-tokens"},
			{"DELETE", "/api/v1/orgs/current/scim-tokens/{token_id}"},
			{"POST", "/api/v1/sso/{sso_login_slug}/sign-in"},
		},
	})
}
