package scim

import "strings"

// Schema and message URNs (RFC 7643, RFC 7644).
const (
	URNUser            = "urn:ietf:params:scim:schemas:core:2.0:User"
	URNGroup           = "urn:ietf:params:scim:schemas:core:2.0:Group"
	URNListResponse    = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	URNPatchOp         = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	URNError           = "urn:ietf:params:scim:api:messages:2.0:Error"
	URNServiceProvider = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
	URNResourceType    = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
	URNSchema          = "urn:ietf:params:scim:schemas:core:2.0:Schema"
	// URNWorkspaceGroup is agentplane's Group extension naming the
	// workspace and role a group gives its members.
	URNWorkspaceGroup = "urn:agentplane:params:scim:schemas:extension:workspace:2.0:Group"
)

// Attribute types, mutability and returned values of RFC 7643 §7.
const (
	typeString    = "string"
	typeBoolean   = "boolean"
	typeComplex   = "complex"
	typeDateTime  = "dateTime"
	typeReference = "reference"

	readOnly  = "readOnly"
	readWrite = "readWrite"
	immutable = "immutable"
)

// Attribute is an attribute definition, published as-is by /Schemas.
type Attribute struct {
	Name            string       `json:"name"`
	Type            string       `json:"type"`
	MultiValued     bool         `json:"multiValued"`
	Description     string       `json:"description"`
	Required        bool         `json:"required"`
	CaseExact       bool         `json:"caseExact"`
	Mutability      string       `json:"mutability"`
	Returned        string       `json:"returned"`
	Uniqueness      string       `json:"uniqueness"`
	CanonicalValues []string     `json:"canonicalValues,omitempty"`
	ReferenceTypes  []string     `json:"referenceTypes,omitempty"`
	SubAttributes   []*Attribute `json:"subAttributes,omitempty"`
}

// sub returns the sub-attribute named name (case-insensitive).
func (a *Attribute) sub(name string) *Attribute {
	for _, s := range a.SubAttributes {
		if strings.EqualFold(s.Name, name) {
			return s
		}
	}
	return nil
}

// Schema is a published schema.
type Schema struct {
	ID          string
	Name        string
	Description string
	Attributes  []*Attribute
}

// ResourceType is a SCIM resource type: its core schema, its extensions,
// and the common attributes (id, externalId, meta) that RFC 7643 §3.1
// keeps out of the schema documents.
type ResourceType struct {
	ID          string
	Endpoint    string
	Description string
	Schema      *Schema
	Extensions  []*Schema
	// attrs are the common attributes, the core schema's and one complex
	// pseudo-attribute per extension, named by its URN.
	attrs []*Attribute
}

// attr returns a top-level attribute (or extension) by name, ignoring case.
func (rt *ResourceType) attr(name string) *Attribute {
	for _, a := range rt.attrs {
		if strings.EqualFold(a.Name, name) {
			return a
		}
	}
	return nil
}

func newResourceType(id, endpoint, desc string, core *Schema, exts ...*Schema) *ResourceType {
	rt := &ResourceType{ID: id, Endpoint: endpoint, Description: desc, Schema: core, Extensions: exts}
	rt.attrs = append(rt.attrs, commonAttrs(id)...)
	rt.attrs = append(rt.attrs, core.Attributes...)
	for _, e := range exts {
		rt.attrs = append(rt.attrs, &Attribute{Name: e.ID, Type: typeComplex, Mutability: readWrite,
			Returned: "default", Uniqueness: "none", SubAttributes: e.Attributes})
	}
	return rt
}

func str(name, desc string) *Attribute {
	return &Attribute{Name: name, Type: typeString, Description: desc, Mutability: readWrite, Returned: "default", Uniqueness: "none"}
}

func commonAttrs(resourceType string) []*Attribute {
	ro := func(a *Attribute) *Attribute { a.Mutability = readOnly; return a }
	dt := func(name, desc string) *Attribute {
		return &Attribute{Name: name, Type: typeDateTime, Description: desc, Mutability: readOnly, Returned: "default", Uniqueness: "none"}
	}
	id := ro(str("id", "Unique identifier of the "+resourceType+", assigned by the service provider."))
	id.CaseExact, id.Returned, id.Uniqueness = true, "always", "server"
	ext := str("externalId", "Identifier of the resource in the provisioning client.")
	ext.CaseExact = true
	version := ro(str("version", "Version of the resource (its ETag)."))
	version.CaseExact = true
	return []*Attribute{id, ext, {
		Name: "meta", Type: typeComplex, Description: "Resource metadata.", Mutability: readOnly,
		Returned: "default", Uniqueness: "none",
		SubAttributes: []*Attribute{
			ro(str("resourceType", "Name of the resource type.")),
			dt("created", "When the resource was added."),
			dt("lastModified", "When the resource was last changed."),
			{Name: "location", Type: typeReference, ReferenceTypes: []string{"uri"}, Description: "URI of the resource.",
				Mutability: readOnly, Returned: "default", Uniqueness: "none", CaseExact: true},
			version,
		},
	}}
}

