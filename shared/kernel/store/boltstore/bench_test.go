package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store/storetest"
)

func BenchmarkGet(b *testing.B) {
	storetest.BenchGet(b, open(b, filepath.Join(b.TempDir(), "db")))
}

func BenchmarkPut(b *testing.B) {
	storetest.BenchPut(b, open(b, filepath.Join(b.TempDir(), "db")))
}

func BenchmarkQuery(b *testing.B) {
	storetest.BenchQuery(b, open(b, filepath.Join(b.TempDir(), "db")))
}
