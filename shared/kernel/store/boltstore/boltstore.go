// Package boltstore is the embedded adapter of the store port: bbolt,
// behind a write-ahead log and memory tables (engine.go, wal.go,
// checkpoint.go).
//
// Layout: one bucket for the base table, one per secondary index and one of
// expiry times. Keys are order-preserving, prefix-free encodings of
// (pk, sk) — in an index bucket (index pk, index sk, pk, sk); in the expiry
// bucket (expiry, pk, sk) — so bbolt's byte order is the port's string
// order, and no key of one partition can run into another's whatever bytes
// the strings hold. Index and expiry entries are written in the same
// transaction as their item. Expired items are invisible at once; a
// background sweep removes them physically.
package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	bolt "go.etcd.io/bbolt"
)

// pageSize is the page of a query whose Limit is 0.
const pageSize = 100

// sweepEvery is how often expired items are physically removed.
const sweepEvery = time.Minute

// Store is the embedded store.Store.
type Store struct {
	db     *bolt.DB
	layers layers // the memory tables over db (engine.go)
	stop   chan struct{}
	done   sync.WaitGroup
	once   sync.Once
	// commits groups concurrent writes into shared transactions, logs
	// them and checkpoints them into bbolt (commit.go, checkpoint.go).
	commits committer
	cache   *readCache // nil: off (cache.go)
}

// CommitStats count a store's commits since it was opened: how many
// writes share a transaction, and how many bytes each appends to the
// write-ahead log before its one fsync.
type CommitStats struct {
	Commits     int64 // transactions committed
	Writes      int64 // write calls (Put, Update, Delete, Transact) that shared them, failed conditions among them
	Bytes       int64 // bytes of their log records
	Checkpoints int64 // memory tables written into bbolt
}

// CommitStats returns the counts so far.
func (s *Store) CommitStats() CommitStats {
	st := &s.commits.stats
	return CommitStats{Commits: st.commits.Load(), Writes: st.writes.Load(), Bytes: st.bytes.Load(), Checkpoints: st.checkpoints.Load()}
}

// Options tune a store.
type Options struct {
	// CacheBytes is the size of the read cache: 0 means
	// DefaultCacheBytes, a negative value turns it off.
	CacheBytes int64
	// freezeBytes and freezeAge replace defaultFreezeBytes and
	// defaultFreezeAge when positive (tests: many checkpoints).
	freezeBytes int
	freezeAge   time.Duration
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, with the
// default options.
func Open(path string) (*Store, error) { return OpenWith(path, Options{}) }

// OpenWith opens (creating if needed) the database file at path, and its
// write-ahead log, the folder path + ".wal". What the log holds is
// written into the file before the store serves anything.
func OpenWith(path string, o Options) (*Store, error) {
	// The free list is not written at every commit (it is rebuilt by a
	// scan when the file is opened). The hash map form allocates in
	// constant time. etcd runs bbolt the same way.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	w, err := openLog(db, path+".wal")
	if err != nil {
		db.Close()
		return nil, err
	}
	size := o.CacheBytes
	if size == 0 {
		size = DefaultCacheBytes
	}
	s := &Store{db: db, stop: make(chan struct{}), cache: newReadCache(size)}
	s.layers.active = newMemtable()
	s.commits.start(db, s.cache, &s.layers, w, o)
	s.done.Add(1)
	go s.sweep()
	return s, nil
}

// openLog creates the buckets, replays the log folder dir into db (bbolt's
// lock on the file is held, so no other process is using the log) and
// starts its next segment.
func openLog(db *bolt.DB, dir string) (*wal, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists(b.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	next, err := replayLog(db, dir)
	if err != nil {
		return nil, fmt.Errorf("boltstore: replaying the write-ahead log %s: %w", dir, err)
	}
	return openWAL(dir, next)
}

// Close stops the sweep, checkpoints what the memory tables hold and
// closes the database.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		err = s.commits.stop()
	})
	s.done.Wait()
	return errors.Join(err, s.db.Close())
}

// read runs fn on a view of the layers and a bbolt read transaction
// taken together (see layers).
func (s *Store) read(fn func(*view) error) error {
	s.layers.mu.RLock()
	defer s.layers.mu.RUnlock()
	return s.db.View(func(tx *bolt.Tx) error {
		return fn(&view{active: s.layers.active, frozen: s.layers.frozen, tx: tx})
	})
}

