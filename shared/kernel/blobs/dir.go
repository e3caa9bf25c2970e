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
)

// DirBucket stores objects as files in a private folder: directories 0700,
// files 0600. A Put writes a temporary file in a private folder beside the
// objects (same file system, so the rename is atomic) and renames it into
// place; leftovers of a crash are removed when the bucket is opened.
type DirBucket struct {
	root string
	tmp  string
}

// NewDir opens (creating) a folder bucket at root, with its temporary files
// in tmp. Both must be on one file system; tmp is emptied.
func NewDir(root, tmp string) (*DirBucket, error) {
	var err error
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if tmp, err = filepath.Abs(tmp); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	for _, d := range []string{root, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("blobs: create %s: %w", d, err)
		}
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
		_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
	}
	return &DirBucket{root: root, tmp: tmp}, nil
}

func (b *DirBucket) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") {
		return "", ErrInvalidKey
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", ErrInvalidKey
		}
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
	if err := f.Sync(); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
	done = true
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
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
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
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blobs: %w", err)
	}
	return !st.IsDir(), nil
}

// Delete implements Bucket. Folders left empty are removed too, up to the
// bucket's root.
func (b *DirBucket) Delete(_ context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blobs: %w", err)
	}
	for d := filepath.Dir(p); d != b.root && strings.HasPrefix(d, b.root); d = filepath.Dir(d) {
		if os.Remove(d) != nil { // not empty, or gone
			break
		}
	}
	return nil
}

// List implements Bucket.
func (b *DirBucket) List(ctx context.Context, prefix string, fn func(string, int64) error) error {
	// Walk only the deepest folder the prefix names.
	start := b.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		p, err := b.path(prefix[:i])
		if err != nil {
			return nil
		}
		start = p
	}
	var out []struct {
		key  string
		size int64
	}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
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
		out = append(out, struct {
			key  string
			size int64
		}{key, info.Size()})
		return nil
	})
	if err != nil {
		return fmt.Errorf("blobs: %w", err)
	}
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
