package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// DirBucket stores objects as files in a private folder: directories 0700,
// files 0600. A Put writes a temporary file in a private folder on the same
// file system (so the rename is atomic), syncs it, renames it into place and
// syncs the folder; leftovers of a crash are removed when the bucket is
// opened. Nothing is ever written to the system temp folder.
type DirBucket struct {
	root string
	tmp  string
}

var _ Bucket = (*DirBucket)(nil)

// NewDir opens (creating) a folder bucket at root, with its temporary files
// in tmp, which it empties. Both must be on one file system, and neither
// may be inside the other: listing root must not show partial files, and
// emptying tmp must not remove objects.
func NewDir(root, tmp string) (*DirBucket, error) {
	var err error
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if tmp, err = filepath.Abs(tmp); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if within(root, tmp) || within(tmp, root) {
		return nil, fmt.Errorf("blobs: the folders %s and %s overlap", root, tmp)
	}
	for _, d := range []string{root, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("blobs: create %s: %w", d, err)
		}
		// An existing folder (a data directory made by an older version
		// with 0755) is made private too.
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("blobs: %w", err)
		}
	}
	// Partial writes of a killed process.
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return nil, fmt.Errorf("blobs: remove leftover %s: %w", e.Name(), err)
		}
	}
	return &DirBucket{root: root, tmp: tmp}, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

func (b *DirBucket) path(key string) (string, error) {
	if err := CheckKey(key); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// Put implements Bucket.
func (b *DirBucket) Put(ctx context.Context, key string, r io.Reader, _ string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(b.tmp, "put-*")
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, ctxReader{ctx, r}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if err := b.place(tmp, p, key); err != nil {
		return err
	}
	done = true
	return nil
}

// place renames the finished temporary file to p, creating its folders.
// A concurrent Delete may prune a folder this Put has just created (it was
// empty then), so a rename that finds its folder gone makes it again.
func (b *DirBucket) place(tmp, p, key string) error {
	dir := filepath.Dir(p)
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			if errors.Is(err, syscall.ENOTDIR) {
				return fmt.Errorf("%w: %q: an object and a folder cannot share a name", ErrInvalidKey, key)
			}
			// A folder pruned between two of MkdirAll's steps: its Mkdir
			// finds the folder gone (ENOENT), or finds it made by another
			// Put and then gone again when it checks (EEXIST). An object
			// in the way is ENOTDIR, above.
			if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) && attempt < 100 {
				continue
			}
			return fmt.Errorf("blobs: %w", err)
		}
		err := os.Rename(tmp, p)
		if err == nil {
			break
		}
		if errors.Is(err, fs.ErrNotExist) && attempt < 100 {
			continue
		}
		if st, serr := os.Lstat(p); serr == nil && st.IsDir() {
			return fmt.Errorf("%w: %q: an object and a folder cannot share a name", ErrInvalidKey, key)
		}
		return fmt.Errorf("blobs: %w", err)
	}
	// The rename is durable once its folder is synced.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	return nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Get implements Bucket.
func (b *DirBucket) Get(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("blobs: %w", err)
		}
		return nil, ErrNotFound
	}
	return f, nil
}

// Exists implements Bucket.
func (b *DirBucket) Exists(_ context.Context, key string) (bool, error) {
	p, err := b.path(key)
	if err != nil {
		return false, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blobs: %w", err)
	}
	return st.Mode().IsRegular(), nil
}

// Delete implements Bucket. Folders left empty are removed too, up to the
// bucket's root, so deleting every object under a prefix leaves no folders.
func (b *DirBucket) Delete(_ context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return fmt.Errorf("blobs: %w", err)
	case st.IsDir():
		return nil // a folder of other keys, not an object
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobs: %w", err)
	}
	for d := filepath.Dir(p); d != b.root && within(d, b.root); d = filepath.Dir(d) {
		if os.Remove(d) != nil { // not empty, or gone
			break
		}
	}
	return nil
}

type listed struct {
	key  string
	size int64
}

// List implements Bucket. It reads the keys of the deepest folder the
// prefix names before calling fn, so fn may delete what it is given.
func (b *DirBucket) List(ctx context.Context, prefix string, fn func(string, int64) error) error {
	start := b.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		p, err := b.path(prefix[:i])
		if err != nil {
			return nil // no valid key has this prefix
		}
		start = p
	}
	var out []listed
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// The start folder (or one below) does not exist or went away
			// meanwhile: nothing is stored there.
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(b.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed while listing
		}
		out = append(out, listed{key, info.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	// A folder's subtree is walked before a sibling file whose name sorts
	// before "/" ("a/b" before "a.txt"), so sort into byte order.
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	for _, o := range out {
		if err := fn(o.key, o.size); err != nil {
			return err
		}
	}
	return nil
}

// Close implements Bucket.
func (b *DirBucket) Close() error { return nil }