func (s *Store) sweep() {
	defer s.done.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// A failed sweep is retried on the next tick; reads already
			// hide what it could not remove.
			_, _ = s.Purge(context.Background())
		}
	}
}

// Purge physically removes the items that have expired, and reports how
// many it removed. Expired items are invisible already; this frees space.
func (s *Store) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := s.purgeBatch(time.Now(), 500)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

func (s *Store) purgeBatch(now time.Time, max int) (int, error) {
	n := 0
	// Through the committer, like every write, so the read cache sees it.
	// Any error may follow a removal: each is dirty.
	err := s.commits.write(func(tx *txn) error {
		n = 0
		c, err := tx.cursor(expiryBucket)
		if err != nil {
			return err
		}
		limit := expiryPrefix(nanos(now) + 1)
		var due [][]byte
		for k := c.First(); k != nil && bytes.Compare(k, limit) < 0 && len(due) < max; k = c.Next() {
			due = append(due, bytes.Clone(k))
		}
		c.Close() // before the removals change the tables it walks
		for _, ek := range due {
			if len(ek) < 8 {
				return dirty{errors.New("boltstore: corrupt expiry key")}
			}
			pk, rest, ok1 := unesc(ek[8:])
			sk, _, ok2 := unesc(rest)
			if !ok1 || !ok2 {
				return dirty{errors.New("boltstore: corrupt expiry key")}
			}
			k := store.Key{PK: pk, SK: sk}
			bk := baseKey(k)
			r, found, err := loadAt(tx, bk, k)
			if err != nil {
				return dirty{err}
			}
			if found && !r.live(now) {
				if err := (change{k: k, bk: bk, old: r, found: true, del: true}).apply(tx, s.cache); err != nil {
					return err // dirty already
				}
				n++
			}
			// The removal dropped the entry; a stale one (its item was
			// rewritten) goes too.
			if err := tx.del(expiryBucket, ek); err != nil {
				return dirty{err}
			}
		}
		return nil
	})
	return n, err
}

// record is an item as stored (codec.go encodes it).
type record struct {
	I map[string][2]string `json:"i,omitempty"`
	D []byte               `json:"d,omitempty"`
	N map[string]int64     `json:"n,omitempty"`
	V int64                `json:"v"`
	E int64                `json:"e,omitempty"` // expiry, unix nanoseconds; 0 = never
}

func (r record) live(now time.Time) bool { return r.E == 0 || nanos(now) < r.E }

// nanos is t in unix nanoseconds, clamped to what an int64 holds; a time at
// or before 1970 becomes 1 so that it still counts as an expiry.
func nanos(t time.Time) int64 {
	switch {
	case t.Unix() >= math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	case t.UnixNano() <= 0:
		return 1
	}
	return t.UnixNano()
}

// esc appends s with 0x00 and 0x01 escaped, then a 0x00 terminator; the
// encoding preserves byte order and is prefix-free.
func esc(dst []byte, s string) []byte {
	// Most strings hold neither byte: they are copied whole.
	if strings.IndexByte(s, 0x00) < 0 && strings.IndexByte(s, 0x01) < 0 {
		return append(append(dst, s...), 0x00)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0x00:
			dst = append(dst, 0x01, 0x01)
		case 0x01:
			dst = append(dst, 0x01, 0x02)
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, 0x00)
}

// escOpen is esc without the terminator: the prefix of every encoded
// string that starts with s.
func escOpen(dst []byte, s string) []byte {
	out := esc(dst, s)
	return out[:len(out)-1]
}

// unesc decodes one escaped string from b and returns it and the rest.
func unesc(b []byte) (string, []byte, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case 0x00:
			return string(out), b[i+1:], true
		case 0x01:
			if i+1 >= len(b) {
				return "", nil, false
			}
			i++
			out = append(out, b[i]-1)
		default:
			out = append(out, b[i])
		}
	}
	return "", nil, false
}

func baseKey(k store.Key) []byte {
	return esc(esc(make([]byte, 0, len(k.PK)+len(k.SK)+2), k.PK), k.SK)
}

