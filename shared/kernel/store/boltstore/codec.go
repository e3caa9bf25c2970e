package boltstore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
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
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errCorrupt, nil
		return nil
	}
	out := make([]byte, n)
	copy(out, r.b)
	r.b = r.b[n:]
	return out
}

func (r *reader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errCorrupt, nil
		return ""
	}
	out := string(r.b[:n])
	r.b = r.b[n:]
	return out
}

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
