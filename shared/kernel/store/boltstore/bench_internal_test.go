package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// BenchmarkPutNoSync is BenchmarkPut without the log's fsync, so that what
// the store itself costs per write shows through the disk's noise.
func BenchmarkPutNoSync(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.commits.wal.noSync = true
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sk := fmt.Sprintf("%08d", i)
		it := store.Item{Key: store.Key{PK: "bench", SK: sk}, Data: []byte(`{"payload":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`),
			Indexes: map[string]store.IndexKey{"gsi1": {PK: "bench-ix", SK: sk}}}
		if _, err := s.Put(context.Background(), it, store.NotExists()); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