// UserSchema is the core User schema as supported here. Attributes not
// listed are accepted and ignored.
var UserSchema = &Schema{
	ID: URNUser, Name: "User", Description: "User account: a member of the organization.",
	Attributes: []*Attribute{
		func() *Attribute {
			a := str("userName", "Unique identifier of the user, typically the sign-in email. Unique in the organization, compared case-insensitively.")
			a.Required, a.Uniqueness = true, "server"
			return a
		}(),
		{Name: "name", Type: typeComplex, Description: "Components of the user's name.", Mutability: readWrite,
			Returned: "default", Uniqueness: "none",
			SubAttributes: []*Attribute{
				str("formatted", "Full name, formatted for display."),
				str("familyName", "Family name."),
				str("givenName", "Given name."),
				str("middleName", "Middle name."),
				str("honorificPrefix", "Honorific prefix."),
				str("honorificSuffix", "Honorific suffix."),
			}},
		str("displayName", "Name shown for the user."),
		str("nickName", "Casual name."),
		{Name: "profileUrl", Type: typeReference, ReferenceTypes: []string{"external"}, Description: "URL of the user's profile.",
			Mutability: readWrite, Returned: "default", Uniqueness: "none"},
		str("title", "Title, such as Vice President."),
		str("userType", "Relationship to the organization, such as Employee."),
		str("preferredLanguage", "Preferred language."),
		str("locale", "Locale."),
		str("timezone", "Time zone, in IANA form."),
		{Name: "active", Type: typeBoolean, Description: "false removes all of the user's access; true restores it.",
			Mutability: readWrite, Returned: "default", Uniqueness: "none"},
		{Name: "emails", Type: typeComplex, MultiValued: true,
			Description: "Email addresses. The primary one (else the first) is matched at SSO sign-in.",
			Mutability:  readWrite, Returned: "default", Uniqueness: "none",
			SubAttributes: []*Attribute{
				str("value", "Email address."),
				str("display", "Display form of the address."),
				func() *Attribute {
					a := str("type", "Kind of address.")
					a.CanonicalValues = []string{"work", "home", "other"}
					return a
				}(),
				{Name: "primary", Type: typeBoolean, Description: "The primary address.", Mutability: readWrite, Returned: "default", Uniqueness: "none"},
			}},
		{Name: "groups", Type: typeComplex, MultiValued: true,
			Description: "Groups the user belongs to; changed through the Group resource only.",
			Mutability:  readOnly, Returned: "default", Uniqueness: "none",
			SubAttributes: []*Attribute{
				{Name: "value", Type: typeString, Description: "Group id.", Mutability: readOnly, Returned: "default", Uniqueness: "none"},
				{Name: "$ref", Type: typeReference, ReferenceTypes: []string{"Group"}, Description: "URI of the group.", Mutability: readOnly, Returned: "default", Uniqueness: "none"},
				{Name: "display", Type: typeString, Description: "Group display name.", Mutability: readOnly, Returned: "default", Uniqueness: "none"},
				{Name: "type", Type: typeString, CanonicalValues: []string{"direct"}, Description: "Membership kind.", Mutability: readOnly, Returned: "default", Uniqueness: "none"},
			}},
	},
}

// GroupSchema is the core Group schema.
var GroupSchema = &Schema{
	ID: URNGroup, Name: "Group",
	Description: "Group of users. A group named agentplane:<workspace>:<Role>, or carrying the workspace extension, gives its members that role in that workspace, overriding their manual, JIT and invite roles there.",
	Attributes: []*Attribute{
		func() *Attribute {
			a := str("displayName", "Name of the group.")
			a.Required = true
			return a
		}(),
		{Name: "members", Type: typeComplex, MultiValued: true, Description: "Users in the group (nested groups are not supported).",
			Mutability: readWrite, Returned: "default", Uniqueness: "none",
			SubAttributes: []*Attribute{
				{Name: "value", Type: typeString, Description: "User id.", Mutability: immutable, Returned: "default", Uniqueness: "none", CaseExact: true},
				{Name: "$ref", Type: typeReference, ReferenceTypes: []string{"User"}, Description: "URI of the user.", Mutability: immutable, Returned: "default", Uniqueness: "none"},
				{Name: "display", Type: typeString, Description: "User's display name.", Mutability: readOnly, Returned: "default", Uniqueness: "none"},
				{Name: "type", Type: typeString, CanonicalValues: []string{"User"}, Description: "Member kind; only User.", Mutability: immutable, Returned: "default", Uniqueness: "none"},
			}},
	},
}

// WorkspaceGroupSchema is the Group extension that names a workspace role
// explicitly, for identity providers that can send custom attributes.
var WorkspaceGroupSchema = &Schema{
	ID: URNWorkspaceGroup, Name: "WorkspaceGroup",
	Description: "Workspace role given to the group's members. When present it takes precedence over the agentplane:<workspace>:<Role> display-name convention.",
	Attributes: []*Attribute{
		str("workspaceId", "Id of a workspace of the organization."),
		func() *Attribute {
			a := str("role", "Workspace role of the members.")
			a.CanonicalValues = []string{"Viewer", "User", "Editor", "Admin"}
			return a
		}(),
	},
}

// Users and Groups are the two resource types.
var (
	Users  = newResourceType("User", "/Users", "User account", UserSchema)
	Groups = newResourceType("Group", "/Groups", "Group", GroupSchema, WorkspaceGroupSchema)
)

// Schemas lists every published schema.
var Schemas = []*Schema{UserSchema, GroupSchema, WorkspaceGroupSchema}