func indexKey(ik [2]string, k store.Key) []byte {
	return esc(esc(esc(esc(nil, ik[0]), ik[1]), k.PK), k.SK)
}

func expiryPrefix(e int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(e)) }

func expiryKey(e int64, k store.Key) []byte { return esc(esc(expiryPrefix(e), k.PK), k.SK) }

func toRecord(it store.Item) record {
	r := record{D: bytes.Clone(it.Data), V: it.Version}
	if len(it.Nums) > 0 {
		r.N = make(map[string]int64, len(it.Nums))
		for k, v := range it.Nums {
			r.N[k] = v
		}
	}
	for name, ik := range it.Indexes {
		if ik.PK != "" {
			if r.I == nil {
				r.I = map[string][2]string{}
			}
			r.I[name] = [2]string{ik.PK, ik.SK}
		}
	}
	if !it.ExpiresAt.IsZero() {
		r.E = nanos(it.ExpiresAt)
	}
	return r
}

func fromRecord(k store.Key, r record) store.Item {
	it := store.Item{Key: k, Data: r.D, Version: r.V}
	if r.D == nil {
		it.Data = []byte{}
	}
	if len(r.N) > 0 {
		it.Nums = r.N // every record handed here is a fresh one
	}
	if len(r.I) > 0 {
		it.Indexes = make(map[string]store.IndexKey, len(r.I))
		for name, v := range r.I {
			it.Indexes[name] = store.IndexKey{PK: v[0], SK: v[1]}
		}
	}
	if r.E != 0 {
		it.ExpiresAt = time.Unix(0, r.E).UTC()
	}
	return it
}

// loadAt reads the stored record of k (encoded as bk), live or not.
func loadAt(tx *txn, bk []byte, k store.Key) (record, bool, error) {
	v, _, err := tx.peek(baseBucket, bk) // decodeRecord copies what it keeps
	if err != nil {
		return record{}, false, err
	}
	if v == nil {
		return record{}, false, nil
	}
	r, err := decodeRecord(v)
	if err != nil {
		return record{}, false, fmt.Errorf("boltstore: item %q/%q: %w", k.PK, k.SK, err)
	}
	return r, true, nil
}

func check(c store.Condition, r record, live bool) error {
	ok := true
	switch c.Kind {
	case store.IfNotExists:
		ok = !live
	case store.IfExists:
		ok = live
	case store.IfVersion:
		ok = live && r.V == c.Version
	case store.IfNumBelow:
		var n int64
		if live {
			n = r.N[c.Num]
		}
		ok = n < c.Limit
	}
	if !ok {
		return store.ErrConditionFailed
	}
	return nil
}

// change is a planned write of one key: computed (and checked) from the
// current state before anything is written, so that a write that fails its
// condition or a limit has written nothing (see commit.go).
type change struct {
	k     store.Key
	bk    []byte // baseKey(k)
	old   record // what is stored, live or not
	found bool
	nr    record
	// ix are nr's index entries when prepared before the write (nil:
	// computed when written).
	ix  []entry
	del bool // remove the item (when found) instead of writing nr
}

// entry is a key of an index bucket.
type entry struct {
	bucket *bucket
	key    []byte
}

// stored is what a key holds when a write is planned.
type stored struct {
	r     record
	found bool // live or expired
	live  bool
}

// checked reads what p's key holds and checks p's condition on it (an
// unmet condition is store.ErrConditionFailed).
func (p prepared) checked(tx *txn, now time.Time) (stored, error) {
	r, found, err := loadAt(tx, p.bk, p.k)
	if err != nil {
		return stored{}, err
	}
	cur := stored{r: r, found: found, live: found && r.live(now)}
	return cur, check(p.cond, cur.r, cur.live)
}

// indexEntries are the index keys of a record of k.
func indexEntries(r record, k store.Key) ([]entry, error) {
	ix := make([]entry, 0, len(r.I))
	for name, v := range r.I {
		b, err := indexBucket(name)
		if err != nil {
			return nil, err
		}
		ix = append(ix, entry{bucket: b, key: indexKey(v, k)})
	}
	return ix, nil
}

