package boltstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
	bolt "go.etcd.io/bbolt"
)

// A cursor over the layers walks exactly what a map of each key's newest
// write holds, in both directions, from any seek, turning around
// anywhere: checked against such a map over many random layerings.
func TestCursorMergesLayers(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() []byte { return []byte(fmt.Sprintf("k%02d", rng.IntN(40))) }
	for round := range 200 {
		model := map[string]string{}
		// bbolt, oldest: puts only.
		err := db.Update(func(tx *bolt.Tx) error {
			_ = tx.DeleteBucket(baseBucket.name)
			b, err := tx.CreateBucket(baseBucket.name)
			if err != nil {
				return err
			}
			for range rng.IntN(30) {
				k, v := key(), fmt.Sprintf("bolt%d", rng.IntN(100))
				if err := b.Put(k, []byte(v)); err != nil {
					return err
				}
				model[string(k)] = v
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Then the frozen, active and own tables, each over the last.
		tables := [3]*memtable{}
		for i := range tables {
			if rng.IntN(4) == 0 {
				continue // a layer may be absent
			}
			m := newMemtable()
			for range rng.IntN(20) {
				k := key()
				if rng.IntN(3) == 0 {
					m.set(baseBucket, memEntry{key: k, del: true})
					delete(model, string(k))
				} else {
					v := fmt.Sprintf("mem%d-%d", i, rng.IntN(100))
					m.set(baseBucket, memEntry{key: k, val: []byte(v)})
					model[string(k)] = v
				}
			}
			tables[i] = m
		}
		var want []string
		for k := range model {
			want = append(want, k)
		}
		slices.Sort(want)
		tx, err := db.Begin(false)
		if err != nil {
			t.Fatal(err)
		}
		v := &view{frozen: tables[0], active: tables[1], own: tables[2], tx: tx}
		walk := func(name string, start func(*cursor) []byte, step func(*cursor) []byte, want []string) {
			t.Helper()
			c, err := v.cursor(baseBucket)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			var got []string
			for k := start(c); k != nil; k = step(c) {
				got = append(got, string(k))
			}
			if !slices.Equal(got, want) {
				t.Errorf("round %d, %s: got %v, want %v", round, name, got, want)
			}
		}
		rev := slices.Clone(want)
		slices.Reverse(rev)
		walk("forward", (*cursor).First, (*cursor).Next, want)
		walk("backward", (*cursor).Last, (*cursor).Prev, rev)
		seek := key()
		i, _ := slices.BinarySearch(want, string(seek))
		walk("seek, forward", func(c *cursor) []byte { return c.Seek(seek) }, (*cursor).Next, want[i:])
		// Seek, then turn back: the keys before the seek, newest first.
		before := slices.Clone(want[:i])
		slices.Reverse(before)
		if i < len(want) {
			walk("seek, backward", func(c *cursor) []byte {
				c.Seek(seek)
				return c.Prev()
			}, (*cursor).Prev, before)
		}
		if i > 0 && i < len(want) {
			// Back one, then forward again: the same key as the seek.
			walk("turn twice", func(c *cursor) []byte {
				c.Seek(seek)
				c.Prev()
				return c.Next()
			}, (*cursor).Next, want[i:])
		}
		for _, k := range want {
			got, err := v.get(baseBucket, []byte(k))
			if err != nil || string(got) != model[k] {
				t.Errorf("round %d, get %s: %q, %v; want %q", round, k, got, err, model[k])
			}
		}
		_ = tx.Rollback()
		if t.Failed() {
			return
		}
	}
}

// openTest opens a store at path with freezes as often as fb bytes or
// age allow (0: the defaults).
func openTest(t *testing.T, path string, fb int, age time.Duration) *Store {
	t.Helper()
	s, err := OpenWith(path, Options{freezeBytes: fb, freezeAge: age})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func putN(t *testing.T, s *Store, from, to int, val string) {
	t.Helper()
	for i := from; i < to; i++ {
		it := store.Item{Key: store.Key{PK: "p", SK: fmt.Sprintf("%04d", i)}, Data: []byte(val),
			Indexes: map[string]store.IndexKey{"gsi1": {PK: "ix", SK: fmt.Sprintf("%04d", i)}}}
		if _, err := s.Put(context.Background(), it, store.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkN checks that the items from..to hold val, by key, and that the
// index holds indexed items.
func checkN(t *testing.T, s *Store, from, to int, val string, indexed int) {
	t.Helper()
	for i := from; i < to; i++ {
		it, err := s.Get(context.Background(), store.Key{PK: "p", SK: fmt.Sprintf("%04d", i)})
		if err != nil || string(it.Data) != val {
			t.Fatalf("item %d: %q, %v; want %q", i, it.Data, err, val)
		}
	}
	p, err := s.Query(context.Background(), store.Query{PK: "ix", Index: "gsi1", Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != indexed {
		t.Fatalf("index: %d items, want %d", len(p.Items), indexed)
	}
}

// crash stops s the way a killed process would leave it: no checkpoint of
// the memory tables, the log as written.
func crash(t *testing.T, s *Store) {
	t.Helper()
	s.commits.abandon = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// What was committed survives a crash: the log is replayed on open,
// whether its writes were still in memory, frozen or being checkpointed.
func TestLogReplayAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	// Freezes after every few writes: some segments are checkpointed
	// before the crash, some not.
	s := openTest(t, path, 4<<10, time.Millisecond)
	putN(t, s, 0, 300, "one")
	putN(t, s, 0, 100, "two")
	crash(t, s)
	s = openTest(t, path, 0, 0)
	checkN(t, s, 0, 100, "two", 300)
	checkN(t, s, 100, 300, "one", 300)
	if segs, _ := segments(path + ".wal"); len(segs) != 1 {
		t.Fatalf("after replay the log has segments %v, want the one new", segs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A clean close leaves bbolt holding everything and the log empty.
	if segs, _ := segments(path + ".wal"); len(segs) != 0 {
		t.Fatalf("after close the log has segments %v", segs)
	}
	s = openTest(t, path, 0, 0)
	defer s.Close()
	checkN(t, s, 0, 100, "two", 300)
}

// A record torn by a crash at the end of the last segment was never
// acknowledged: the replay stops before it. A bad record anywhere else
// stops the open.
func TestLogTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openTest(t, path, 0, 0)
	putN(t, s, 0, 10, "v")
	crash(t, s)
	segs, err := segments(path + ".wal")
	if err != nil || len(segs) != 1 {
		t.Fatalf("%v %v", segs, err)
	}
	last := segmentPath(path+".wal", segs[0])
	f, err := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A header promising more than follows.
	if _, err := f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 9, 9}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s = openTest(t, path, 0, 0)
	checkN(t, s, 0, 10, "v", 10)
	putN(t, s, 10, 20, "w")
	crash(t, s)

	// Now a flipped byte in the first of two segments.
	segs, _ = segments(path + ".wal")
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	first := segmentPath(path+".wal", segs[0])
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(first, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segmentPath(path+".wal", segs[0]+1), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWith(path, Options{}); !errors.Is(err, errCorruptLog) {
		t.Fatalf("open over a corrupt segment: %v, want errCorruptLog", err)
	}
}

// Replaying a segment that bbolt already holds, then the newer ones,
// leaves every key at its last value: a crash between a checkpoint and
// the removal of its segment loses and resurrects nothing.
func TestLogReplayInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openTest(t, path, 0, 0)
	putN(t, s, 0, 2, "old") // checkpointed at close
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Segment 5 holds what bbolt holds; segment 6 changes one item and
	// deletes the other.
	item := func(i int, val string) memEntry {
		k := store.Key{PK: "p", SK: fmt.Sprintf("%04d", i)}
		return memEntry{key: baseKey(k), val: encodeRecord(record{D: []byte(val), V: 1})}
	}
	one, two := newMemtable(), newMemtable()
	one.set(baseBucket, item(0, "old"))
	one.set(baseBucket, item(1, "old"))
	two.set(baseBucket, item(0, "new"))
	gone := item(1, "")
	gone.val, gone.del = nil, true
	two.set(baseBucket, gone)
	for seq, m := range map[uint64]*memtable{5: one, 6: two} {
		if err := os.WriteFile(segmentPath(path+".wal", seq), appendLogRecord(nil, m), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s = openTest(t, path, 0, 0)
	defer s.Close()
	it, err := s.Get(context.Background(), store.Key{PK: "p", SK: "0000"})
	if err != nil || string(it.Data) != "new" {
		t.Fatalf("item 0: %q, %v", it.Data, err)
	}
	if _, err := s.Get(context.Background(), store.Key{PK: "p", SK: "0001"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("item 1: %v, want not found", err)
	}
	if segs, _ := segments(path + ".wal"); !slices.Equal(segs, []uint64{7}) {
		t.Fatalf("segments %v, want [7]", segs)
	}
}

// Counters incremented by racing writers while tables freeze and
// checkpoint every millisecond lose no update; readers never see a
// version go back, nor an index disagree with its items; a crash and a
// replay keep the totals.
func TestCheckpointsUnderLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openTest(t, path, 2<<10, time.Millisecond)
	const writers, each, keys = 8, 60, 4
	ctx := context.Background()
	var wg sync.WaitGroup
	var stop atomic.Bool
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				k := store.Key{PK: "n", SK: fmt.Sprint((w + i) % keys)}
				_, err := s.Update(ctx, store.Update{Key: k, Add: map[string]int64{"c": 1},
					SetIndexes: map[string]store.IndexKey{"gsi2": {PK: "all", SK: k.SK}}})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			last := map[string]int64{}
			for !stop.Load() {
				k := store.Key{PK: "n", SK: fmt.Sprint(r % keys)}
				if it, err := s.Get(ctx, k); err == nil {
					if it.Version < last[k.SK] {
						t.Errorf("key %s went back from version %d to %d", k.SK, last[k.SK], it.Version)
						return
					}
					last[k.SK] = it.Version
				}
				p, err := s.Query(ctx, store.Query{PK: "all", Index: "gsi2"})
				if err != nil {
					t.Error(err)
					return
				}
				for _, it := range p.Items {
					if it.Nums["c"] != it.Version {
						t.Errorf("item %s: count %d at version %d", it.Key.SK, it.Nums["c"], it.Version)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	total := func(s *Store) int64 {
		var n int64
		p, err := s.Query(ctx, store.Query{PK: "all", Index: "gsi2"})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			n += it.Nums["c"]
		}
		return n
	}
	if got := total(s); got != writers*each {
		t.Fatalf("total %d, want %d", got, writers*each)
	}
	if st := s.CommitStats(); st.Checkpoints == 0 {
		t.Fatalf("no checkpoint ran: %+v", st)
	}
	crash(t, s)
	s = openTest(t, path, 0, 0)
	defer s.Close()
	if got := total(s); got != writers*each {
		t.Fatalf("after the crash: total %d, want %d", got, writers*each)
	}
}

// The log's record format reads back what it wrote, a later record's
// write replacing an earlier one's.
func TestLogRecordRoundTrip(t *testing.T) {
	m := newMemtable()
	m.set(baseBucket, memEntry{key: []byte("a"), val: []byte("1")})
	m.set(expiryBucket, memEntry{key: []byte("b"), del: true})
	m.set(buckets[2], memEntry{key: []byte("c"), val: []byte{}})
	rec := appendLogRecord(nil, m)
	path := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(path, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	// Two records: the second replaces one key of the first.
	later := newMemtable()
	later.set(baseBucket, memEntry{key: []byte("a"), val: []byte("2")})
	rec = appendLogRecord(rec, later)
	if err := os.WriteFile(path, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	got := newMemtable()
	if err := readSegment(path, true, got); err != nil {
		t.Fatal(err)
	}
	a, _ := got.get(baseBucket, []byte("a"))
	b, _ := got.get(expiryBucket, []byte("b"))
	c, ok := got.get(buckets[2], []byte("c"))
	if string(a.val) != "2" || a.del || !b.del || !ok || c.del || !bytes.Equal(c.val, []byte{}) || got.trees[buckets[3].id] != nil {
		t.Fatalf("read back: a %+v, b %+v, c %+v", a, b, c)
	}
}

// Before a batch, a full active table makes the writers wait for the
// running checkpoint, then it is frozen; a checkpoint that keeps failing
// answers them with its error, and so does a stop.
func TestRoomWaitsForTheCheckpoint(t *testing.T) {
	w, err := openWAL(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	full := newMemtable()
	full.set(baseBucket, memEntry{key: []byte("k"), val: []byte("v")})
	full.bytes = maxActiveBytes
	c := &committer{layers: &layers{active: full, frozen: newMemtable()}, wal: w,
		quit: make(chan struct{}), ckpt: make(chan ckptJob, 1), ckptIdle: make(chan struct{}, 1),
		freezeBytes: defaultFreezeBytes, freezeAge: defaultFreezeAge}

	failing := errors.New("disk full")
	c.ckptErr.Store(&failing)
	if err := c.room(); !errors.Is(err, failing) {
		t.Fatalf("with the checkpoint failing: %v, want its error", err)
	}
	c.ckptErr.Store(nil)

	const wait = 50 * time.Millisecond
	go func() {
		time.Sleep(wait)
		c.layers.mu.Lock()
		c.layers.frozen = nil
		c.layers.mu.Unlock()
		c.ckptIdle <- struct{}{}
	}()
	start := time.Now()
	if err := c.room(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("room returned after %s, before the checkpoint ended", d)
	}
	if job := <-c.ckpt; job.m != full || job.seq != 1 || c.layers.frozen != full || !c.layers.active.empty() {
		t.Fatalf("the full table was not frozen and handed on: job %+v", job)
	}

	c.layers.active.set(baseBucket, memEntry{key: []byte("k"), val: []byte("v")})
	c.layers.active.bytes = maxActiveBytes
	close(c.quit)
	if err := c.room(); !errors.Is(err, errClosed) {
		t.Fatalf("stopped while waiting: %v, want errClosed", err)
	}
}
