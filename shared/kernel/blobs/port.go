package blobs

import (
	"bytes"
	"context"
	"errors"
	"io"
)

// Bucket is the object-storage port. Keys are slash-separated paths
// ("threads/<dep>/<id>"); each adapter (a private folder locally, S3 in
// AWS) passes the same conformance suite.
type Bucket interface {
	// Put stores an object atomically: a reader sees the old object or the
	// new one, never a partial one; a failed or cancelled Put leaves nothing.
	Put(ctx context.Context, key string, r io.Reader, contentType string) error
	// Get opens an object for reading, or returns ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Exists reports whether an object is stored at key.
	Exists(ctx context.Context, key string) (bool, error)
	// Delete removes an object; deleting an absent one is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn with each key under prefix, in lexical order, until fn
	// returns an error (which List returns).
	List(ctx context.Context, prefix string, fn func(key string, size int64) error) error
	// Close releases the adapter.
	Close() error
}

// ErrNotFound is returned by Get (and ReadAll) for a missing object.
var ErrNotFound = errors.New("blobs: object not found")

// ErrInvalidKey is returned for an empty key, or one with empty, "." or
// ".." segments.
var ErrInvalidKey = errors.New("blobs: invalid key")

// ReadAll reads a whole object.
func ReadAll(ctx context.Context, b Bucket, key string) ([]byte, error) {
	r, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// WriteAll stores data at key.
func WriteAll(ctx context.Context, b Bucket, key string, data []byte, contentType string) error {
	return b.Put(ctx, key, bytes.NewReader(data), contentType)
}

// DeletePrefix removes every object under prefix.
func DeletePrefix(ctx context.Context, b Bucket, prefix string) error {
	var keys []string
	if err := b.List(ctx, prefix, func(k string, _ int64) error { keys = append(keys, k); return nil }); err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if err := b.Delete(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
