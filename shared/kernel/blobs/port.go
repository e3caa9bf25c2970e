package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Bucket is the object-storage port. Keys are slash-separated paths
// ("threads/<dep>/<id>", see CheckKey); each adapter (a private folder
// locally, S3 in AWS) passes the conformance suite in blobtest, which is the
// definition of these semantics.
//
// One rule comes from the folder adapter: a key cannot also be a folder of
// other keys ("a" and "a/b"). The folder adapter refuses the second with
// ErrInvalidKey and keeps the first; S3 would store both, so do not rely on
// either.
type Bucket interface {
	// Put stores the object read from r (to EOF) atomically: a reader sees
	// the old object or the new one, never a partial one; a failed or
	// cancelled Put leaves the old object (or none) in place. A body of
	// unknown length is streamed, not held in memory.
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

// ErrInvalidKey is returned for a key CheckKey refuses (and by the folder
// adapter for a key that collides with a folder of other keys).
var ErrInvalidKey = errors.New("blobs: invalid key")

// MaxKeyLen is the longest key, in bytes (S3's limit).
const MaxKeyLen = 1024

// maxSegmentLen is the longest segment between slashes, in bytes (the
// usual file-name limit).
const maxSegmentLen = 255

// CheckKey reports whether every adapter can store key: 1 to MaxKeyLen bytes
// of UTF-8 without control characters or backslashes, made of non-empty
// segments of at most 255 bytes separated by single slashes, none of them
// "." or "..". It returns an error wrapping ErrInvalidKey, or nil.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes (1 to %d)", ErrInvalidKey, len(key), MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: not UTF-8", ErrInvalidKey)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w: character %U", ErrInvalidKey, r)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." || len(seg) > maxSegmentLen {
			return fmt.Errorf("%w: segment %q", ErrInvalidKey, seg)
		}
	}
	return nil
}

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
