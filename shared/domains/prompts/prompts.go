// Package prompts holds prompt repositories and their commits, in the wire
// format of the LangSmith hub API (/repos, /commits), so the langsmith SDKs'
// pushPrompt, pullPromptCommit, listPrompts and friends work unmodified.
//
// A commit's hash is a content hash: the SHA-256 (hex) of the parent's
// hash, a newline, and the manifest in canonical JSON (object keys sorted,
// no insignificant whitespace, numbers as written). A commit names the
// parent it was made on; a parent that is no longer the latest is a
// conflict, and the repository item's version guards the check, so of
// concurrent commits on one parent exactly one wins.
package prompts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/google/uuid"
)

var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// Error is a sentinel with a message for the API caller.
type Error struct {
	Kind error
	Msg  string
	Loc  []any
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func notFound(format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}
func conflict(format string, args ...any) error {
	return &Error{Kind: ErrConflict, Msg: fmt.Sprintf(format, args...)}
}
func invalid(loc []any, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(format, args...), Loc: loc}
}

// CurrentOwner is the owner that names the caller's workspace.
const CurrentOwner = "-"

// Handle is a workspace's owner handle in prompt names (owner/repo): its id.
// It is unique and needs no lookup, so the settings endpoint (tenant_handle)
// and this domain agree by construction.
func Handle(workspaceID string) string { return workspaceID }

// MaxManifestBytes bounds a commit's manifest (it is stored inline).
const MaxManifestBytes = 256 * 1024

const maxRetries = 50

// Options configure a Service.
type Options struct {
	Store  store.Store
	Logger *slog.Logger
	Now    func() time.Time
}

// Service implements prompt repositories and commits.
type Service struct {
	st  store.Store
	log *slog.Logger
	now func() time.Time
}

