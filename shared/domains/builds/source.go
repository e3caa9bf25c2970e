package builds

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/agentplane/agentplane/shared/domains/deployments"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Limits of one source tree.
var (
	MaxSourceBytes int64 = 512 << 20
	MaxSourceFiles       = 100000
)

// permanent marks an error that retrying cannot fix (a missing repository,
// ref or file, an invalid configuration): the step fails at once.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

func fail(format string, args ...any) error { return permanent{fmt.Errorf(format, args...)} }

// transient marks an error worth retrying (network, storage).
func transient(err error) error { return fmt.Errorf("%w: %w", workflow.ErrTransient, err) }

// Source is a fetched commit.
type Source struct {
	Commit *object.Commit
	// Branch is the branch the default-branch request resolved to ("" when
	// the job named its ref).
	Branch string
}

// localPath returns the filesystem path of a local repository URL.
func localPath(raw string) (string, bool) {
	if strings.HasPrefix(raw, "/") {
		return filepath.Clean(raw), true
	}
	if u, err := url.Parse(raw); err == nil && strings.EqualFold(u.Scheme, "file") {
		return filepath.Clean(u.Path), true
	}
	return "", false
}

// Fetch gets the commit a job builds: its CommitSHA when set (a redeploy),
// else the head of its ref (a branch, a refs/tags/ tag, or the default
// branch). Local repositories (allowed jobs only) are opened in place;
// remote ones are cloned into memory over the guarded HTTP client.
func Fetch(ctx context.Context, job deployments.BuildJob) (*Source, error) {
	if msg := deployments.CheckRepoURL(job.RepoURL, job.AllowLocal); msg != "" {
		return nil, fail("%s", msg)
	}
	var repo *git.Repository
	if p, ok := localPath(job.RepoURL); ok {
		r, err := git.PlainOpenWithOptions(p, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
		if err != nil {
			return nil, fail("no git repository at %s: %v", p, err)
		}
		repo = r
	} else {
		installTransports()
		opts := &git.CloneOptions{URL: job.RepoURL, NoCheckout: true, Tags: git.NoTags, SingleBranch: true}
		switch {
		case strings.HasPrefix(job.RepoRef, "refs/tags/"):
			opts.ReferenceName = plumbing.ReferenceName(job.RepoRef)
		case job.RepoRef != "":
			opts.ReferenceName = plumbing.NewBranchReferenceName(job.RepoRef)
		}
		// Public hosts serve shallow clones; go-git's own server (and so
		// some local test servers) does not, and an exact commit may be
		// older than the ref's head.
		if job.CommitSHA == "" && !job.AllowLocal {
			opts.Depth = 1
		}
		tr := &httpTrace{}
		r, err := git.CloneContext(withTrace(withNetPolicy(ctx, job.AllowLocal), tr), memory.NewStorage(), nil, opts)
		if err != nil {
			return nil, cloneError(ctx, job, err, tr)
		}
		repo = r
	}
	return resolveCommit(repo, job)
}

// cloneError says why a clone failed in words of this service: the
// category, the HTTP status of the server's last answer, and network
// errors (which are this machine's own facts). Nothing the server sent is
// repeated: go-git puts response bodies and protocol lines into its
// errors, and the message lands in the revision's status and build log.
func cloneError(ctx context.Context, job deployments.BuildJob, err error, tr *httpTrace) error {
	status, ctype := tr.last()
	answered := ""
	if status != 0 {
		answered = fmt.Sprintf(" (HTTP %d %s)", status, http.StatusText(status))
	}
	var noRef git.NoMatchingRefSpecError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var urlErr *url.Error
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrNonPublic):
		return permanent{err}
	case errors.Is(err, transport.ErrRepositoryNotFound), errors.Is(err, transport.ErrAuthenticationRequired),
		errors.Is(err, transport.ErrAuthorizationFailed), errors.Is(err, transport.ErrInvalidAuthMethod):
		return fail("repository %s not found or not readable%s", job.RepoURL, answered)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fail("repository %s is empty", job.RepoURL)
	case errors.As(err, &noRef), errors.Is(err, plumbing.ErrReferenceNotFound):
		return fail("ref %s not found in %s", refName(job), job.RepoURL)
	case errors.Is(err, errTooBig):
		return fail("repository %s is larger than %d bytes", job.RepoURL, MaxDownloadBytes)
	case status >= 500 || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
		return transient(fmt.Errorf("clone %s: the server failed%s", job.RepoURL, answered))
	case status >= 300:
		return fail("clone %s: the server refused%s", job.RepoURL, answered)
	// Resolution, connection and timeout errors are this machine's
	// facts; only their own text is kept (an error around them, such
	// as a malformed answer, may quote the server).
	case errors.As(err, &dnsErr):
		return transient(fmt.Errorf("clone %s: %s", job.RepoURL, dnsErr.Error()))
	case errors.As(err, &opErr):
		return transient(fmt.Errorf("clone %s: %s", job.RepoURL, opErr.Error()))
	case errors.As(err, &urlErr) && urlErr.Timeout():
		return transient(fmt.Errorf("clone %s: the server did not answer in time", job.RepoURL))
	case status != 0:
		if ctype == "" {
			ctype = "none"
		}
		return fail("clone %s: the server's answer%s is not a git repository (content type %s)", job.RepoURL, answered, ctype)
	}
	return transient(fmt.Errorf("clone %s: the transfer failed", job.RepoURL))
}

