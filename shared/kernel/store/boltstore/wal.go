package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The write-ahead log: what each commit wrote, appended and synced before
// the commit is acknowledged. It is a folder of segments (wal/<n>), one
// per memory table: when a table is frozen the committer starts a new
// segment, and a checkpoint removes the frozen table's segment once bbolt
// holds its writes durably. On open, the segments left (a crash, or a
// checkpoint that had not finished) are replayed into bbolt, oldest first.
// A record holds the resulting values of the keys it wrote (puts and
// deletions, never increments), so replaying a segment that had already
// been checkpointed writes what bbolt holds already, and replaying the
// newer segments after it brings every key to its last value.
//
// A record: length (4 bytes), CRC-32C of the body (4 bytes), body. The
// body is a list of writes: kind (1 put, 2 delete), then the bucket's
// name, the key and, for a put, the value, each as a length (uvarint) and
// bytes. A crash can leave the last record of the last segment torn; its
// writer was never told it had committed, and replay stops before it.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const (
	opPut = 1
	opDel = 2
	// walHeader is a record's length and checksum.
	walHeader = 8
)

// errCorruptLog stops an open: a record that is not the last one fails
// its checksum, so what the log holds after it cannot be trusted.
var errCorruptLog = errors.New("boltstore: the write-ahead log is corrupt")

// appendLogRecord appends m's writes, as a log record, to dst.
func appendLogRecord(dst []byte, m *memtable) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, walHeader)...)
	for _, b := range buckets {
		t := m.trees[b.id]
		if t == nil {
			continue
		}
		t.Scan(func(e memEntry) bool {
			kind := byte(opPut)
			if e.del {
				kind = opDel
			}
			dst = append(dst, kind)
			dst = binary.AppendUvarint(dst, uint64(len(b.name)))
			dst = append(dst, b.name...)
			dst = binary.AppendUvarint(dst, uint64(len(e.key)))
			dst = append(dst, e.key...)
			if !e.del {
				dst = binary.AppendUvarint(dst, uint64(len(e.val)))
				dst = append(dst, e.val...)
			}
			return true
		})
	}
	body := dst[start+walHeader:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(body)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(body, castagnoli))
	return dst
}

// decodeLogRecord puts the writes of a record's body into m, each
// replacing what m held for its key.
func decodeLogRecord(body []byte, m *memtable) error {
	field := func() ([]byte, bool) {
		n, w := binary.Uvarint(body)
		if w <= 0 || n > uint64(len(body)-w) {
			return nil, false
		}
		f := body[w : w+int(n)]
		body = body[w+int(n):]
		return f, true
	}
	for len(body) > 0 {
		kind := body[0]
		body = body[1:]
		name, ok1 := field()
		key, ok2 := field()
		if !ok1 || !ok2 || (kind != opPut && kind != opDel) {
			return errCorruptLog
		}
		b, ok := bucketNamed(name)
		if !ok {
			return fmt.Errorf("%w: unknown bucket %q", errCorruptLog, name)
		}
		e := memEntry{key: key, del: kind == opDel}
		if !e.del {
			if e.val, ok = field(); !ok {
				return errCorruptLog
			}
		}
		m.set(b, e)
	}
	return nil
}

// wal is the log's folder and its current segment, appended to by the
// committing goroutine alone.
type wal struct {
	dir  string
	seq  uint64 // the current segment's number
	f    *os.File
	size int64
	buf  []byte
	// broken is set when a failed append could not be undone.
	broken error
	noSync bool // benchmarks of the store's own cost only
}

func segmentPath(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016d", seq))
}