// apply writes c, first dropping its key from the read cache rc. Its
// errors are the engine's own (never a condition), and leave the transaction
// half-written: they are marked dirty.
func (c change) apply(tx *txn, rc *readCache) error {
	if c.found || !c.del {
		rc.begin(c.bk)
	}
	var err error
	switch {
	case c.del && c.found:
		err = removeAt(tx, c.bk, c.k, c.old)
	case !c.del:
		err = c.write(tx)
	}
	if err != nil {
		return dirty{err}
	}
	return nil
}

// write replaces the record (old is what was stored, live or not) and its
// index and expiry entries.
func (c change) write(tx *txn) error {
	if c.found {
		if err := dropEntries(tx, c.k, c.old); err != nil {
			return err
		}
	}
	if err := tx.put(baseBucket, c.bk, encodeRecord(c.nr)); err != nil {
		return err
	}
	ix := c.ix
	if ix == nil {
		var err error
		if ix, err = indexEntries(c.nr, c.k); err != nil {
			return err
		}
	}
	for _, e := range ix {
		if err := tx.put(e.bucket, e.key, nil); err != nil {
			return err
		}
	}
	if c.nr.E != 0 {
		return tx.put(expiryBucket, expiryKey(c.nr.E, c.k), nil)
	}
	return nil
}

func dropEntries(tx *txn, k store.Key, old record) error {
	for name, v := range old.I {
		b, err := indexBucket(name)
		if err != nil {
			return err
		}
		if err := tx.del(b, indexKey(v, k)); err != nil {
			return err
		}
	}
	if old.E != 0 {
		return tx.del(expiryBucket, expiryKey(old.E, k))
	}
	return nil
}

func removeAt(tx *txn, bk []byte, k store.Key, old record) error {
	if err := dropEntries(tx, k, old); err != nil {
		return err
	}
	return tx.del(baseBucket, bk)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	c, now, err := s.record(k)
	if err != nil {
		return store.Item{}, err
	}
	// readItem copies what it returns out of the record, which stays
	// unchanged.
	it, live, err := readItem(k, c.rec, now)
	if err != nil {
		return store.Item{}, fmt.Errorf("boltstore: item %q/%q: %w", k.PK, k.SK, err)
	}
	if !live {
		return store.Item{}, store.ErrNotFound
	}
	return it, nil
}

// GetData is Get for a caller that needs only an item's data and version:
// its index keys and counters are not decoded, and the data is not copied.
// The data is shared with the read cache: the caller must not change it.
// The hot reads of the thread API use it (they re-render nothing when the
// data is unchanged).
func (s *Store) GetData(ctx context.Context, k store.Key) ([]byte, int64, error) {
	c, now, err := s.record(k)
	if err != nil {
		return nil, 0, err
	}
	h := c.head
	if h.err != nil {
		return nil, 0, fmt.Errorf("boltstore: item %q/%q: %w", k.PK, k.SK, h.err)
	}
	if !h.live(now) {
		return nil, 0, store.ErrNotFound
	}
	return h.data, h.version, nil
}