// New returns a Service.
func New(o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("prompts: a store is required")
	}
	s := &Service{st: o.Store, log: o.Logger, now: o.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Prompt is a repository (the SDKs' Prompt: every field they require is
// always present).
type Prompt struct {
	RepoHandle           string    `json:"repo_handle"`
	Description          *string   `json:"description"`
	Readme               *string   `json:"readme"`
	ID                   string    `json:"id"`
	TenantID             string    `json:"tenant_id"`
	CreatedAt            time.Time `json:"created_at"`
	UpdatedAt            time.Time `json:"updated_at"`
	IsPublic             bool      `json:"is_public"`
	IsArchived           bool      `json:"is_archived"`
	Tags                 []string  `json:"tags"`
	OriginalRepoID       *string   `json:"original_repo_id"`
	UpstreamRepoID       *string   `json:"upstream_repo_id"`
	OriginalRepoFullName *string   `json:"original_repo_full_name"`
	UpstreamRepoFullName *string   `json:"upstream_repo_full_name"`
	Owner                string    `json:"owner"`
	FullName             string    `json:"full_name"`
	NumLikes             int64     `json:"num_likes"`
	NumDownloads         int64     `json:"num_downloads"`
	NumViews             int64     `json:"num_views"`
	LikedByAuthUser      bool      `json:"liked_by_auth_user"`
	LastCommitHash       *string   `json:"last_commit_hash"`
	NumCommits           int64     `json:"num_commits"`
}

// Commit is one commit of a repository.
type Commit struct {
	ID               string          `json:"id"`
	CommitHash       string          `json:"commit_hash"`
	ParentID         *string         `json:"parent_id"`
	ParentCommitHash *string         `json:"parent_commit_hash"`
	RepoID           string          `json:"repo_id"`
	Manifest         json.RawMessage `json:"manifest"`
	Description      *string         `json:"description"`
	ExampleRunIDs    []string        `json:"example_run_ids"`
	NumDownloads     int64           `json:"num_downloads"`
	NumViews         int64           `json:"num_views"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	Seq              int64           `json:"-"`
}

type commitRec struct {
	Commit
	Seq int64 `json:"seq"`
}

// Tag names a commit.
type Tag struct {
	ID         string    `json:"id"`
	RepoID     string    `json:"repo_id"`
	CommitID   string    `json:"commit_id"`
	CommitHash string    `json:"commit_hash"`
	TagName    string    `json:"tag_name"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// ---- layout ----

func repoPK(ws string) string             { return "pw#" + ws }
func repoKey(ws, handle string) store.Key { return store.Key{PK: repoPK(ws), SK: "repo#" + handle} }
func commitPK(repo string) string         { return "pc#" + repo }
func commitKey(repo string, seq int64) store.Key {
	return store.Key{PK: commitPK(repo), SK: fmt.Sprintf("c#%016x", seq)}
}
func hashKey(repo, hash string) store.Key { return store.Key{PK: commitPK(repo), SK: "h#" + hash} }
func tagKey(repo, tag string) store.Key   { return store.Key{PK: commitPK(repo), SK: "t#" + tag} }
func gcKey(repo string) store.Key         { return store.Key{PK: "pgc", SK: repo} }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own, always-encodable types
	}
	return b
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

var handleRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// ValidHandle reports whether h can name a repository.
func ValidHandle(h string) bool { return handleRE.MatchString(h) }

// owner checks that owner names the caller's workspace.
func checkOwner(ws, owner, repo string) error {
	if owner != CurrentOwner && owner != Handle(ws) {
		return notFound("Prompt %s/%s not found", owner, repo)
	}
	return nil
}

func (s *Service) getRepo(ctx context.Context, ws, owner, handle string) (Prompt, int64, error) {
	if err := checkOwner(ws, owner, handle); err != nil {
		return Prompt{}, 0, err
	}
	if !ValidHandle(handle) {
		return Prompt{}, 0, notFound("Prompt %s/%s not found", owner, handle)
	}
	it, err := s.st.Get(ctx, repoKey(ws, handle))
	if errors.Is(err, store.ErrNotFound) {
		return Prompt{}, 0, notFound("Prompt %s/%s not found", owner, handle)
	}
	if err != nil {
		return Prompt{}, 0, err
	}
	var p Prompt
	return p, it.Version, decodeJSON(it.Data, &p)
}

// GetRepo returns a repository of the caller's workspace.
func (s *Service) GetRepo(ctx context.Context, ws, owner, handle string) (Prompt, error) {
	p, _, err := s.getRepo(ctx, ws, owner, handle)
	return p, err
}

// NewRepo is the body of POST /repos/.
type NewRepo struct {
	RepoHandle  string
	Description *string
	Readme      *string
	Tags        []string
	IsPublic    bool
	IsArchived  bool
}

// CreateRepo creates a repository; a handle already used is a conflict.
func (s *Service) CreateRepo(ctx context.Context, ws string, n NewRepo) (Prompt, error) {
	if !ValidHandle(n.RepoHandle) {
		return Prompt{}, invalid([]any{"body", "repo_handle"}, "repo_handle must be 1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit")
	}
	if err := checkTags(n.Tags); err != nil {
		return Prompt{}, err
	}
	now := s.clock()
	owner := Handle(ws)
	p := Prompt{RepoHandle: n.RepoHandle, Description: n.Description, Readme: n.Readme, ID: uuid.NewString(),
		TenantID: ws, CreatedAt: now, UpdatedAt: now, IsPublic: n.IsPublic, IsArchived: n.IsArchived,
		Tags: nonNil(n.Tags), Owner: owner, FullName: owner + "/" + n.RepoHandle}
	_, err := s.st.Put(ctx, store.Item{Key: repoKey(ws, n.RepoHandle), Data: mustJSON(p)}, store.NotExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return Prompt{}, conflict("Prompt %s already exists", n.RepoHandle)
	}
	return p, err
}

func checkTags(tags []string) error {
	if len(tags) > 50 {
		return invalid([]any{"body", "tags"}, "at most 50 tags")
	}
	for i, t := range tags {
		if t == "" || len(t) > 256 {
			return invalid([]any{"body", "tags", i}, "a tag is 1 to 256 characters")
		}
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// RepoPatch changes a repository; nil fields are kept.
type RepoPatch struct {
	Description *string
	Readme      *string
	Tags        *[]string
	IsPublic    *bool
	IsArchived  *bool
}

// UpdateRepo applies p.
func (s *Service) UpdateRepo(ctx context.Context, ws, owner, handle string, p RepoPatch) (Prompt, error) {
	if p.Tags != nil {
		if err := checkTags(*p.Tags); err != nil {
			return Prompt{}, err
		}
	}
	for range maxRetries {
		r, ver, err := s.getRepo(ctx, ws, owner, handle)
		if err != nil {
			return Prompt{}, err
		}
		if p.Description != nil {
			r.Description = p.Description
		}
		if p.Readme != nil {
			r.Readme = p.Readme
		}
		if p.Tags != nil {
			r.Tags = nonNil(*p.Tags)
		}
		if p.IsPublic != nil {
			r.IsPublic = *p.IsPublic
		}
		if p.IsArchived != nil {
			r.IsArchived = *p.IsArchived
		}
		r.UpdatedAt = s.clock()
		_, err = s.st.Put(ctx, store.Item{Key: repoKey(ws, handle), Data: mustJSON(r)}, store.HasVersion(ver))
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return r, err
	}
	return Prompt{}, fmt.Errorf("prompts: %s: too much contention", handle)
}

// DeleteRepo deletes a repository; its commits are unreachable at once
// and purged by Sweep.
func (s *Service) DeleteRepo(ctx context.Context, ws, owner, handle string) error {
	for range maxRetries {
		r, ver, err := s.getRepo(ctx, ws, owner, handle)
		if err != nil {
			return err
		}
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpDelete, Key: repoKey(ws, handle), Cond: store.HasVersion(ver)},
			{Kind: store.OpPut, Item: store.Item{Key: gcKey(r.ID), Data: []byte(ws)}},
		})
		if errors.Is(err, store.ErrConditionFailed) {
			continue
		}
		return err
	}
	return fmt.Errorf("prompts: %s: too much contention", handle)
}

// RepoQuery filters GET /repos.
type RepoQuery struct {
	IsPublic      *bool
	IsArchived    *bool
	Query         string
	MatchPrefix   bool
	SortField     string
	SortAscending bool
	Limit, Offset int
}

// SortFields are the accepted sort_field values.
var SortFields = []string{"updated_at", "created_at", "num_likes", "num_downloads", "num_views", "num_commits", "repo_handle"}

// ListRepos lists the workspace's repositories and their total.
func (s *Service) ListRepos(ctx context.Context, ws string, q RepoQuery) ([]Prompt, int, error) {
	var all []Prompt
	query := store.Query{PK: repoPK(ws), SK: store.SKCond{Op: store.SKBeginsWith, A: "repo#"}}
	needle := strings.ToLower(q.Query)
	for {
		pg, err := s.st.Query(ctx, query)
		if err != nil {
			return nil, 0, err
		}
		for _, it := range pg.Items {
			var p Prompt
			if err := decodeJSON(it.Data, &p); err != nil {
				return nil, 0, err
			}
			if q.IsPublic != nil && p.IsPublic != *q.IsPublic || q.IsArchived != nil && p.IsArchived != *q.IsArchived {
				continue
			}
			if needle != "" {
				h := strings.ToLower(p.RepoHandle)
				if q.MatchPrefix {
					if !strings.HasPrefix(h, needle) {
						continue
					}
				} else if !strings.Contains(h, needle) && (p.Description == nil || !strings.Contains(strings.ToLower(*p.Description), needle)) {
					continue
				}
			}
			all = append(all, p)
		}
		if pg.Next == "" {
			break
		}
		query.Cursor = pg.Next
	}
	key := func(p Prompt) any {
		switch q.SortField {
		case "created_at":
			return p.CreatedAt
		case "num_likes":
			return p.NumLikes
		case "num_downloads":
			return p.NumDownloads
		case "num_views":
			return p.NumViews
		case "num_commits":
			return p.NumCommits
		case "repo_handle":
			return p.RepoHandle
		}
		return p.UpdatedAt
	}
	less := func(a, b any) int {
		switch x := a.(type) {
		case time.Time:
			return x.Compare(b.(time.Time))
		case int64:
			y := b.(int64)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
		return strings.Compare(a.(string), b.(string))
	}
	sort.SliceStable(all, func(i, j int) bool {
		c := less(key(all[i]), key(all[j]))
		if c == 0 {
			c = strings.Compare(all[i].RepoHandle, all[j].RepoHandle)
		}
		if q.SortAscending {
			return c < 0
		}
		return c > 0
	})
	total := len(all)
	if q.Offset >= total {
		return []Prompt{}, total, nil
	}
	all = all[q.Offset:]
	if len(all) > q.Limit {
		all = all[:q.Limit]
	}
	return all, total, nil
}

// ---- commits ----

// HashCommit is the content hash of a commit: SHA-256 over the parent's
// hash ("" for the first commit), "\n", and the canonical JSON of the
// manifest.
func HashCommit(parent string, manifest json.RawMessage) (string, error) {
	var v any
	if err := decodeJSON(manifest, &v); err != nil {
		return "", err
	}
	var canon bytes.Buffer
	enc := json.NewEncoder(&canon)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(parent))
	h.Write([]byte{'\n'})
	h.Write(bytes.TrimRight(canon.Bytes(), "\n"))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// NewCommit is the body of POST /commits/{owner}/{repo}.
type NewCommit struct {
	Manifest     json.RawMessage
	ParentCommit *string
	Description  *string
}

// CreateCommit adds a commit on top of the repository's latest commit,
// which ParentCommit must name (nil only for the first commit).
func (s *Service) CreateCommit(ctx context.Context, ws, owner, handle string, n NewCommit) (Commit, error) {
	if len(n.Manifest) > MaxManifestBytes {
		return Commit{}, invalid([]any{"body", "manifest"}, "manifest larger than %d bytes", MaxManifestBytes)
	}
	for range maxRetries {
		r, ver, err := s.getRepo(ctx, ws, owner, handle)
		if err != nil {
			return Commit{}, err
		}
		latest := ""
		if r.LastCommitHash != nil {
			latest = *r.LastCommitHash
		}
		given := ""
		if n.ParentCommit != nil {
			given = *n.ParentCommit
		}
		if given != latest && !(len(given) >= 8 && latest != "" && strings.HasPrefix(latest, given)) {
			if latest == "" {
				return Commit{}, conflict("Parent commit %s is not the latest commit of %s: it has no commits yet", given, handle)
			}
			return Commit{}, conflict("Parent commit %q is not the latest commit of %s (%s): pull and commit again", given, handle, latest)
		}
		hash, err := HashCommit(latest, n.Manifest)
		if err != nil {
			return Commit{}, invalid([]any{"body", "manifest"}, "manifest is not valid JSON")
		}
		now := s.clock()
		c := Commit{ID: uuid.NewString(), CommitHash: hash, RepoID: r.ID, Manifest: n.Manifest, Description: n.Description,
			ExampleRunIDs: []string{}, CreatedAt: now, UpdatedAt: now}
		seq := r.NumCommits + 1
		if latest != "" {
			pid, err := s.commitID(ctx, r.ID, latest)
			if err != nil {
				return Commit{}, err
			}
			c.ParentID, c.ParentCommitHash = &pid, &latest
		}
		r.NumCommits, r.LastCommitHash, r.UpdatedAt = seq, &hash, now
		err = s.st.Transact(ctx, []store.TxOp{
			{Kind: store.OpPut, Item: store.Item{Key: repoKey(ws, handle), Data: mustJSON(r)}, Cond: store.HasVersion(ver)},
			{Kind: store.OpPut, Item: store.Item{Key: commitKey(r.ID, seq), Data: mustJSON(commitRec{Commit: c, Seq: seq})}, Cond: store.NotExists()},
			{Kind: store.OpPut, Item: store.Item{Key: hashKey(r.ID, hash), Data: mustJSON(seq)}, Cond: store.NotExists()},
		})
		var tce *store.TxConditionError
		if errors.As(err, &tce) {
			if tce.Index == 2 {
				return Commit{}, conflict("Commit %s already exists in %s", hash, handle)
			}
			continue // the repository changed: re-check the parent
		}
		if err != nil {
			return Commit{}, err
		}
		c.Seq = seq
		return c, nil
	}
	return Commit{}, fmt.Errorf("prompts: %s: too much contention", handle)
}

func (s *Service) commitBySeq(ctx context.Context, repo string, seq int64) (Commit, error) {
	it, err := s.st.Get(ctx, commitKey(repo, seq))
	if err != nil {
		return Commit{}, err
	}
	var c commitRec
	if err := decodeJSON(it.Data, &c); err != nil {
		return Commit{}, err
	}
	c.Commit.Seq = c.Seq
	return c.Commit, nil
}

func (s *Service) commitID(ctx context.Context, repo, hash string) (string, error) {
	c, err := s.commitByHash(ctx, repo, hash)
	return c.ID, err
}

// commitByHash finds a commit by its full hash or a unique prefix of at
// least 8 characters.
func (s *Service) commitByHash(ctx context.Context, repo, hash string) (Commit, error) {
	if len(hash) < 8 || len(hash) > 64 || strings.Trim(strings.ToLower(hash), "0123456789abcdef") != "" {
		return Commit{}, notFound("Commit %s not found", hash)
	}
	hash = strings.ToLower(hash)
	pg, err := s.st.Query(ctx, store.Query{PK: commitPK(repo), SK: store.SKCond{Op: store.SKBeginsWith, A: "h#" + hash}, Limit: 2})
	if err != nil {
		return Commit{}, err
	}
	if len(pg.Items) != 1 {
		return Commit{}, notFound("Commit %s not found", hash)
	}
	var seq int64
	if err := json.Unmarshal(pg.Items[0].Data, &seq); err != nil {
		return Commit{}, err
	}
	return s.commitBySeq(ctx, repo, seq)
}

// GetCommit resolves ref ("latest", a tag or a commit hash) in a repository.
func (s *Service) GetCommit(ctx context.Context, ws, owner, handle, ref string) (Commit, error) {
	r, _, err := s.getRepo(ctx, ws, owner, handle)
	if err != nil {
		return Commit{}, err
	}
	if ref == "latest" {
		if r.NumCommits == 0 {
			return Commit{}, notFound("Prompt %s has no commits", handle)
		}
		return s.commitBySeq(ctx, r.ID, r.NumCommits)
	}
	if it, err := s.st.Get(ctx, tagKey(r.ID, ref)); err == nil {
		var t Tag
		if err := decodeJSON(it.Data, &t); err != nil {
			return Commit{}, err
		}
		return s.commitByHash(ctx, r.ID, t.CommitHash)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Commit{}, err
	}
	return s.commitByHash(ctx, r.ID, ref)
}

// ListCommits returns a repository's commits, newest first, and the total.
func (s *Service) ListCommits(ctx context.Context, ws, owner, handle string, limit, offset int) ([]Commit, int64, error) {
	r, _, err := s.getRepo(ctx, ws, owner, handle)
	if err != nil {
		return nil, 0, err
	}
	out := []Commit{}
	if int64(offset) >= r.NumCommits {
		return out, r.NumCommits, nil
	}
	// Commits are numbered 1..n: the page is a key range.
	hi := r.NumCommits - int64(offset)
	lo := max(hi-int64(limit)+1, 1)
	pg, err := s.st.Query(ctx, store.Query{PK: commitPK(r.ID),
		SK:   store.SKCond{Op: store.SKBetween, A: commitKey(r.ID, lo).SK, B: commitKey(r.ID, hi).SK},
		Desc: true, Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	for _, it := range pg.Items {
		var c commitRec
		if err := decodeJSON(it.Data, &c); err != nil {
			return nil, 0, err
		}
		out = append(out, c.Commit)
	}
	return out, r.NumCommits, nil
}

// CreateTag names a commit (by its id) with tag; an existing tag is a
// conflict.
func (s *Service) CreateTag(ctx context.Context, ws, owner, handle, tag, commitID string) (Tag, error) {
	if tag == "" || len(tag) > 256 || tag == "latest" || strings.Contains(tag, "/") {
		return Tag{}, invalid([]any{"body", "tag_name"}, "tag_name must be 1 to 256 characters, without '/', and not \"latest\"")
	}
	r, _, err := s.getRepo(ctx, ws, owner, handle)
	if err != nil {
		return Tag{}, err
	}
	// Commit ids are not indexed: find it among the commits (tags are
	// rare; a repository's commits are read once).
	var found *Commit
	err = s.each(ctx, store.Query{PK: commitPK(r.ID), SK: store.SKCond{Op: store.SKBeginsWith, A: "c#"}}, func(it store.Item) bool {
		var c commitRec
		if decodeJSON(it.Data, &c) == nil && c.ID == commitID {
			found = &c.Commit
			return false
		}
		return true
	})
	if err != nil {
		return Tag{}, err
	}
	if found == nil {
		return Tag{}, notFound("Commit %s not found in %s", commitID, handle)
	}
	now := s.clock()
	t := Tag{ID: uuid.NewString(), RepoID: r.ID, CommitID: found.ID, CommitHash: found.CommitHash, TagName: tag, CreatedAt: now, UpdatedAt: now}
	_, err = s.st.Put(ctx, store.Item{Key: tagKey(r.ID, tag), Data: mustJSON(t)}, store.NotExists())
	if errors.Is(err, store.ErrConditionFailed) {
		return Tag{}, conflict("Tag %s already exists in %s", tag, handle)
	}
	return t, err
}

func (s *Service) each(ctx context.Context, q store.Query, fn func(store.Item) bool) error {
	for {
		pg, err := s.st.Query(ctx, q)
		if err != nil {
			return err
		}
		for _, it := range pg.Items {
			if !fn(it) {
				return nil
			}
		}
		if pg.Next == "" {
			return nil
		}
		q.Cursor = pg.Next
	}
}

// Sweep purges the commits and tags of deleted repositories (a bounded
// number per round).
func (s *Service) Sweep(ctx context.Context) error {
	budget := 2000
	pg, err := s.st.Query(ctx, store.Query{PK: "pgc", Limit: 10})
	if err != nil {
		return err
	}
	for _, g := range pg.Items {
		var dels []store.Key
		err := s.each(ctx, store.Query{PK: commitPK(g.SK)}, func(it store.Item) bool {
			dels = append(dels, it.Key)
			return len(dels) < budget
		})
		if err != nil {
			return err
		}
		for _, k := range dels {
			if err := s.st.Delete(ctx, k, store.Condition{}); err != nil {
				return err
			}
		}
		budget -= len(dels)
		if budget <= 0 {
			return nil
		}
		if err := s.st.Delete(ctx, g.Key, store.Condition{}); err != nil {
			return err
		}
	}
	return nil
}
