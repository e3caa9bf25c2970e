package tracing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Large fields (inputs, outputs, events, serialized) are not stored in
// run items: the consumer writes the large fields of all the runs of one
// batch (per project and expiry day) into one segment blob, and each run
// keeps a reference (blob key, offset, length). One blob write per batch
// instead of one per run keeps ingest fast; a read fetches only its bytes.
// Attachments are blobs of their own. Blobs live under
// tracing/runs/{ws}/{folder}/{expiry day}/, so deleting a project deletes
// one prefix and expiry deletes whole day folders (see Sweep).

func dayOf(t time.Time) string { return t.UTC().Format("2006-01-02") }

func runFolder(ws, folder, day string) string {
	return "tracing/runs/" + ws + "/" + folder + "/" + day + "/"
}

// segmentDayCache remembers the day folders already registered for the
// sweep, so each is written once per process, not once per batch.
type segmentDayCache struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (c *segmentDayCache) add(k string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[k] {
		return false
	}
	if len(c.seen) >= 100000 {
		// The cache only saves writes: start over rather than grow.
		c.seen = map[string]bool{}
	}
	c.seen[k] = true
	return true
}

// registerDay records that folder/day holds blobs to delete after day.
func (s *Service) registerDay(ctx context.Context, ws, folder, day string) error {
	sk := day + "#" + ws + "#" + folder
	if !s.segDays.add(sk) {
		return nil
	}
	_, err := s.st.Put(ctx, store.Item{Key: store.Key{PK: segmentDayPK, SK: sk}, Data: []byte("{}")}, store.Condition{})
	if err != nil {
		s.segDays.mu.Lock()
		delete(s.segDays.seen, sk)
		s.segDays.mu.Unlock()
	}
	return err
}

// segment accumulates large fields for one blob.
type segment struct {
	key string
	buf bytes.Buffer
}

func (g *segment) add(v json.RawMessage) *blobRef {
	if len(v) == 0 {
		return nil
	}
	ref := &blobRef{K: g.key, O: int64(g.buf.Len()), N: int64(len(v))}
	g.buf.Write(v)
	return ref
}

// shortHash names blobs deterministically, so a batch applied twice writes
// the same blobs again instead of new ones.
func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func attachmentKey(ws, folder, day, run, name string, data []byte) string {
	sum := sha256.Sum256(data)
	return runFolder(ws, folder, day) + "att/" + run + "/" + url.PathEscape(name) + "-" + hex.EncodeToString(sum[:8])
}

// blobReader reads large fields for one request.
type blobReader struct {
	b Bucket
}

// read returns the bytes a reference points at; a missing blob (expired
// or purged) reads as nothing.
func (br blobReader) read(ctx context.Context, ref *blobRef) (json.RawMessage, error) {
	if ref == nil {
		return nil, nil
	}
	rc, err := br.b.Get(ctx, ref.K)
	if errors.Is(err, blobs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if sk, ok := rc.(io.Seeker); ok {
		if _, err := sk.Seek(ref.O, io.SeekStart); err != nil {
			return nil, err
		}
	} else if _, err := io.CopyN(io.Discard, rc, ref.O); err != nil {
		return nil, fmt.Errorf("tracing: segment %s shorter than expected: %w", ref.K, err)
	}
	out := make([]byte, ref.N)
	if _, err := io.ReadFull(rc, out); err != nil {
		return nil, fmt.Errorf("tracing: segment %s shorter than expected: %w", ref.K, err)
	}
	return out, nil
}

// putBlob writes a blob. (The folder adapter itself survives a concurrent
// delete pruning the folder a write goes to: see blobs.DirBucket.)
func (s *Service) putBlob(ctx context.Context, key string, data []byte, contentType string) error {
	return s.blobs.Put(ctx, key, bytes.NewReader(data), contentType)
}

// cachedReader reads large fields for one response, opening each segment
// once however many of its fields the response holds (a run's inputs and
// outputs share a segment, and so do the runs of one batch). Adapters
// whose objects support ReadAt (files) are read in place; others are read
// one reference at a time.
type cachedReader struct {
	b    Bucket
	mu   sync.Mutex
	open map[string]io.ReaderAt
	cls  []io.Closer
}

func newCachedReader(b Bucket) *cachedReader {
	return &cachedReader{b: b, open: map[string]io.ReaderAt{}}
}

func (c *cachedReader) read(ctx context.Context, ref *blobRef) (json.RawMessage, error) {
	if ref == nil {
		return nil, nil
	}
	c.mu.Lock()
	ra, ok := c.open[ref.K]
	c.mu.Unlock()
	if !ok {
		rc, err := c.b.Get(ctx, ref.K)
		if errors.Is(err, blobs.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		r, isAt := rc.(io.ReaderAt)
		if !isAt {
			rc.Close()
			return blobReader{c.b}.read(ctx, ref)
		}
		c.mu.Lock()
		if existing, ok := c.open[ref.K]; ok {
			rc.Close()
			r = existing
		} else {
			c.open[ref.K] = r
			c.cls = append(c.cls, rc)
		}
		c.mu.Unlock()
		ra = r
	}
	out := make([]byte, ref.N)
	if n, err := ra.ReadAt(out, ref.O); n != len(out) {
		return nil, fmt.Errorf("tracing: segment %s shorter than expected: %w", ref.K, err)
	}
	return out, nil
}

func (c *cachedReader) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range c.cls {
		cl.Close()
	}
	c.cls, c.open = nil, map[string]io.ReaderAt{}
}
