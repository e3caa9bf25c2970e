// Package identity holds organizations, workspaces, API keys and roles, and
// the middleware that turns request credentials into a Principal.
//
// API keys are random, shown once at creation, and stored only as their
// SHA-256 hash (the key has 256 bits of entropy, so a fast hash is enough;
// lookups are by hash and the final comparison is constant-time).
package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/auth"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

// Role and Principal are the kernel's (shared/kernel/auth): every domain
// authorizes with them; identity issues and checks the keys behind them.
type (
	Role      = auth.Role
	Principal = auth.Principal
)

const (
	RoleViewer = auth.RoleViewer
	RoleUser   = auth.RoleUser
	RoleEditor = auth.RoleEditor
	RoleAdmin  = auth.RoleAdmin
)

// Roles lists the valid roles, weakest first.
var Roles = auth.Roles

var (
	// ErrRevoked: a key with this value was revoked; it is never created
	// again.
	ErrRevoked      = errors.New("identity: this API key was revoked")
	ErrNotFound     = errors.New("identity: not found")
	ErrInvalidKey   = errors.New("identity: invalid API key")
	ErrExists       = errors.New("identity: already exists")
	ErrNoAccess     = errors.New("identity: no access")
	ErrInvalidInput = errors.New("identity: invalid input")
)

// Organization is the organization record. The fields beyond the seed's
// (id, display_name, jit_provisioning_enabled, invites_enabled,
// sso_login_slug) are the "further fields" the seed says are returned.
type Organization struct {
	ID                     string    `json:"id"`
	DisplayName            string    `json:"display_name"`
	JITProvisioningEnabled bool      `json:"jit_provisioning_enabled"`
	InvitesEnabled         bool      `json:"invites_enabled"`
	SSOLoginSlug           string    `json:"sso_login_slug"`
	DefaultSSOProvision    bool      `json:"default_sso_provision"`
	IsPersonal             bool      `json:"is_personal"`
	CreatedAt              time.Time `json:"created_at"`
	UpdatedAt              time.Time `json:"updated_at"`
	// Region is the organization's home region ("us" or "eu"), chosen at
	// creation and never changed: all its data is stored and served only
	// there (see docs/regions.md).
	Region string `json:"region,omitempty"`
}

// Workspace belongs to one organization.
type Workspace struct {
	ID             string    `json:"id"`
	OrganizationID string    `json:"organization_id"`
	DisplayName    string    `json:"display_name"`
	CreatedAt      time.Time `json:"created_at"`
}

// Grant gives a role in one workspace.
type Grant struct {
	WorkspaceID string `json:"workspace_id"`
	Role        Role   `json:"role"`
}

// APIKey is an API key's record; the key itself is never stored.
type APIKey struct {
	ID             string `json:"id"`
	OrganizationID string `json:"organization_id"`
	Description    string `json:"description"`
	// ShortKey is a non-secret hint of the key ("ap_AbCd…wxyz").
	ShortKey string `json:"short_key"`
	// OrgRole is the key's organization role: an Admin key reaches every
	// workspace of the organization as Admin.
	OrgRole    Role      `json:"org_role"`
	Workspaces []Grant   `json:"workspaces"`
	CreatedAt  time.Time `json:"created_at"`
	// Hash is the hex SHA-256 of the key (not returned by the API).
	Hash string `json:"-"`
}

type storedKey struct {
	APIKey
	Hash string `json:"hash"`
}

func principalOf(k APIKey) Principal {
	grants := make(map[string]Role, len(k.Workspaces))
	for _, g := range k.Workspaces {
		grants[g.WorkspaceID] = g.Role
	}
	p := auth.NewPrincipal(k.OrganizationID, k.OrgRole, k.ID, grants)
	return p
}

// Service stores and checks identities.
type Service struct {
	st    store.Store
	now   func() time.Time
	cache *caches // cache.go
	// res is the region rule (regions.go); zero: region-unaware.
	res residency
}

// New returns a Service over st.
func New(st store.Store) *Service {
	return &Service{st: st, now: func() time.Time { return time.Now().UTC() }, cache: newCaches()}
}

