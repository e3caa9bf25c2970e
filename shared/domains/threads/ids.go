package threads

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/google/uuid"
)

// newUUID7 returns a version 7 UUID for time t: 48 bits of Unix
// milliseconds, then random bits. Its canonical string sorts by time, which
// is what checkpoint ids and thread ids rely on (LangGraph uses uuid6 for
// the same purpose).
func newUUID7(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(t.UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = 0x70 | (b[6] & 0x0f)
	b[8] = 0x80 | (b[8] & 0x3f)
	return uuid.UUID(b).String()
}

// nextCheckpointID returns a time-ordered id strictly greater than after
// (the thread's latest checkpoint id, "" for none). Clocks of different
// processes may disagree, so when a fresh id would not sort after the last
// one, the last id's random field is incremented instead: ids of one thread
// always increase, which history order and copy-on-write cut points need.
func nextCheckpointID(now time.Time, after string) string {
	id := newUUID7(now)
	if after == "" || id > after {
		return id
	}
	u, err := uuid.Parse(after)
	if err != nil {
		return id
	}
	// Treat the 62-bit rand_b field as a counter; on overflow carry into
	// the 12-bit rand_a field, skipping the version and variant bits.
	lo := binary.BigEndian.Uint64(u[8:]) & 0x3fffffffffffffff
	hi := binary.BigEndian.Uint16(u[6:8]) & 0x0fff
	lo++
	if lo > 0x3fffffffffffffff {
		lo = 0
		hi++
		if hi > 0x0fff {
			// 2^74 ids within one millisecond: advance the clock field.
			ms := uint64(u[0])<<40 | uint64(u[1])<<32 | uint64(u[2])<<24 | uint64(u[3])<<16 | uint64(u[4])<<8 | uint64(u[5])
			return nextCheckpointID(time.UnixMilli(int64(ms+1)), "")
		}
	}
	binary.BigEndian.PutUint16(u[6:8], 0x7000|hi)
	binary.BigEndian.PutUint64(u[8:], 0x8000000000000000|lo)
	return u.String()
}

// uuidFrom derives a stable id from a name (task ids of pending tasks).
func uuidFrom(space, name string) string {
	ns, err := uuid.Parse(space)
	if err != nil {
		ns = uuid.Nil
	}
	return uuid.NewSHA1(ns, []byte(name)).String()
}

func randomID() string { return uuid.NewString() }

// newChainID names a new chain. Time-ordered, so that the chains created
// together sit together in an ordered store (on bbolt a create then
// appends to one page instead of dirtying a random one); DynamoDB hashes
// the partition key, so the order costs nothing there.
func newChainID(now time.Time) string { return newUUID7(now) }

// shortHash renders the first 16 bytes of a digest.
func shortHash(sum []byte) string { return hex.EncodeToString(sum[:16]) }
