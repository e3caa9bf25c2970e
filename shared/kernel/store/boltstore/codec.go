package boltstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Records are stored in a compact binary form (a JSON decode cost several
// times more per read). A record written by an earlier version as JSON
// starts with '{' and is still read.
//
//	0x01 | varint V | varint E | bytes D | uvarint n, n × (string name, varint value)
//	     | uvarint n, n × (string index, string pk, string sk)
//
// where bytes and string are a uvarint length and the bytes.
const formatBinary = 0x01

var errCorrupt = errors.New("corrupt record")

func encodeRecord(r record) []byte {
	n := 1 + 3*binary.MaxVarintLen64 + len(r.D)
	for k := range r.N {
		n += 2*binary.MaxVarintLen64 + len(k)
	}
	for k, v := range r.I {
		n += 3*binary.MaxVarintLen64 + len(k) + len(v[0]) + len(v[1])
	}
	b := make([]byte, 0, n)
	b = append(b, formatBinary)
	b = binary.AppendVarint(b, r.V)
	b = binary.AppendVarint(b, r.E)
	b = appendBytes(b, r.D)
	b = binary.AppendUvarint(b, uint64(len(r.N)))
	for _, k := range sortedNames(r.N) {
		b = appendBytes(b, []byte(k))
		b = binary.AppendVarint(b, r.N[k])
	}
	b = binary.AppendUvarint(b, uint64(len(r.I)))
	for _, k := range sortedNames(r.I) {
		b = appendBytes(b, []byte(k))
		b = appendBytes(b, []byte(r.I[k][0]))
		b = appendBytes(b, []byte(r.I[k][1]))
	}
	return b
}

// sortedNames makes the encoding deterministic.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func appendBytes(b, s []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errCorrupt, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errCorrupt, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns a copy: bbolt's memory is only valid inside its transaction.
func (r *reader) bytes() []byte {
	b := r.raw()
	if r.err != nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

func (r *reader) str() string { return string(r.raw()) }

func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) { // every entry takes at least one byte
		r.err, r.b = errCorrupt, nil
		return 0
	}
	return int(n)
}

func decodeRecord(b []byte) (record, error) {
	var rec record
	if len(b) > 0 && b[0] == '{' {
		err := json.Unmarshal(b, &rec)
		return rec, err
	}
	if len(b) == 0 || b[0] != formatBinary {
		return rec, errCorrupt
	}
	r := &reader{b: b[1:]}
	rec.V = r.varint()
	rec.E = r.varint()
	if d := r.bytes(); len(d) > 0 {
		rec.D = d
	}
	if n := r.count(); n > 0 {
		rec.N = make(map[string]int64, n)
		for i := 0; i < n && r.err == nil; i++ {
			k := r.str()
			rec.N[k] = r.varint()
		}
	}
	if n := r.count(); n > 0 {
		rec.I = make(map[string][2]string, n)
		for i := 0; i < n && r.err == nil; i++ {
			k, pk := r.str(), r.str()
			rec.I[k] = [2]string{pk, r.str()}
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errCorrupt
	}
	return rec, r.err
}

// indexName returns the name of a known index without allocating.
func indexName(b []byte) string {
	for _, n := range store.IndexNames {
		if string(b) == n {
			return n
		}
	}
	return string(b)
}

// readItem decodes a stored record straight into the item a read returns
// (reads are most of the traffic: one map and two allocations for the
// strings, where decodeRecord and fromRecord build two maps and a string
// each), and reports whether it is live at now (unix nanoseconds).
func readItem(k store.Key, b []byte, now int64) (store.Item, bool, error) {
	return decodeItem(k, b, now, true)
}

// recordHead is what GetData needs of a record: its data (a part of the
// record, not a copy: GetData's records are never changed), version and
// expiry (unix nanoseconds, 0: none), or the error that makes the record
// unreadable. parseHead walks over the counters and index keys without
// building them, so it fails exactly where readItem fails.
type recordHead struct {
	data    []byte
	version int64
	expires int64
	err     error
}

func parseHead(b []byte) recordHead {
	it, _, err := decodeItem(store.Key{}, b, 0, false)
	if err != nil {
		return recordHead{err: err}
	}
	h := recordHead{data: it.Data, version: it.Version}
	if !it.ExpiresAt.IsZero() {
		h.expires = it.ExpiresAt.UnixNano()
	}
	return h
}

func (h recordHead) live(now int64) bool { return h.expires == 0 || now < h.expires }

// decodeItem is readItem; without full, the item's Nums and Indexes stay
// empty and its Data is a part of b.
func decodeItem(k store.Key, b []byte, now int64, full bool) (store.Item, bool, error) {
	if len(b) == 0 || b[0] != formatBinary {
		r, err := decodeRecord(b)
		return fromRecord(k, r), err == nil && (r.E == 0 || now < r.E), err
	}
	r := &reader{b: b[1:]}
	it := store.Item{Key: k, Version: r.varint()}
	e := r.varint()
	if e != 0 {
		it.ExpiresAt = time.Unix(0, e).UTC()
	}
	if full {
		it.Data = r.bytes()
	} else {
		it.Data = r.raw()
	}
	if it.Data == nil && r.err == nil {
		it.Data = []byte{}
	}
	if n := r.count(); n > 0 {
		if full {
			it.Nums = make(map[string]int64, n)
		}
		for i := 0; i < n && r.err == nil; i++ {
			name, v := r.raw(), r.varint()
			if full {
				it.Nums[string(name)] = v
			}
		}
	}
	if n := r.count(); n > 0 && r.err == nil {
		// The index keys' strings share one allocation.
		var all string
		if full {
			all = string(r.b)
			it.Indexes = make(map[string]store.IndexKey, n)
		}
		for i := 0; i < n && r.err == nil; i++ {
			name := r.raw()
			if !full {
				r.raw()
				r.raw()
				continue
			}
			pk, sk := r.sub(all), r.sub(all)
			it.Indexes[indexName(name)] = store.IndexKey{PK: pk, SK: sk}
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errCorrupt
	}
	if r.err != nil {
		return store.Item{}, false, r.err
	}
	return it, e == 0 || now < e, nil
}

// raw returns the next string's bytes without copying them.
func (r *reader) raw() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errCorrupt, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// sub returns the next string as a substring of all, which holds the
// reader's remaining bytes as they were when all was made.
func (r *reader) sub(all string) string {
	b := r.raw()
	if r.err != nil {
		return ""
	}
	end := len(all) - len(r.b) // just past the string
	return all[end-len(b) : end]
}
