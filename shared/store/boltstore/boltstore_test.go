package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/store"
	"github.com/agentplane/agentplane/shared/store/boltstore"
	"github.com/agentplane/agentplane/shared/store/storetest"
)

var ctx = context.Background()

func item(pk, sk, data string) store.Item {
	return store.Item{Key: store.Key{PK: pk, SK: sk}, Data: []byte(data)}
}

func openB(b *testing.B) *boltstore.Store {
	b.Helper()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (store.Store, func(func() time.Time)) {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s.SetClock
	}, storetest.Options{})
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, item("r", "a", "kept"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if it, err := s.Get(ctx, store.Key{PK: "r", SK: "a"}); err != nil || string(it.Data) != "kept" {
		t.Fatalf("%v %s", err, it.Data)
	}
}