// record returns k's stored record and its head, from the read cache or
// the layers (then kept), and the time (unix nanoseconds) to judge its
// expiry by. The record is shared: never changed.
func (s *Store) record(k store.Key) (cached, int64, error) {
	if !store.ValidKey(k) {
		return cached{}, 0, fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	bk := baseKey(k)
	now := nanos(time.Now())
	c, epoch, hit := s.cache.get(bk)
	if hit {
		return c, now, nil
	}
	var rec []byte
	err := s.read(func(v *view) error {
		var err error
		rec, err = v.get(baseBucket, bk)
		return err
	})
	if err != nil {
		return cached{}, 0, err
	}
	if rec == nil {
		return cached{}, 0, store.ErrNotFound
	}
	c = newCached(rec)
	s.cache.fill(bk, c, epoch)
	return c, now, nil
}

// readLive reads k as reads return it; live is false when it is absent or
// expired at now (unix nanoseconds).
func readLive(v *view, k store.Key, now int64) (store.Item, bool, error) {
	rec, _, err := v.peek(baseBucket, baseKey(k)) // readItem copies what it keeps
	if err != nil {
		return store.Item{}, false, err
	}
	if rec == nil {
		return store.Item{}, false, nil
	}
	it, live, err := readItem(k, rec, now)
	if err != nil {
		return store.Item{}, false, fmt.Errorf("boltstore: item %q/%q: %w", k.PK, k.SK, err)
	}
	return it, live, nil
}

// prepared is an operation with what can be computed before the write
// lock, on which every commit waits: its encoded key and, for a put, the
// new record and its index entries.
type prepared struct {
	k    store.Key
	bk   []byte
	cond store.Condition
	nr   record // OpPut, version unset
	ix   []entry
}

func prepare(op store.TxOp) prepared {
	k, c := txKey(op)
	p := prepared{k: k, bk: baseKey(k), cond: c}
	if op.Kind == store.OpPut {
		p.nr = toRecord(op.Item)
		// Its index names were checked (store.CheckItem); should one be
		// unknown, the write computes the entries again and fails.
		p.ix, _ = indexEntries(p.nr, k)
	}
	return p
}

// put is the change of a prepared put over what the key holds.
func (p prepared) put(cur stored) change {
	nr := p.nr
	nr.V = 1
	if cur.live {
		nr.V = cur.r.V + 1
	}
	return change{k: p.k, bk: p.bk, old: cur.r, found: cur.found, nr: nr, ix: p.ix}
}

// del is the change of a prepared delete over what the key holds.
func (p prepared) del(cur stored) change {
	return change{k: p.k, bk: p.bk, old: cur.r, found: cur.found, del: true}
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, it store.Item, c store.Condition) (store.Item, error) {
	if err := store.CheckItem(it); err != nil {
		return store.Item{}, err
	}
	if err := store.CheckCond(c); err != nil {
		return store.Item{}, err
	}
	p := prepare(store.TxOp{Kind: store.OpPut, Item: it, Cond: c})
	var nr record
	err := s.commits.write(func(tx *txn) error {
		cur, err := p.checked(tx, time.Now())
		if err != nil {
			return err
		}
		ch := p.put(cur)
		nr = ch.nr
		return ch.apply(tx, s.cache)
	})
	if err != nil {
		return store.Item{}, err
	}
	return fromRecord(it.Key, nr), nil
}

func planUpdate(tx *txn, u store.Update, now time.Time) (change, error) {
	p := prepare(store.TxOp{Kind: store.OpUpdate, Update: u})
	cur, err := p.checked(tx, now)
	if err != nil {
		return change{}, err
	}
	return updated(cur, p.bk, u)
}

// updated is the change of u over what the key holds (its condition
// already checked).
func updated(cur stored, bk []byte, u store.Update) (change, error) {
	old, found, live := cur.r, cur.found, cur.live
	// An expired item counts as absent: the update starts from nothing.
	nr := record{V: 1}
	if live {
		nr = old
		nr.V++
		nr.N = cloneMap(old.N)
		nr.I = cloneMap(old.I)
	}
	for name, d := range u.Add {
		if nr.N == nil {
			nr.N = map[string]int64{}
		}
		nr.N[name] += d
	}
	if u.SetData != nil {
		nr.D = bytes.Clone(u.SetData)
	}
	for name, ik := range u.SetIndexes {
		if ik.PK == "" {
			delete(nr.I, name)
			continue
		}
		if nr.I == nil {
			nr.I = map[string][2]string{}
		}
		nr.I[name] = [2]string{ik.PK, ik.SK}
	}
	if u.SetExpiresAt != nil {
		nr.E = 0
		if !u.SetExpiresAt.IsZero() {
			nr.E = nanos(*u.SetExpiresAt)
		}
	}
	if store.Size(fromRecord(u.Key, nr)) > store.MaxItemSize {
		return change{}, store.ErrTooLarge
	}
	return change{k: u.Key, bk: bk, old: old, found: found, nr: nr}, nil
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, u store.Update) (store.Item, error) {
	if err := store.CheckUpdate(u); err != nil {
		return store.Item{}, err
	}
	var nr record
	err := s.commits.write(func(tx *txn) error {
		ch, err := planUpdate(tx, u, time.Now())
		if err != nil {
			return err
		}
		nr = ch.nr
		return ch.apply(tx, s.cache)
	})
	if err != nil {
		return store.Item{}, err
	}
	return fromRecord(u.Key, nr), nil
}

func planDelete(tx *txn, k store.Key, c store.Condition, now time.Time) (change, error) {
	p := prepare(store.TxOp{Kind: store.OpDelete, Key: k, Cond: c})
	cur, err := p.checked(tx, now)
	if err != nil {
		return change{}, err
	}
	return p.del(cur), nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, k store.Key, c store.Condition) error {
	if !store.ValidKey(k) {
		return fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	if err := store.CheckCond(c); err != nil {
		return err
	}
	return s.commits.write(func(tx *txn) error {
		ch, err := planDelete(tx, k, c, time.Now())
		if err != nil {
			return err
		}
		return ch.apply(tx, s.cache)
	})
}

// txKey returns the key and condition of a checked operation.
func txKey(op store.TxOp) (store.Key, store.Condition) {
	switch op.Kind {
	case store.OpPut:
		return op.Item.Key, op.Cond
	case store.OpUpdate:
		return op.Update.Key, op.Update.Cond
	}
	return op.Key, op.Cond
}

// Transact implements store.Store: every operation is checked and
// planned before any is written, so a failed transaction writes nothing.
func (s *Store) Transact(ctx context.Context, ops []store.TxOp) error {
	if err := store.CheckTx(ops); err != nil {
		return err
	}
	// Keys, records and index entries are encoded before the write lock,
	// which every commit waits on.
	preps := make([]prepared, len(ops))
	for i, op := range ops {
		preps[i] = prepare(op)
	}
	return s.commits.write(func(tx *txn) error {
		now := time.Now()
		// Every condition is checked first, so the failing one is reported
		// whatever else is wrong (operations touch distinct keys, so none
		// can change another's outcome); each key is read once.
		curs := make([]stored, len(ops))
		for i, p := range preps {
			cur, err := p.checked(tx, now)
			if errors.Is(err, store.ErrConditionFailed) {
				return &store.TxConditionError{Index: i}
			}
			if err != nil {
				return err
			}
			curs[i] = cur
		}
		changes := make([]change, 0, len(ops))
		for i, op := range ops {
			var ch change
			var err error
			switch op.Kind {
			case store.OpPut:
				ch = preps[i].put(curs[i])
			case store.OpUpdate:
				ch, err = updated(curs[i], preps[i].bk, op.Update)
			case store.OpDelete:
				ch = preps[i].del(curs[i])
			case store.OpCheck:
				continue
			}
			if err != nil {
				return err
			}
			changes = append(changes, ch)
		}
		for _, ch := range changes {
			if err := ch.apply(tx, s.cache); err != nil {
				return err
			}
		}
		return nil
	})
}

// Query implements store.Store. The cursor is the encoded bucket key of
// the last item returned; the next page starts strictly after it, so items
// inserted or deleted meanwhile cause no skip or repeat.
func (s *Store) Query(ctx context.Context, q store.Query) (store.Page, error) {
	if q.PK == "" || !store.ValidIndex(q.Index) {
		return store.Page{}, fmt.Errorf("%w: a query needs a partition key and a known index", store.ErrInvalid)
	}
	if q.Limit < 0 {
		return store.Page{}, fmt.Errorf("%w: negative limit", store.ErrInvalid)
	}
	if q.SK.Op < store.SKAny || q.SK.Op > store.SKGreaterEq {
		return store.Page{}, fmt.Errorf("%w: unknown sort-key operator %d", store.ErrInvalid, q.SK.Op)
	}
	limit := q.Limit
	if limit == 0 {
		limit = pageSize
	}
	bucket := baseBucket
	if q.Index != "" {
		var err error
		if bucket, err = indexBucket(q.Index); err != nil {
			return store.Page{}, fmt.Errorf("%w: %v", store.ErrInvalid, err)
		}
	}
	part := esc(nil, q.PK)
	var cursor []byte
	if q.Cursor != "" {
		c, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(c) <= len(part) || !bytes.HasPrefix(c, part) {
			return store.Page{}, fmt.Errorf("%w: bad cursor", store.ErrInvalid)
		}
		cursor = c
	}
	lo, hi := bounds(part, q.SK)
	nowN := nanos(time.Now())
	var page store.Page
	// One view: the index and the items it points to are read as of one
	// moment.
	err := s.read(func(v *view) error {
		c, err := v.cursor(bucket)
		if err != nil {
			return err
		}
		defer c.Close()
		k := first(c, q.Desc, cursor, lo, hi)
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, part); k = step(c, q.Desc) {
			sk, rest, ok := unesc(k[len(part):])
			if !ok {
				return errors.New("boltstore: corrupt key")
			}
			in, past := match(q.SK, sk, q.Desc)
			if past {
				break
			}
			if !in {
				continue
			}
			key := store.Key{PK: q.PK, SK: sk}
			if q.Index != "" {
				pk, rest2, ok1 := unesc(rest)
				bsk, _, ok2 := unesc(rest2)
				if !ok1 || !ok2 {
					return errors.New("boltstore: corrupt index key")
				}
				key = store.Key{PK: pk, SK: bsk}
			}
			it, live, err := readLive(v, key, nowN)
			if err != nil {
				return err
			}
			if !live {
				continue
			}
			if len(page.Items) == limit {
				// A further live item exists: hand out a cursor.
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				return nil
			}
			page.Items = append(page.Items, it)
			last = append(last[:0], k...)
		}
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	return page, nil
}

// first positions c on the first candidate key of a scan.
func first(c *cursor, desc bool, cursor, lo, hi []byte) []byte {
	var k []byte
	switch {
	case !desc && cursor != nil:
		k = c.Seek(cursor)
		if bytes.Equal(k, cursor) {
			k = c.Next()
		}
	case !desc:
		k = c.Seek(lo)
	default:
		start := hi
		if cursor != nil {
			start = cursor
		}
		// The last key before start.
		if k = c.Seek(start); k == nil {
			k = c.Last()
		} else {
			k = c.Prev()
		}
	}
	return k
}

func step(c *cursor, desc bool) []byte {
	var k []byte
	if desc {
		k = c.Prev()
	} else {
		k = c.Next()
	}
	return k
}

// after returns the smallest key greater than every key that starts with b.
// b always holds the partition's 0x00 terminator, so it is never all 0xff.
func after(b []byte) []byte {
	out := bytes.Clone(b)
	for i := len(out) - 1; i >= 0; i-- {
		if out[i] < 0xff {
			out[i]++
			return out[:i+1]
		}
	}
	return nil
}

// bounds returns where an ascending scan starts (lo) and the key before
// which a descending scan starts (hi).
func bounds(part []byte, c store.SKCond) (lo, hi []byte) {
	lo, hi = part, after(part)
	with := func(s string) []byte { return esc(bytes.Clone(part), s) }
	prefix := func(s string) []byte { return escOpen(bytes.Clone(part), s) }
	switch c.Op {
	case store.SKEqual:
		lo = with(c.A)
		hi = after(lo)
	case store.SKBeginsWith:
		lo = prefix(c.A)
		hi = after(lo)
	case store.SKBetween:
		lo = prefix(c.A)
		hi = after(with(c.B))
	case store.SKGreater, store.SKGreaterEq:
		lo = prefix(c.A)
	case store.SKLess, store.SKLessEq:
		hi = after(with(c.A))
	}
	return lo, hi
}

// match says whether sk satisfies c, and whether the scan (in its
// direction) has passed every possible match.
func match(c store.SKCond, sk string, desc bool) (in, past bool) {
	switch c.Op {
	case store.SKEqual:
		if sk == c.A {
			return true, false
		}
		return false, (!desc && sk > c.A) || (desc && sk < c.A)
	case store.SKBeginsWith:
		if len(sk) >= len(c.A) && sk[:len(c.A)] == c.A {
			return true, false
		}
		return false, (!desc && sk > c.A) || (desc && sk < c.A)
	case store.SKBetween:
		if sk < c.A {
			return false, desc
		}
		if sk > c.B {
			return false, !desc
		}
		return true, false
	case store.SKLess:
		return sk < c.A, !desc && sk >= c.A
	case store.SKLessEq:
		return sk <= c.A, !desc && sk > c.A
	case store.SKGreater:
		return sk > c.A, desc && sk <= c.A
	case store.SKGreaterEq:
		return sk >= c.A, desc && sk < c.A
	}
	return true, false // SKAny
}