func refName(job deployments.BuildJob) string {
	if job.RepoRef == "" {
		return "HEAD (the default branch)"
	}
	return job.RepoRef
}

// commitOf peels a hash that names a commit or an annotated tag.
func commitOf(repo *git.Repository, h plumbing.Hash) (*object.Commit, error) {
	if c, err := repo.CommitObject(h); err == nil {
		return c, nil
	}
	tag, err := repo.TagObject(h)
	if err != nil {
		return nil, err
	}
	return tag.Commit()
}

func resolveCommit(repo *git.Repository, job deployments.BuildJob) (*Source, error) {
	if job.CommitSHA != "" {
		c, err := repo.CommitObject(plumbing.NewHash(job.CommitSHA))
		if err != nil {
			return nil, fail("commit %s not found in %s (was the history rewritten?)", job.CommitSHA, job.RepoURL)
		}
		return &Source{Commit: c}, nil
	}
	var ref *plumbing.Reference
	var err error
	out := &Source{}
	switch {
	case job.RepoRef == "":
		ref, err = repo.Head()
		if err == nil && ref.Name().IsBranch() {
			out.Branch = ref.Name().Short()
		}
	case strings.HasPrefix(job.RepoRef, "refs/tags/"):
		ref, err = repo.Reference(plumbing.ReferenceName(job.RepoRef), true)
	default:
		ref, err = repo.Reference(plumbing.NewBranchReferenceName(job.RepoRef), true)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			// A clone of one branch records it as HEAD and the remote ref.
			ref, err = repo.Reference(plumbing.NewRemoteReferenceName("origin", job.RepoRef), true)
		}
	}
	if err != nil {
		return nil, fail("ref %s not found in %s", refName(job), job.RepoURL)
	}
	c, err := commitOf(repo, ref.Hash())
	if err != nil {
		return nil, fail("ref %s of %s does not point at a commit", refName(job), job.RepoURL)
	}
	out.Commit = c
	return out, nil
}

// WriteArchive writes the commit's tree as a gzipped tar to w (regular
// files, executables and symlinks; submodules are skipped) and returns the
// file list.
func (s *Source) WriteArchive(ctx context.Context, w io.Writer) (Tree, error) {
	tree, err := s.Commit.Tree()
	if err != nil {
		return nil, fail("read tree of %s: %v", s.Commit.Hash, err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	files := Tree{}
	var total int64
	err = tree.Files().ForEach(func(f *object.File) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(files) >= MaxSourceFiles {
			return fail("the repository has more than %d files", MaxSourceFiles)
		}
		total += f.Size
		if total > MaxSourceBytes {
			return fail("the repository's files exceed %d bytes", MaxSourceBytes)
		}
		hdr := &tar.Header{Name: f.Name, ModTime: s.Commit.Committer.When, Format: tar.FormatPAX}
		switch f.Mode {
		case filemode.Symlink:
			target, err := f.Contents()
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
			files[f.Name] = true
			return tw.WriteHeader(hdr)
		case filemode.Executable:
			hdr.Mode = 0o755
		default:
			hdr.Mode = 0o644
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, f.Size
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		if _, err := io.Copy(tw, r); err != nil {
			return err
		}
		files[f.Name] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return files, gz.Close()
}

// readArchive walks a gzipped tar, calling fn for each entry; fn may read
// the entry's content from r.
func readArchive(r io.Reader, fn func(hdr *tar.Header, r io.Reader) error) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(hdr, tr); err != nil {
			return err
		}
	}
}
