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
	s, err := Open(filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bucket := []byte("test")
	if err := s.db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		t.Fatal(err)
	}
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
