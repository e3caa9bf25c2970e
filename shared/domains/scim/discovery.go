package scim

import (
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/orgaccess"
)

// Discovery endpoints (RFC 7644 §4). They describe what this server
// supports, and refuse filters with 403 as §4 asks, so a client cannot
// believe a filter it sent was applied.

func noFilter(r *http.Request) error {
	if r.URL.Query().Has("filter") {
		return errorf(http.StatusForbidden, "", "Filtering is not supported on discovery endpoints")
	}
	return nil
}

func (s *Server) serviceProviderConfig(w http.ResponseWriter, r *http.Request, _ orgaccess.SCIMToken) error {
	if err := noFilter(r); err != nil {
		return err
	}
	base := baseURL(r)
	writeJSON(w, http.StatusOK, map[string]any{
		"schemas":        []string{URNServiceProvider},
		"patch":          map[string]any{"supported": true},
		"bulk":           map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":         map[string]any{"supported": true, "maxResults": MaxResults},
		"changePassword": map[string]any{"supported": false},
		"sort":           map[string]any{"supported": true},
		"etag":           map[string]any{"supported": true},
		"authenticationSchemes": []any{map[string]any{
			"type": "oauthbearertoken", "name": "OAuth Bearer Token", "primary": true,
			"description": "A SCIM token of the organization, created by an organization admin with POST /api/v1/orgs/current/scim-tokens, sent as Authorization: Bearer <token>.",
			"specUri":     "https://www.rfc-editor.org/info/rfc6750",
		}},
		"meta": map[string]any{"resourceType": "ServiceProviderConfig", "location": base + "/ServiceProviderConfig"},
	})
	return nil
}

func resourceTypeJSON(rt *ResourceType, base string) map[string]any {
	exts := []any{}
	for _, e := range rt.Extensions {
		exts = append(exts, map[string]any{"schema": e.ID, "required": false})
	}
	return map[string]any{
		"schemas": []string{URNResourceType}, "id": rt.ID, "name": rt.ID, "endpoint": rt.Endpoint,
		"description": rt.Description, "schema": rt.Schema.ID, "schemaExtensions": exts,
		"meta": map[string]any{"resourceType": "ResourceType", "location": base + "/ResourceTypes/" + rt.ID},
	}
}

func schemaJSON(sc *Schema, base string) map[string]any {
	return map[string]any{
		"schemas": []string{URNSchema}, "id": sc.ID, "name": sc.Name, "description": sc.Description,
		"attributes": sc.Attributes,
		"meta":       map[string]any{"resourceType": "Schema", "location": base + "/Schemas/" + sc.ID},
	}
}

func listOfResources(items []map[string]any) listResponse {
	return listResponse{Schemas: []string{URNListResponse}, TotalResults: len(items), StartIndex: 1, ItemsPerPage: len(items), Resources: items}
}

func (s *Server) resourceTypes(w http.ResponseWriter, r *http.Request, _ orgaccess.SCIMToken) error {
	if err := noFilter(r); err != nil {
		return err
	}
	base := baseURL(r)
	writeJSON(w, http.StatusOK, listOfResources([]map[string]any{resourceTypeJSON(Users, base), resourceTypeJSON(Groups, base)}))
	return nil
}

func (s *Server) resourceType(w http.ResponseWriter, r *http.Request, _ orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	for _, rt := range []*ResourceType{Users, Groups} {
		if strings.EqualFold(rt.ID, id) {
			writeJSON(w, http.StatusOK, resourceTypeJSON(rt, baseURL(r)))
			return nil
		}
	}
	return errorf(http.StatusNotFound, "", "Resource type %s not found", id)
}

func (s *Server) schemas(w http.ResponseWriter, r *http.Request, _ orgaccess.SCIMToken) error {
	if err := noFilter(r); err != nil {
		return err
	}
	base := baseURL(r)
	items := make([]map[string]any, len(Schemas))
	for i, sc := range Schemas {
		items[i] = schemaJSON(sc, base)
	}
	writeJSON(w, http.StatusOK, listOfResources(items))
	return nil
}

func (s *Server) schema(w http.ResponseWriter, r *http.Request, _ orgaccess.SCIMToken) error {
	id := r.PathValue("id")
	for _, sc := range Schemas {
		if strings.EqualFold(sc.ID, id) {
			writeJSON(w, http.StatusOK, schemaJSON(sc, baseURL(r)))
			return nil
		}
	}
	return errorf(http.StatusNotFound, "", "Schema %s not found", id)
}
