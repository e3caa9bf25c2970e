package boltstore

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A write function that panics re-panics in its own caller; writers that
// shared its batch are committed.
func TestCommitterPanicStaysWithItsWriter(t *testing.T) {
	s, _ := openWithBucket(t)
	defer s.Close()
	const writers = 30
	var wg sync.WaitGroup
	recovered := make([]any, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { recovered[i] = recover() }()
			errs[i] = s.commits.write(func(tx *txn) error {
				if err := tx.put(baseBucket, testKey(i), []byte("v")); err != nil {
					return dirty{err}
				}
				switch i % 10 {
				case 4:
					panic("writer 4 broke")
				case 7:
					// A clean failure must have written nothing; this one
					// wrote, so it is marked dirty.
					return dirty{errors.New("half-written")}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i := range writers {
		got := readKey(t, s, i)
		switch i % 10 {
		case 4:
			if recovered[i] != "writer 4 broke" || got != nil {
				t.Errorf("writer %d: recovered %v, stored %q", i, recovered[i], got)
			}
		case 7:
			if errs[i] == nil || errs[i].Error() != "half-written" || got != nil {
				t.Errorf("writer %d: %v, stored %q", i, errs[i], got)
			}
		default:
			if errs[i] != nil || recovered[i] != nil || string(got) != "v" {
				t.Errorf("writer %d: %v %v, stored %q", i, errs[i], recovered[i], got)
			}
		}
	}
}

// Close commits what is queued and refuses what comes after; no writer
// racing it is left waiting, and what it was told is committed is on disk.
func TestCommitterStopsCleanly(t *testing.T) {
	s, path := openWithBucket(t)
	const writers = 64
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.commits.write(func(tx *txn) error {
				return tx.put(baseBucket, testKey(i), []byte("v"))
			})
		}()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var committed []int
	for i, err := range errs {
		switch {
		case err == nil:
			committed = append(committed, i)
		case !errors.Is(err, errClosed):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if err := s.commits.write(func(*txn) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("a write after stop: %v, want errClosed", err)
	}
	// Close checkpointed everything: bbolt alone holds the writes.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, i := range committed {
		var got []byte
		_ = db.View(func(tx *bolt.Tx) error { got = tx.Bucket(baseBucket.name).Get(testKey(i)); return nil })
		if string(got) != "v" {
			t.Errorf("writer %d was told its write committed, but it is not stored", i)
		}
	}
}

// testKey is the committer tests' raw key of writer i.
func testKey(i int) []byte { return []byte{'t', byte(i)} }

// readKey reads writer i's raw key through the store's layers.
func readKey(t *testing.T, s *Store, i int) []byte {
	t.Helper()
	var got []byte
	if err := s.read(func(v *view) error {
		var err error
		got, err = v.get(baseBucket, testKey(i))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// openWithBucket opens a store in a new folder and returns it and its
// file's path.
func openWithBucket(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}
