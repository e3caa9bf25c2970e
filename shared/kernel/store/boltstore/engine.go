package boltstore

import (
	"bytes"
	"errors"
	"sync"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/tidwall/btree"
	bolt "go.etcd.io/bbolt"
)

// The store's layers, newest first: a write transaction's own writes; the
// active memory table, which holds what was committed since it was
// started; at most one frozen memory table, being checkpointed into bbolt;
// and the bbolt file. A commit appends its writes to the write-ahead log
// (wal.go) and syncs it once, then merges them into the active table; a
// background checkpoint writes a frozen table into bbolt in one
// transaction (commit.go). A read looks in each layer in turn, and a
// cursor merges them.
//
// Why: bbolt writes, at every commit, each B+tree page the commit dirtied
// and syncs twice. A batch of 16 thread creates dirtied about 147 pages
// (each owner's index entries and counters live in their own places), and
// the committing goroutine spent half of its time in fdatasync. One log
// record and one sync per batch, and one bbolt commit per checkpoint (in
// which a page dirtied by a thousand creates is written once), take that
// off the path of every write.

// bucket is a bbolt bucket: the base table, the expiry times, or one
// secondary index.
type bucket struct {
	id   int // its slot in a memory table
	name []byte
}

var (
	baseBucket   = &bucket{id: 0, name: []byte("items")}
	expiryBucket = &bucket{id: 1, name: []byte("expiry")}
	// buckets are all the buckets, by id.
	buckets = append([]*bucket{baseBucket, expiryBucket}, indexBuckets()...)
)

func indexBuckets() []*bucket {
	out := make([]*bucket, len(store.IndexNames))
	for i, n := range store.IndexNames {
		out[i] = &bucket{id: 2 + i, name: []byte(n)}
	}
	return out
}

// indexBucket is the bucket of the index called name.
func indexBucket(name string) (*bucket, error) {
	for _, b := range buckets[2:] {
		if string(b.name) == name {
			return b, nil
		}
	}
	return nil, errors.New("boltstore: unknown index " + name)
}

// bucketNamed is the bucket called name (the log records buckets by name).
func bucketNamed(name []byte) (*bucket, bool) {
	for _, b := range buckets {
		if bytes.Equal(b.name, name) {
			return b, true
		}
	}
	return nil, false
}

// memEntry is a key's latest write in a memory table: a value, or a
// deletion that hides what older layers hold.
type memEntry struct {
	key []byte
	val []byte
	del bool
}

func lessEntry(a, b memEntry) bool { return bytes.Compare(a.key, b.key) < 0 }

// memEntryOverhead counts a memory-table entry's tree slot and headers.
const memEntryOverhead = 64

// memtable holds writes in key order, one tree per bucket. Its entries are
// never changed once in it (a newer write replaces the entry), so what a
// read returns stays valid. Only the committing goroutine writes to a
// table, and only under layers.mu when readers can see the table.
type memtable struct {
	trees []*btree.BTreeG[memEntry] // by bucket id; nil until written
	bytes int                       // what its entries take, roughly; 0 when empty
}

func newMemtable() *memtable {
	return &memtable{trees: make([]*btree.BTreeG[memEntry], len(buckets))}
}

func (m *memtable) tree(b *bucket) *btree.BTreeG[memEntry] {
	t := m.trees[b.id]
	if t == nil {
		t = btree.NewBTreeGOptions(lessEntry, btree.Options{NoLocks: true})
		m.trees[b.id] = t
	}
	return t
}

func (m *memtable) set(b *bucket, e memEntry) {
	prev, replaced := m.tree(b).Set(e)
	if replaced {
		m.bytes -= len(prev.key) + len(prev.val) + memEntryOverhead
	}
	m.bytes += len(e.key) + len(e.val) + memEntryOverhead
}

// get returns b's entry for k in this table.
func (m *memtable) get(b *bucket, k []byte) (memEntry, bool) {
	if m == nil {
		return memEntry{}, false
	}
	t := m.trees[b.id]
	if t == nil {
		return memEntry{}, false
	}
	return t.Get(memEntry{key: k})
}

