package dynamostore_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store/storetest"
)

// Benchmarks measure the adapter plus an emulator round trip on loopback,
// not DynamoDB's own latency: dynalite (a Node process, when
// scripts/emulators.sh runs) and minidyn (in process).

func BenchmarkGet(b *testing.B) {
	b.Run("minidyn", func(b *testing.B) { storetest.BenchGet(b, newTable(b, client(minidynEndpoint(b)))) })
	b.Run("dynalite", func(b *testing.B) { storetest.BenchGet(b, newTable(b, client(dynaliteEndpoint(b)))) })
}

func BenchmarkPut(b *testing.B) {
	b.Run("minidyn", func(b *testing.B) { storetest.BenchPut(b, newTable(b, client(minidynEndpoint(b)))) })
	b.Run("dynalite", func(b *testing.B) { storetest.BenchPut(b, newTable(b, client(dynaliteEndpoint(b)))) })
}

func BenchmarkQuery(b *testing.B) {
	b.Run("minidyn", func(b *testing.B) { storetest.BenchQuery(b, newTable(b, client(minidynEndpoint(b)))) })
	b.Run("dynalite", func(b *testing.B) { storetest.BenchQuery(b, newTable(b, client(dynaliteEndpoint(b)))) })
}