// Key layout in the single table.
func orgKey(id string) store.Key       { return store.Key{PK: "org#" + id, SK: "#org"} }
func slugKey(slug string) store.Key    { return store.Key{PK: "orgslug#" + slug, SK: "#slug"} }
func wsKey(org, id string) store.Key   { return store.Key{PK: "org#" + org, SK: "ws#" + id} }
func wsLookupKey(id string) store.Key  { return store.Key{PK: "ws#" + id, SK: "#ws"} }
func keyByHash(hash string) store.Key  { return store.Key{PK: "apikey#" + hash, SK: "#key"} }
func keyByID(org, id string) store.Key { return store.Key{PK: "org#" + org, SK: "apikey#" + id} }
func bootstrapKey() store.Key          { return store.Key{PK: "meta", SK: "bootstrap"} }
func revokedKey(hash string) store.Key { return store.Key{PK: "apikeyrevoked#" + hash, SK: "#revoked"} }
func put(it store.Item) store.TxOp {
	return store.TxOp{Kind: store.OpPut, Item: it, Cond: store.NotExists()}
}
func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
func newID() string         { return uuid.NewString() }

// OrganizationsIndex lists every organization (the platform operator's
// view, and the bootstrap check).
const OrganizationsIndex = "gsi1"

// KeyPrefix starts every generated key.
const KeyPrefix = "ap_"

// GenerateKey returns a new random API key.
func GenerateKey() string { return NewToken(KeyPrefix) }

// NewToken returns prefix followed by 256 random bits (base64url). Every
// bearer secret of the platform (API keys, SCIM tokens) is made this way
// and stored only as its HashToken.
func NewToken(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashToken is the stored form of a token: its hex SHA-256.
func HashToken(raw string) string {
	h := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(h[:])
}

func shortKey(raw string) string {
	if len(raw) < 12 {
		return "…"
	}
	return raw[:7] + "…" + raw[len(raw)-4:]
}

// CreateOrganization stores a new organization with a unique login slug.
func (s *Service) CreateOrganization(ctx context.Context, o Organization) (Organization, error) {
	if o.ID == "" {
		o.ID = newID()
	}
	if strings.TrimSpace(o.DisplayName) == "" {
		return Organization{}, fmt.Errorf("%w: display_name is required", ErrInvalidInput)
	}
	if err := s.placeOrganization(&o); err != nil {
		return Organization{}, err
	}
	if o.SSOLoginSlug == "" {
		o.SSOLoginSlug = slugify(o.DisplayName) + "-" + o.ID[:8]
	}
	now := s.now()
	o.CreatedAt, o.UpdatedAt = now, now
	err := s.st.Transact(ctx, []store.TxOp{
		put(store.Item{Key: orgKey(o.ID), Data: mustJSON(o),
			Indexes: map[string]store.IndexKey{OrganizationsIndex: {PK: "orgs", SK: o.ID}}}),
		put(store.Item{Key: slugKey(o.SSOLoginSlug), Data: []byte(o.ID)}),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return Organization{}, fmt.Errorf("%w: organization or login slug", ErrExists)
	}
	return o, err
}

func slugify(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if out == "" {
		out = "org"
	}
	if len(out) > 40 {
		out = out[:40]
	}
	return out
}

// Organization returns the organization with that id.
func (s *Service) Organization(ctx context.Context, id string) (Organization, error) {
	it, err := s.st.Get(ctx, orgKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Organization{}, ErrNotFound
	}
	if err != nil {
		return Organization{}, err
	}
	var o Organization
	return o, json.Unmarshal(it.Data, &o)
}

// OrganizationBySlug returns the organization with that SSO login slug.
func (s *Service) OrganizationBySlug(ctx context.Context, slug string) (Organization, error) {
	it, err := s.st.Get(ctx, slugKey(slug))
	if errors.Is(err, store.ErrNotFound) {
		return Organization{}, ErrNotFound
	}
	if err != nil {
		return Organization{}, err
	}
	return s.Organization(ctx, string(it.Data))
}

// Organizations lists every organization (for self-hosted rules and admin).
func (s *Service) Organizations(ctx context.Context) ([]Organization, error) {
	var out []Organization
	q := store.Query{Index: OrganizationsIndex, PK: "orgs"}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var o Organization
			if err := json.Unmarshal(it.Data, &o); err != nil {
				return nil, err
			}
			out = append(out, o)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// UpdateOrganization applies fn to the organization with a versioned
// conditional write, retrying on concurrent updates so none is lost. fn may
// be called more than once; it must not change ID or SSOLoginSlug.
func (s *Service) UpdateOrganization(ctx context.Context, id string, fn func(*Organization) error) (Organization, error) {
	for attempt := 0; attempt < 20; attempt++ {
		it, err := s.st.Get(ctx, orgKey(id))
		if errors.Is(err, store.ErrNotFound) {
			return Organization{}, ErrNotFound
		}
		if err != nil {
			return Organization{}, err
		}
		var o Organization
		if err := json.Unmarshal(it.Data, &o); err != nil {
			return Organization{}, err
		}
		if err := fn(&o); err != nil {
			return Organization{}, err
		}
		o.ID = id
		o.UpdatedAt = s.now()
		it.Data = mustJSON(o)
		if _, err := s.st.Put(ctx, it, store.HasVersion(it.Version)); err == nil {
			return o, nil
		} else if !errors.Is(err, store.ErrConditionFailed) {
			return Organization{}, err
		}
	}
	return Organization{}, fmt.Errorf("identity: organization %s: too much contention", id)
}

// CreateWorkspace adds a workspace to an organization.
func (s *Service) CreateWorkspace(ctx context.Context, orgID, displayName string) (Workspace, error) {
	displayName = strings.TrimSpace(displayName)
	if displayName == "" || len(displayName) > 200 {
		return Workspace{}, fmt.Errorf("%w: display_name must be 1 to 200 characters", ErrInvalidInput)
	}
	w := Workspace{ID: newID(), OrganizationID: orgID, DisplayName: displayName, CreatedAt: s.now()}
	err := s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpCheck, Key: orgKey(orgID), Cond: store.Exists()},
		put(store.Item{Key: wsKey(orgID, w.ID), Data: mustJSON(w)}),
		put(store.Item{Key: wsLookupKey(w.ID), Data: mustJSON(w)}),
	})
	var tce *store.TxConditionError
	if errors.As(err, &tce) && tce.Index == 0 {
		return Workspace{}, ErrNotFound
	}
	return w, err
}

