// Package boltstore is the embedded adapter of the store port, over bbolt.
//
// Layout: one bucket for the base table and one per secondary index. Keys
// are order-preserving encodings of (pk, sk) — and, in an index bucket,
// (index pk, index sk, pk, sk) — so that bbolt's byte order is the port's
// string order and no key of one partition can be a prefix of another's.
// Index entries are written in the same bbolt transaction as their item.
package boltstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentplane/agentplane/shared/store"
	bolt "go.etcd.io/bbolt"
)

var baseBucket = []byte("items")

// Store is a bbolt-backed store.Store.
type Store struct {
	db  *bolt.DB
	now func() time.Time
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(baseBucket); err != nil {
			return err
		}
		for _, n := range store.IndexNames {
			if _, err := tx.CreateBucketIfNotExists([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, now: time.Now}, nil
}

// SetClock replaces the clock (tests of TTL).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// record is the stored form of an item.
type record struct {
	I map[string][2]string `json:"i,omitempty"`
	D []byte               `json:"d,omitempty"`
	N map[string]int64     `json:"n,omitempty"`
	V int64                `json:"v"`
	E int64                `json:"e,omitempty"` // expiry, unix nanoseconds
}

// esc appends s with 0x00 and 0x01 escaped, then a 0x00 terminator; the
// encoding preserves byte order and is prefix-free.
func esc(dst []byte, s string) []byte {
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

// escOpen is esc without the terminator (for prefix seeks).
func escOpen(dst []byte, s string) []byte {
	out := esc(dst, s)
	return out[:len(out)-1]
}

// unesc decodes one escaped string from b and returns it and the rest.
func unesc(b []byte) (string, []byte, bool) {
	var out []byte
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

func baseKey(k store.Key) []byte { return esc(esc(nil, k.PK), k.SK) }

func indexKey(ik store.IndexKey, k store.Key) []byte {
	return esc(esc(esc(esc(nil, ik.PK), ik.SK), k.PK), k.SK)
}

func toRecord(it store.Item) record {
	r := record{D: it.Data, V: it.Version}
	if len(it.Nums) > 0 {
		r.N = it.Nums
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
		r.E = it.ExpiresAt.UnixNano()
	}
	return r
}

func fromRecord(k store.Key, r record) store.Item {
	it := store.Item{Key: k, Data: r.D, Version: r.V}
	if r.D == nil {
		it.Data = []byte{}
	}
	if len(r.N) > 0 {
		it.Nums = r.N
	}
	if len(r.I) > 0 {
		it.Indexes = map[string]store.IndexKey{}
		for name, v := range r.I {
			it.Indexes[name] = store.IndexKey{PK: v[0], SK: v[1]}
		}
	}
	if r.E != 0 {
		it.ExpiresAt = time.Unix(0, r.E).UTC()
	}
	return it
}

func (s *Store) live(r record) bool { return r.E == 0 || s.now().UnixNano() < r.E }

// load reads the live record of k in tx.
func (s *Store) load(tx *bolt.Tx, k store.Key) (record, bool, error) {
	v := tx.Bucket(baseBucket).Get(baseKey(k))
	if v == nil {
		return record{}, false, nil
	}
	var r record
	if err := json.Unmarshal(v, &r); err != nil {
		return record{}, false, fmt.Errorf("boltstore: corrupt item %q/%q: %w", k.PK, k.SK, err)
	}
	if !s.live(r) {
		return r, false, nil
	}
	return r, true, nil
}

func check(c store.Condition, r record, exists bool) error {
	switch c.Kind {
	case store.Always:
		return nil
	case store.IfNotExists:
		if exists {
			return store.ErrConditionFailed
		}
	case store.IfExists:
		if !exists {
			return store.ErrConditionFailed
		}
	case store.IfVersion:
		if !exists || r.V != c.Version {
			return store.ErrConditionFailed
		}
	case store.IfNumBelow:
		var n int64
		if exists {
			n = r.N[c.Num]
		}
		if n >= c.Limit {
			return store.ErrConditionFailed
		}
	default:
		return fmt.Errorf("%w: unknown condition kind %d", store.ErrInvalid, c.Kind)
	}
	return nil
}

// write replaces k's record (old may be a dead or absent record) and its
// index entries.
func write(tx *bolt.Tx, k store.Key, old record, hadOld bool, nr record) error {
	if hadOld {
		for name, v := range old.I {
			if err := tx.Bucket([]byte(name)).Delete(indexKey(store.IndexKey{PK: v[0], SK: v[1]}, k)); err != nil {
				return err
			}
		}
	}
	b, err := json.Marshal(nr)
	if err != nil {
		return err
	}
	if err := tx.Bucket(baseBucket).Put(baseKey(k), b); err != nil {
		return err
	}
	for name, v := range nr.I {
		if err := tx.Bucket([]byte(name)).Put(indexKey(store.IndexKey{PK: v[0], SK: v[1]}, k), nil); err != nil {
			return err
		}
	}
	return nil
}

func remove(tx *bolt.Tx, k store.Key, old record) error {
	for name, v := range old.I {
		if err := tx.Bucket([]byte(name)).Delete(indexKey(store.IndexKey{PK: v[0], SK: v[1]}, k)); err != nil {
			return err
		}
	}
	return tx.Bucket(baseBucket).Delete(baseKey(k))
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if !store.ValidKey(k) {
		return store.Item{}, fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	var it store.Item
	err := s.db.View(func(tx *bolt.Tx) error {
		r, ok, err := s.load(tx, k)
		if err != nil {
			return err
		}
		if !ok {
			return store.ErrNotFound
		}
		it = fromRecord(k, r)
		return nil
	})
	return it, err
}

func (s *Store) putTx(tx *bolt.Tx, it store.Item, c store.Condition) (record, error) {
	old, exists, err := s.load(tx, it.Key)
	if err != nil {
		return record{}, err
	}
	if err := check(c, old, exists); err != nil {
		return record{}, err
	}
	nr := toRecord(it)
	nr.V = 1
	if exists {
		nr.V = old.V + 1
	}
	return nr, write(tx, it.Key, old, old.V != 0 || old.I != nil, nr)
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, it store.Item, c store.Condition) (store.Item, error) {
	if err := store.CheckItem(it); err != nil {
		return store.Item{}, err
	}
	var out store.Item
	err := s.db.Update(func(tx *bolt.Tx) error {
		nr, err := s.putTx(tx, it, c)
		out = fromRecord(it.Key, nr)
		return err
	})
	if err != nil {
		return store.Item{}, err
	}
	return out, nil
}

func (s *Store) updateTx(tx *bolt.Tx, u store.Update) (record, error) {
	old, exists, err := s.load(tx, u.Key)
	if err != nil {
		return record{}, err
	}
	if err := check(u.Cond, old, exists); err != nil {
		return record{}, err
	}
	var nr record
	if exists {
		nr = old
		nr.N = cloneNums(old.N)
		nr.I = cloneIdx(old.I)
	}
	nr.V++
	if !exists {
		nr.V = 1
	}
	for name, d := range u.Add {
		if nr.N == nil {
			nr.N = map[string]int64{}
		}
		nr.N[name] += d
	}
	if u.SetData != nil {
		nr.D = u.SetData
	}
	for name, ik := range u.SetIndexes {
		if name == "" || !store.ValidIndex(name) {
			return record{}, fmt.Errorf("%w: unknown index %q", store.ErrInvalid, name)
		}
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
			nr.E = u.SetExpiresAt.UnixNano()
		}
	}
	if store.Size(fromRecord(u.Key, nr)) > store.MaxItemSize {
		return record{}, store.ErrTooLarge
	}
	return nr, write(tx, u.Key, old, old.V != 0 || old.I != nil, nr)
}

func cloneNums(m map[string]int64) map[string]int64 {
	if m == nil {
		return nil
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneIdx(m map[string][2]string) map[string][2]string {
	if m == nil {
		return nil
	}
	out := make(map[string][2]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, u store.Update) (store.Item, error) {
	if !store.ValidKey(u.Key) {
		return store.Item{}, fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	var out store.Item
	err := s.db.Update(func(tx *bolt.Tx) error {
		nr, err := s.updateTx(tx, u)
		out = fromRecord(u.Key, nr)
		return err
	})
	if err != nil {
		return store.Item{}, err
	}
	return out, nil
}

func (s *Store) deleteTx(tx *bolt.Tx, k store.Key, c store.Condition) error {
	old, exists, err := s.load(tx, k)
	if err != nil {
		return err
	}
	if err := check(c, old, exists); err != nil {
		return err
	}
	if old.V == 0 && old.I == nil && !exists {
		return nil
	}
	return remove(tx, k, old)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, k store.Key, c store.Condition) error {
	if !store.ValidKey(k) {
		return fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return s.deleteTx(tx, k, c) })
}

// Transact implements store.Store.
func (s *Store) Transact(ctx context.Context, ops []store.TxOp) error {
	if err := store.CheckTx(ops); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		// Check every condition before any write, so a failure reports the
		// first failing operation and bbolt rolls back nothing partial.
		for i, op := range ops {
			var k store.Key
			c := op.Cond
			switch op.Kind {
			case store.OpPut:
				k = op.Item.Key
			case store.OpUpdate:
				k, c = op.Update.Key, op.Update.Cond
			default:
				k = op.Key
			}
			r, exists, err := s.load(tx, k)
			if err != nil {
				return err
			}
			if err := check(c, r, exists); err != nil {
				if errors.Is(err, store.ErrConditionFailed) {
					return &store.TxConditionError{Index: i}
				}
				return err
			}
		}
		for _, op := range ops {
			var err error
			switch op.Kind {
			case store.OpPut:
				_, err = s.putTx(tx, op.Item, store.Condition{})
			case store.OpUpdate:
				u := op.Update
				u.Cond = store.Condition{}
				_, err = s.updateTx(tx, u)
			case store.OpDelete:
				err = s.deleteTx(tx, op.Key, store.Condition{})
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Query implements store.Store.
func (s *Store) Query(ctx context.Context, q store.Query) (store.Page, error) {
	if q.PK == "" || !store.ValidIndex(q.Index) {
		return store.Page{}, fmt.Errorf("%w: query needs a partition key and a known index", store.ErrInvalid)
	}
	if q.Limit < 0 {
		return store.Page{}, fmt.Errorf("%w: negative limit", store.ErrInvalid)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	bucket := baseBucket
	if q.Index != "" {
		bucket = []byte(q.Index)
	}
	part := esc(nil, q.PK)
	var cursor []byte
	if q.Cursor != "" {
		c, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || !bytes.HasPrefix(c, part) {
			return store.Page{}, fmt.Errorf("%w: bad cursor", store.ErrInvalid)
		}
		cursor = c
	}
	var page store.Page
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		lo, hi := bounds(part, q.SK)
		var k []byte
		// Position on the first candidate.
		switch {
		case !q.Desc && cursor != nil:
			k, _ = c.Seek(cursor)
			if bytes.Equal(k, cursor) {
				k, _ = c.Next()
			}
		case !q.Desc:
			k, _ = c.Seek(lo)
		default:
			start := hi
			if cursor != nil {
				start = cursor
			}
			k, _ = c.Seek(start)
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, part); k = step(c, q.Desc) {
			sk, rest, ok := unesc(k[len(part):])
			if !ok {
				return fmt.Errorf("boltstore: corrupt key")
			}
			in, past := match(q.SK, sk, q.Desc)
			if past {
				break
			}
			if !in {
				continue
			}
			if len(page.Items) == limit {
				// There is at least one more item: hand out a cursor.
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				return nil
			}
			key := store.Key{PK: q.PK, SK: sk}
			if q.Index != "" {
				pk, rest2, ok1 := unesc(rest)
				bsk, _, ok2 := unesc(rest2)
				if !ok1 || !ok2 {
					return fmt.Errorf("boltstore: corrupt index key")
				}
				key = store.Key{PK: pk, SK: bsk}
			}
			r, live, err := s.load(tx, key)
			if err != nil {
				return err
			}
			if !live {
				continue
			}
			page.Items = append(page.Items, fromRecord(key, r))
			last = append([]byte(nil), k...)
		}
		return nil
	})
	if err != nil {
		return store.Page{}, err
	}
	return page, nil
}

func step(c *bolt.Cursor, desc bool) []byte {
	var k []byte
	if desc {
		k, _ = c.Prev()
	} else {
		k, _ = c.Next()
	}
	return k
}

// bounds returns where an ascending scan starts (lo) and the key a
// descending scan seeks to (hi: the first key after the range).
func bounds(part []byte, c store.SKCond) (lo, hi []byte) {
	after := func(b []byte) []byte {
		// The smallest key greater than every key that starts with b.
		out := append([]byte(nil), b...)
		for i := len(out) - 1; i >= 0; i-- {
			if out[i] < 0xff {
				out[i]++
				return out[:i+1]
			}
		}
		return nil
	}
	p := append([]byte(nil), part...)
	lo, hi = p, after(p)
	switch c.Op {
	case store.SKEqual:
		lo = esc(append([]byte(nil), p...), c.A)
		hi = after(lo)
	case store.SKBeginsWith:
		lo = escOpen(append([]byte(nil), p...), c.A)
		hi = after(lo)
	case store.SKBetween:
		lo = escOpen(append([]byte(nil), p...), c.A)
		hi = after(esc(append([]byte(nil), p...), c.B))
	case store.SKGreater, store.SKGreaterEq:
		lo = escOpen(append([]byte(nil), p...), c.A)
	case store.SKLess, store.SKLessEq:
		hi = after(esc(append([]byte(nil), p...), c.A))
	}
	if hi == nil {
		hi = []byte{0xff, 0xff, 0xff, 0xff}
	}
	return lo, hi
}

// match says whether sk satisfies c, and whether the scan (in its
// direction) has passed every possible match.
func match(c store.SKCond, sk string, desc bool) (in, past bool) {
	switch c.Op {
	case store.SKAny:
		return true, false
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
		if sk < c.A {
			return true, false
		}
		return false, !desc
	case store.SKLessEq:
		if sk <= c.A {
			return true, false
		}
		return false, !desc
	case store.SKGreater:
		if sk > c.A {
			return true, false
		}
		return false, desc
	case store.SKGreaterEq:
		if sk >= c.A {
			return true, false
		}
		return false, desc
	}
	return false, true
}