// segments lists the log's segment numbers, oldest first.
func segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || e.IsDir() {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			return nil, fmt.Errorf("boltstore: unexpected file %q in the log folder", e.Name())
		}
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// replayLog writes the log's segments into db, oldest first, in one
// durable transaction, and removes them. It returns the number the next
// segment should take.
func replayLog(db *bolt.DB, dir string) (uint64, error) {
	seqs, err := segments(dir)
	if err != nil {
		return 0, err
	}
	if len(seqs) == 0 {
		return 1, nil
	}
	// Oldest first into one table, a later write replacing an earlier:
	// what bbolt receives is each key's last value.
	m := newMemtable()
	for i, seq := range seqs {
		if err := readSegment(segmentPath(dir, seq), i == len(seqs)-1, m); err != nil {
			return 0, fmt.Errorf("segment %d: %w", seq, err)
		}
	}
	if err := db.Update(func(tx *bolt.Tx) error { return writeTable(tx, m) }); err != nil {
		return 0, err
	}
	for _, seq := range seqs {
		if err := os.Remove(segmentPath(dir, seq)); err != nil {
			return 0, err
		}
	}
	return seqs[len(seqs)-1] + 1, syncDir(dir)
}

// readSegment puts a segment's records into m, in order. In the last
// segment a torn or partly written last record ends the log; anywhere
// else it is an error.
func readSegment(path string, last bool, m *memtable) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for len(data) > 0 {
		ok := len(data) >= walHeader
		var body []byte
		if ok {
			n := binary.LittleEndian.Uint32(data)
			ok = uint64(n) <= uint64(len(data)-walHeader)
			if ok {
				body = data[walHeader : walHeader+int(n)]
				ok = crc32.Checksum(body, castagnoli) == binary.LittleEndian.Uint32(data[4:])
			}
		}
		if !ok {
			if last {
				return nil
			}
			return errCorruptLog
		}
		if err := decodeLogRecord(body, m); err != nil {
			return err
		}
		data = data[walHeader+len(body):]
	}
	return nil
}

// openWAL starts segment seq in dir.
func openWAL(dir string, seq uint64) (*wal, error) {
	w := &wal{dir: dir}
	if err := w.start(seq); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *wal) start(seq uint64) error {
	f, err := os.OpenFile(segmentPath(w.dir, seq), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return err
	}
	w.f, w.seq, w.size = f, seq, 0
	return nil
}

// append writes m's writes as one record and syncs it. On an error the
// segment is cut back to where it was, so that no part of the record can
// be replayed; if even that fails, the log is unusable (broken is set).
// It returns the record's size.
func (w *wal) append(m *memtable) (int, error) {
	if w.broken != nil {
		return 0, w.broken
	}
	w.buf = appendLogRecord(w.buf[:0], m)
	n := len(w.buf)
	if cap(w.buf) > 1<<20 {
		defer func() { w.buf = nil }() // one large transaction does not pin its buffer
	}
	if _, err := w.f.Write(w.buf); err != nil {
		return 0, w.undo(err)
	}
	if !w.noSync {
		if err := w.f.Sync(); err != nil {
			return 0, w.undo(err)
		}
	}
	w.size += int64(n)
	return n, nil
}

// errBrokenLog answers every write once a failed append could not be
// undone: the log's end is unknown.
var errBrokenLog = errors.New("boltstore: the write-ahead log could not be repaired after a failed write; restart the process")

func (w *wal) undo(err error) error {
	if terr := w.f.Truncate(w.size); terr != nil {
		w.broken = fmt.Errorf("%w (%v, then %v)", errBrokenLog, err, terr)
		return w.broken
	}
	if _, serr := w.f.Seek(w.size, io.SeekStart); serr != nil {
		w.broken = fmt.Errorf("%w (%v, then %v)", errBrokenLog, err, serr)
		return w.broken
	}
	return err
}

// rotate starts the next segment and closes the current one; it returns
// the closed segment's number. When the next cannot be started, the
// current one stays.
func (w *wal) rotate() (uint64, error) {
	if w.broken != nil {
		return 0, w.broken
	}
	old, f := w.seq, w.f
	if err := w.start(old + 1); err != nil {
		return 0, err
	}
	// Every record in it was synced when appended.
	_ = f.Close()
	return old, nil
}

func (w *wal) close() error { return w.f.Close() }

// syncDir makes a folder's entries (files created or removed) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