// merge adds every entry of o to m, o's replacing m's.
func (m *memtable) merge(o *memtable) {
	for _, b := range buckets {
		t := o.trees[b.id]
		if t == nil {
			continue
		}
		t.Scan(func(e memEntry) bool {
			m.set(b, e)
			return true
		})
	}
}

func (m *memtable) empty() bool { return m == nil || m.bytes == 0 }

// layers are the memory tables that readers see over the bbolt file. The
// committing goroutine replaces or extends them under mu; a reader holds
// mu shared from before its bbolt read transaction begins until it is
// done, so a frozen table is never dropped between the moment a reader
// sees it missing and the moment the reader's bbolt snapshot is taken.
type layers struct {
	mu     sync.RWMutex
	active *memtable
	frozen *memtable // nil when no checkpoint is under way
}

// view reads through the layers: its own writes (a write transaction's),
// then the memory tables, newest first, then a bbolt read transaction.
type view struct {
	own    *memtable // nil for readers
	active *memtable
	frozen *memtable
	tx     *bolt.Tx
}

// get returns b's value of k; nil when there is none. The value must not
// be changed; it stays valid after the view.
func (v *view) get(b *bucket, k []byte) ([]byte, error) {
	val, inBolt, err := v.peek(b, k)
	if inBolt {
		val = bytes.Clone(val) // bbolt's memory is valid only in its transaction
	}
	return val, err
}

// peek is get for a caller done with the value before the view ends:
// a value from bbolt (inBolt) is not copied.
func (v *view) peek(b *bucket, k []byte) (val []byte, inBolt bool, err error) {
	for _, m := range [3]*memtable{v.own, v.active, v.frozen} {
		if e, ok := m.get(b, k); ok {
			if e.del {
				return nil, false, nil
			}
			return e.val, false, nil
		}
	}
	bk := v.tx.Bucket(b.name)
	if bk == nil {
		return nil, false, errors.New("boltstore: missing bucket " + string(b.name))
	}
	val = bk.Get(k)
	return val, val != nil, nil
}

// txn is a write transaction: its writes collect in its own table, which
// the committer logs and merges into the active table when it commits.
type txn struct{ view }

// A key or value bbolt would refuse must be refused here, before it is
// logged: a checkpoint cannot fail over it later.
var (
	errKeySize   = errors.New("boltstore: key empty or too long")
	errValueSize = errors.New("boltstore: value too long")
)

func (t *txn) put(b *bucket, k, v []byte) error {
	if len(k) == 0 || len(k) > bolt.MaxKeySize {
		return errKeySize
	}
	if int64(len(v)) > bolt.MaxValueSize {
		return errValueSize
	}
	if v == nil {
		v = []byte{}
	}
	t.own.set(b, memEntry{key: bytes.Clone(k), val: v})
	return nil
}

func (t *txn) del(b *bucket, k []byte) error {
	if len(k) == 0 || len(k) > bolt.MaxKeySize {
		return errKeySize
	}
	t.own.set(b, memEntry{key: bytes.Clone(k), del: true})
	return nil
}

// cursor opens a cursor over b through every layer.
func (v *view) cursor(b *bucket) (*cursor, error) {
	bk := v.tx.Bucket(b.name)
	if bk == nil {
		return nil, errors.New("boltstore: missing bucket " + string(b.name))
	}
	c := &cursor{}
	for _, m := range [3]*memtable{v.own, v.active, v.frozen} {
		if m != nil && m.trees[b.id] != nil {
			it := m.trees[b.id].Iter()
			c.srcs = append(c.srcs, &memSource{it: it})
		}
	}
	c.srcs = append(c.srcs, &boltSource{c: bk.Cursor()})
	return c, nil
}

// source is one layer's keys in order, positioned on one of them.
type source interface {
	first()
	last()
	seek(k []byte)   // the first key at or after k
	seekLT(k []byte) // the last key before k
	next()
	prev()
	// at returns the current entry; ok is false past either end. The key
	// is valid until the source moves.
	at() (e memEntry, ok bool)
	close()
}

// cursor walks one bucket through every layer, the way a bbolt cursor
// walks a bucket: each move returns the key it lands on (nil past either
// end), valid until the next move. A key's newest layer decides what it
// holds; a deleted key is skipped.
type cursor struct {
	srcs []source // newest first
	fwd  bool     // the direction of the last move
	key  []byte   // the current key (a copy)
	on   bool
}