// Workspace returns the workspace with that id.
func (s *Service) Workspace(ctx context.Context, id string) (Workspace, error) {
	if w, ok := s.cache.workspace(id); ok {
		return w, nil
	}
	it, err := s.st.Get(ctx, wsLookupKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Workspace{}, ErrNotFound
	}
	if err != nil {
		return Workspace{}, err
	}
	var w Workspace
	if err := json.Unmarshal(it.Data, &w); err != nil {
		return Workspace{}, err
	}
	s.cache.storeWorkspace(w)
	return w, nil
}

// Workspaces lists an organization's workspaces.
func (s *Service) Workspaces(ctx context.Context, orgID string) ([]Workspace, error) {
	var out []Workspace
	q := store.Query{PK: "org#" + orgID, SK: store.SKCond{Op: store.SKBeginsWith, A: "ws#"}}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var w Workspace
			if err := json.Unmarshal(it.Data, &w); err != nil {
				return nil, err
			}
			out = append(out, w)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// NewKey describes a key to create.
type NewKey struct {
	OrganizationID string
	Description    string
	OrgRole        Role
	Workspaces     []Grant
	// Raw, when set, is used as the key instead of a generated one (the
	// bootstrap key from AGENTPLANE_BOOTSTRAP_API_KEY).
	Raw string
}

// CreateAPIKey stores a key and returns its record and the raw key, which is
// never available again.
func (s *Service) CreateAPIKey(ctx context.Context, nk NewKey) (APIKey, string, error) {
	raw := nk.Raw
	if raw == "" {
		raw = GenerateKey()
	}
	if len(raw) < 16 || len(raw) > 256 {
		return APIKey{}, "", fmt.Errorf("%w: an API key must be 16 to 256 characters", ErrInvalidInput)
	}
	if nk.OrgRole == "" {
		nk.OrgRole = RoleViewer
	}
	if !nk.OrgRole.Valid() {
		return APIKey{}, "", fmt.Errorf("%w: unknown role %q", ErrInvalidInput, nk.OrgRole)
	}
	ops := []store.TxOp{{Kind: store.OpCheck, Key: orgKey(nk.OrganizationID), Cond: store.Exists()}}
	seen := map[string]bool{}
	for _, g := range nk.Workspaces {
		if !g.Role.Valid() {
			return APIKey{}, "", fmt.Errorf("%w: unknown role %q", ErrInvalidInput, g.Role)
		}
		if seen[g.WorkspaceID] {
			return APIKey{}, "", fmt.Errorf("%w: workspace %s listed twice", ErrInvalidInput, g.WorkspaceID)
		}
		seen[g.WorkspaceID] = true
		ops = append(ops, store.TxOp{Kind: store.OpCheck, Key: wsKey(nk.OrganizationID, g.WorkspaceID), Cond: store.Exists()})
	}
	k := APIKey{
		ID: newID(), OrganizationID: nk.OrganizationID, Description: nk.Description,
		ShortKey: shortKey(raw), OrgRole: nk.OrgRole, Workspaces: nk.Workspaces, CreatedAt: s.now(),
	}
	if k.Workspaces == nil {
		k.Workspaces = []Grant{}
	}
	hash := HashToken(raw)
	rec := mustJSON(storedKey{APIKey: k, Hash: hash})
	// A revoked value never becomes a key again (only a given value can
	// repeat; generated ones have 256 random bits).
	revokedAt := -1
	if nk.Raw != "" {
		revokedAt = len(ops)
		ops = append(ops, store.TxOp{Kind: store.OpCheck, Key: revokedKey(hash), Cond: store.NotExists()})
	}
	ops = append(ops,
		put(store.Item{Key: keyByHash(hash), Data: rec}),
		put(store.Item{Key: keyByID(k.OrganizationID, k.ID), Data: rec}),
	)
	err := s.st.Transact(ctx, ops)
	var tce *store.TxConditionError
	if errors.As(err, &tce) {
		switch {
		case tce.Index == revokedAt:
			return APIKey{}, "", ErrRevoked
		case tce.Index < len(ops)-2:
			return APIKey{}, "", ErrNotFound
		}
		return APIKey{}, "", ErrExists
	}
	if err != nil {
		return APIKey{}, "", err
	}
	k.Hash = hash
	return k, raw, nil
}

// APIKeys lists an organization's keys (records only).
func (s *Service) APIKeys(ctx context.Context, orgID string) ([]APIKey, error) {
	var out []APIKey
	q := store.Query{PK: "org#" + orgID, SK: store.SKCond{Op: store.SKBeginsWith, A: "apikey#"}}
	for {
		page, err := s.st.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			var sk storedKey
			if err := json.Unmarshal(it.Data, &sk); err != nil {
				return nil, err
			}
			out = append(out, sk.APIKey)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// RevokeAPIKey deletes a key of the organization and records its hash as
// revoked, so the same value can never be created again (not by a later
// bootstrap or recovery either).
func (s *Service) RevokeAPIKey(ctx context.Context, orgID, keyID string) error {
	it, err := s.st.Get(ctx, keyByID(orgID, keyID))
	if errors.Is(err, store.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	var sk storedKey
	if err := json.Unmarshal(it.Data, &sk); err != nil {
		return err
	}
	err = s.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpDelete, Key: keyByID(orgID, keyID), Cond: store.Exists()},
		{Kind: store.OpDelete, Key: keyByHash(sk.Hash)},
		{Kind: store.OpPut, Item: store.Item{Key: revokedKey(sk.Hash), Data: mustJSON(map[string]any{
			"key_id": keyID, "organization_id": orgID, "revoked_at": s.now()})}},
	})
	s.cache.revoked(sk.Hash)
	var tce *store.TxConditionError
	if errors.As(err, &tce) && tce.Index == 0 {
		return ErrNotFound // revoked concurrently
	}
	return err
}

// Authenticate returns the principal of a raw key, or ErrInvalidKey.
func (s *Service) Authenticate(ctx context.Context, raw string) (Principal, error) {
	if raw == "" || len(raw) > 256 {
		return Principal{}, ErrInvalidKey
	}
	sum := sha256.Sum256([]byte(raw))
	p, ok, epoch := s.cache.principal(sum)
	if ok {
		return p, nil
	}
	hash := hex.EncodeToString(sum[:])
	it, err := s.st.Get(ctx, keyByHash(hash))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, ErrInvalidKey
	}
	if err != nil {
		return Principal{}, err
	}
	var sk storedKey
	if err := json.Unmarshal(it.Data, &sk); err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(sk.Hash), []byte(hash)) != 1 {
		return Principal{}, ErrInvalidKey
	}
	p = principalOf(sk.APIKey)
	s.cache.storePrincipal(sum, p, epoch)
	return p, nil
}

