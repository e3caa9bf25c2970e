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
			errs[i] = s.commits.write(func(tx *bolt.Tx) error {
				if err := tx.Bucket(bucket).Put([]byte{byte(i)}, []byte("v")); err != nil {
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
		var got []byte
		_ = s.db.View(func(tx *bolt.Tx) error { got = tx.Bucket(bucket).Get([]byte{byte(i)}); return nil })
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
			errs[i] = s.commits.write(func(tx *bolt.Tx) error {
				return tx.Bucket(bucket).Put([]byte{byte(i)}, []byte("v"))
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
	if err := s.commits.write(func(*bolt.Tx) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("a write after stop: %v, want errClosed", err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, i := range committed {
		var got []byte
		_ = db.View(func(tx *bolt.Tx) error { got = tx.Bucket(bucket).Get([]byte{byte(i)}); return nil })
		if string(got) != "v" {
			t.Errorf("writer %d was told its write committed, but it is not stored", i)
		}
	}
}

// bucket is where the committer's tests write.
var bucket = []byte("test")

// openWithBucket opens a store in a new folder, with bucket created, and
// returns it and its file's path.
func openWithBucket(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
	return s, path
}