func (c *cursor) First() []byte {
	for _, s := range c.srcs {
		s.first()
	}
	c.fwd = true
	return c.settle()
}

func (c *cursor) Last() []byte {
	for _, s := range c.srcs {
		s.last()
	}
	c.fwd = false
	return c.settle()
}

// Seek moves to the first key at or after k.
func (c *cursor) Seek(k []byte) []byte {
	for _, s := range c.srcs {
		s.seek(k)
	}
	c.fwd = true
	return c.settle()
}

func (c *cursor) Next() []byte {
	if !c.on {
		return nil
	}
	if !c.fwd {
		// Turn around: every layer to its first key after the current.
		for _, s := range c.srcs {
			s.seek(c.key)
		}
		c.fwd = true
	}
	c.skip(c.key)
	return c.settle()
}

func (c *cursor) Prev() []byte {
	if !c.on {
		return nil
	}
	if c.fwd {
		for _, s := range c.srcs {
			s.seekLT(c.key)
		}
		c.fwd = false
		return c.settle()
	}
	c.skip(c.key)
	return c.settle()
}

// skip moves every layer that stands on k one step on.
func (c *cursor) skip(k []byte) {
	for _, s := range c.srcs {
		if e, ok := s.at(); ok && bytes.Equal(e.key, k) {
			if c.fwd {
				s.next()
			} else {
				s.prev()
			}
		}
	}
}

// settle picks the nearest key in the direction of travel over all
// layers (the newest layer's entry when several hold it), skipping
// deleted keys.
func (c *cursor) settle() []byte {
	for {
		best := -1
		var be memEntry
		for i, s := range c.srcs {
			e, ok := s.at()
			if !ok {
				continue
			}
			if best < 0 {
				best, be = i, e
				continue
			}
			d := bytes.Compare(e.key, be.key)
			if (c.fwd && d < 0) || (!c.fwd && d > 0) {
				best, be = i, e
			}
		}
		if best < 0 {
			c.on = false
			c.key = c.key[:0]
			return nil
		}
		c.key = append(c.key[:0], be.key...)
		if !be.del {
			c.on = true
			return c.key
		}
		c.skip(c.key)
	}
}

// Close releases the layers' iterators.
func (c *cursor) Close() {
	for _, s := range c.srcs {
		s.close()
	}
}

type memSource struct {
	it btree.IterG[memEntry]
	ok bool
}

func (m *memSource) first()        { m.ok = m.it.First() }
func (m *memSource) last()         { m.ok = m.it.Last() }
func (m *memSource) seek(k []byte) { m.ok = m.it.Seek(memEntry{key: k}) }
func (m *memSource) next()         { m.ok = m.ok && m.it.Next() }
func (m *memSource) prev()         { m.ok = m.ok && m.it.Prev() }
func (m *memSource) close()        { m.it.Release() }
func (m *memSource) seekLT(k []byte) {
	if m.it.Seek(memEntry{key: k}) {
		m.ok = m.it.Prev()
	} else {
		m.ok = m.it.Last()
	}
}

func (m *memSource) at() (memEntry, bool) {
	if !m.ok {
		return memEntry{}, false
	}
	return m.it.Item(), true
}

type boltSource struct {
	c *bolt.Cursor
	k []byte
}

func (b *boltSource) first()        { b.k, _ = b.c.First() }
func (b *boltSource) last()         { b.k, _ = b.c.Last() }
func (b *boltSource) seek(k []byte) { b.k, _ = b.c.Seek(k) }
func (b *boltSource) next() {
	if b.k != nil {
		b.k, _ = b.c.Next()
	}
}
func (b *boltSource) prev() {
	if b.k != nil {
		b.k, _ = b.c.Prev()
	}
}
func (b *boltSource) close() {}
func (b *boltSource) seekLT(k []byte) {
	if b.k, _ = b.c.Seek(k); b.k == nil {
		b.k, _ = b.c.Last()
	} else {
		b.k, _ = b.c.Prev()
	}
}

func (b *boltSource) at() (memEntry, bool) {
	if b.k == nil {
		return memEntry{}, false
	}
	return memEntry{key: b.k}, true
}