// Bootstrapped describes the default organization set up on first start.
type Bootstrapped struct {
	Organization Organization
	Workspace    Workspace
	// Key is the raw admin key when this call created it from a generated
	// value (to be printed once); empty otherwise.
	Key string
	// Created is true when this call initialized an empty store.
	Created bool
	// KeyIgnored is true when a key was given for an initialized store
	// and it is not a key of the store (never created there, or revoked):
	// it was not created, since the bootstrap key exists only on an empty
	// store.
	KeyIgnored bool
}

type bootstrapRecord struct {
	OrganizationID string `json:"organization_id"`
	WorkspaceID    string `json:"workspace_id"`
}

// Bootstrap creates, on an empty store, a default organization (the one with
// default_sso_provision=true), a default workspace and an admin API key: the
// given key when non-empty, else a generated one returned in Key. On an
// initialized store it creates nothing and returns the defaults: a key
// given then is not created (KeyIgnored says so when it does not
// authenticate), so a bootstrap key that was revoked never comes back.
// A lost admin key is recovered with RecoverAdminKey instead.
func (s *Service) Bootstrap(ctx context.Context, key string) (Bootstrapped, error) {
	if _, err := s.st.Get(ctx, bootstrapKey()); err == nil {
		org, ws, err := s.Defaults(ctx)
		if err != nil {
			return Bootstrapped{}, err
		}
		out := Bootstrapped{Organization: org, Workspace: ws}
		if key != "" {
			if _, err := s.Authenticate(ctx, key); errors.Is(err, ErrInvalidKey) {
				out.KeyIgnored = true
			} else if err != nil {
				return Bootstrapped{}, err
			}
		}
		return out, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return Bootstrapped{}, err
	}
	org, err := s.CreateOrganization(ctx, Organization{
		DisplayName: "Default", SSOLoginSlug: "default", DefaultSSOProvision: true,
		JITProvisioningEnabled: true, InvitesEnabled: true,
	})
	if err != nil {
		return Bootstrapped{}, err
	}
	ws, err := s.CreateWorkspace(ctx, org.ID, "Default")
	if err != nil {
		return Bootstrapped{}, err
	}
	_, raw, err := s.CreateAPIKey(ctx, NewKey{OrganizationID: org.ID, Description: "bootstrap admin key", OrgRole: RoleAdmin, Raw: key})
	if err != nil {
		return Bootstrapped{}, err
	}
	// The marker is written last and conditionally: if two processes race on
	// an empty store, the loser's records are harmless extras and it reports
	// the winner's defaults.
	rec := mustJSON(bootstrapRecord{OrganizationID: org.ID, WorkspaceID: ws.ID})
	if _, err := s.st.Put(ctx, store.Item{Key: bootstrapKey(), Data: rec}, store.NotExists()); errors.Is(err, store.ErrConditionFailed) {
		return s.Bootstrap(ctx, key)
	} else if err != nil {
		return Bootstrapped{}, err
	}
	out := Bootstrapped{Organization: org, Workspace: ws, Created: true}
	if key == "" {
		out.Key = raw
	}
	return out, nil
}

// Defaults returns the default organization and workspace created by
// Bootstrap.
func (s *Service) Defaults(ctx context.Context) (Organization, Workspace, error) {
	it, err := s.st.Get(ctx, bootstrapKey())
	if errors.Is(err, store.ErrNotFound) {
		return Organization{}, Workspace{}, ErrNotFound
	}
	if err != nil {
		return Organization{}, Workspace{}, err
	}
	var rec bootstrapRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		return Organization{}, Workspace{}, err
	}
	org, err := s.Organization(ctx, rec.OrganizationID)
	if err != nil {
		return Organization{}, Workspace{}, err
	}
	ws, err := s.Workspace(ctx, rec.WorkspaceID)
	return org, ws, err
}

// RecoverAdminKey creates a new organization-admin key in the default
// organization and returns its record and the raw key (shown once). It is
// the recovery of a lost admin key: it proves nothing about the caller, so
// it must only be reachable by whoever controls the installation's data
// (the local server runs it at start when the data directory holds the
// recovery file). ErrNotFound before Bootstrap.
func (s *Service) RecoverAdminKey(ctx context.Context) (APIKey, string, error) {
	org, _, err := s.Defaults(ctx)
	if err != nil {
		return APIKey{}, "", err
	}
	return s.CreateAPIKey(ctx, NewKey{OrganizationID: org.ID, OrgRole: RoleAdmin,
		Description: "recovered admin key (" + s.now().Format(time.RFC3339) + ")"})
}
