package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

func testPutGetDelete(t *testing.T, s store.Store) {
	full := store.Item{
		Key:       key("p", "a"),
		Data:      []byte(`{"x":1}`),
		Nums:      map[string]int64{"hits": 3, "zero": 0, "neg": -7},
		Indexes:   map[string]store.IndexKey{"gsi1": {PK: "ix", SK: "k1"}, "gsi3": {}},
		ExpiresAt: time.Now().Add(time.Hour),
		Version:   42, // ignored on input
	}
	got := put(t, s, full, store.Condition{})
	if got.Version != 1 {
		t.Fatalf("a new item has version 1, got %d", got.Version)
	}
	sameItem(t, "put returns the item as stored", got, full)
	if _, ok := got.Indexes["gsi3"]; ok {
		t.Fatalf("an empty index key means no entry in that index: %v", got.Indexes)
	}
	g := get(t, s, full.Key)
	sameItem(t, "get", g, full)
	if g.Version != 1 {
		t.Fatalf("get version %d", g.Version)
	}

	// A Put replaces the whole item: Nums, indexes and expiry not given are gone.
	got = put(t, s, item("p", "a", "second"), store.Condition{})
	if got.Version != 2 {
		t.Fatalf("every write bumps the version: got %d", got.Version)
	}
	g = get(t, s, full.Key)
	sameItem(t, "put replaces the item", g, item("p", "a", "second"))
	if p, err := s.Query(ctx, store.Query{Index: "gsi1", PK: "ix"}); err != nil || len(p.Items) != 0 {
		t.Fatalf("the replaced item left its index entry: %v %s", err, sks(p.Items))
	}

	// Missing items.
	absent(t, s, key("p", "missing"))
	absent(t, s, key("nowhere", "a"))
	if err := s.Delete(ctx, key("p", "missing"), store.Condition{}); err != nil {
		t.Fatalf("deleting an absent item unconditionally succeeds: %v", err)
	}

	// Delete, then a new item under the same key starts again at version 1.
	if err := s.Delete(ctx, full.Key, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	absent(t, s, full.Key)
	if got := put(t, s, item("p", "a", "again"), store.Condition{}); got.Version != 1 {
		t.Fatalf("recreated item: version %d", got.Version)
	}

	// An empty payload reads back empty.
	put(t, s, store.Item{Key: key("p", "empty")}, store.Condition{})
	if g := get(t, s, key("p", "empty")); len(g.Data) != 0 || len(g.Nums) != 0 || len(g.Indexes) != 0 || !g.ExpiresAt.IsZero() {
		t.Fatalf("empty item: %s", show(g))
	}

	// Get and Put hand out copies: changing them changes nothing stored.
	g = get(t, s, key("p", "a"))
	copy(g.Data, "XXXXX")
	if g2 := get(t, s, key("p", "a")); string(g2.Data) != "again" {
		t.Fatalf("stored data aliased: %q", g2.Data)
	}
}

// Keys may hold any byte (NUL included); no two keys collide, whatever a
// naive concatenation of pk and sk would give.
func testKeysWithAnyByte(t *testing.T, s store.Store) {
	keys := []store.Key{
		key("a", "b\x00c"), key("a\x00b", "c"), key("a\x00", "bc"), key("a", "\x00bc"),
		key("ab", "c"), key("a", "bc"), key("a\x01", "bc"), key("a", "b\x01c"),
		key("é", "ü"), key("a/b", "c#d"), key("a", "b"), key("a", "b "),
	}
	for i, k := range keys {
		put(t, s, store.Item{Key: k, Data: []byte{byte(i)}}, store.NotExists())
	}
	for i, k := range keys {
		if g := get(t, s, k); len(g.Data) != 1 || g.Data[0] != byte(i) || g.Key != k {
			t.Fatalf("key %q/%q read back %s", k.PK, k.SK, show(g))
		}
	}
	all := queryAll(t, s, store.Query{PK: "a"})
	if got, want := sks(all), "\x00bc,b,b\x00c,b\x01c,b ,bc"; got != want {
		t.Fatalf("partition %q holds %q, want %q", "a", got, want)
	}
	for _, it := range all {
		if it.PK != "a" {
			t.Fatalf("item of partition %q in partition a", it.PK)
		}
	}
	if got := sks(queryAll(t, s, store.Query{PK: "a\x00"})); got != "bc" {
		t.Fatalf("partition a\\x00: %q", got)
	}
}

func testConditions(t *testing.T, s store.Store) {
	cf := func(what string, err error) {
		t.Helper()
		wantErr(t, what, err, store.ErrConditionFailed)
		if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: a failed condition is only ErrConditionFailed: %v", what, err)
		}
	}
	unchanged := func(k store.Key, version int64, data string) {
		t.Helper()
		if g := get(t, s, k); g.Version != version || string(g.Data) != data {
			t.Fatalf("a failed write changed the item: %s", show(g))
		}
	}
	k := key("c", "a")

	// Put.
	_, err := s.Put(ctx, item("c", "a", "x"), store.Exists())
	cf("put exists on absent", err)
	absent(t, s, k)
	_, err = s.Put(ctx, item("c", "a", "x"), store.HasVersion(1))
	cf("put version on absent", err)
	absent(t, s, k)
	if got := put(t, s, item("c", "a", "1"), store.NotExists()); got.Version != 1 {
		t.Fatalf("create: v%d", got.Version)
	}
	_, err = s.Put(ctx, item("c", "a", "x"), store.NotExists())
	cf("second create", err)
	unchanged(k, 1, "1")
	if got := put(t, s, item("c", "a", "2"), store.Exists()); got.Version != 2 {
		t.Fatalf("put exists: v%d", got.Version)
	}
	_, err = s.Put(ctx, item("c", "a", "x"), store.HasVersion(1))
	cf("stale version", err)
	unchanged(k, 2, "2")
	if got := put(t, s, item("c", "a", "3"), store.HasVersion(2)); got.Version != 3 {
		t.Fatalf("versioned put: v%d", got.Version)
	}

	// NumBelow: an absent item or attribute counts as 0.
	put(t, s, store.Item{Key: key("c", "n"), Data: []byte("n"), Nums: map[string]int64{"n": 5}}, store.Condition{})
	_, err = s.Put(ctx, store.Item{Key: key("c", "n"), Data: []byte("x")}, store.NumBelow("n", 5))
	cf("put n<5 with n=5", err)
	unchanged(key("c", "n"), 1, "n")
	put(t, s, store.Item{Key: key("c", "n"), Data: []byte("n2"), Nums: map[string]int64{"n": 5}}, store.NumBelow("n", 6))
	put(t, s, store.Item{Key: key("c", "n"), Data: []byte("n3"), Nums: map[string]int64{"n": 5}}, store.NumBelow("other", 1))
	_, err = s.Put(ctx, store.Item{Key: key("c", "n"), Data: []byte("x")}, store.NumBelow("other", 0))
	cf("absent attribute counts as 0, and 0 < 0 fails", err)
	put(t, s, item("c", "fresh", ""), store.NumBelow("n", 1))

	// Update.
	_, err = s.Update(ctx, store.Update{Key: key("c", "u"), SetData: []byte("x"), Cond: store.Exists()})
	cf("update exists on absent", err)
	absent(t, s, key("c", "u"))
	_, err = s.Update(ctx, store.Update{Key: key("c", "u"), SetData: []byte("x"), Cond: store.HasVersion(1)})
	cf("update version on absent", err)
	absent(t, s, key("c", "u"))
	if got := update(t, s, store.Update{Key: key("c", "u"), SetData: []byte("u1"), Cond: store.NotExists()}); got.Version != 1 {
		t.Fatalf("update creates: v%d", got.Version)
	}
	_, err = s.Update(ctx, store.Update{Key: key("c", "u"), SetData: []byte("x"), Cond: store.NotExists()})
	cf("update not-exists on present", err)
	_, err = s.Update(ctx, store.Update{Key: key("c", "u"), SetData: []byte("x"), Cond: store.HasVersion(7)})
	cf("update stale version", err)
	unchanged(key("c", "u"), 1, "u1")
	update(t, s, store.Update{Key: key("c", "u"), SetData: []byte("u2"), Cond: store.HasVersion(1)})
	update(t, s, store.Update{Key: key("c", "u"), SetData: []byte("u3"), Cond: store.Exists()})
	unchanged(key("c", "u"), 3, "u3")

	// Delete.
	err = s.Delete(ctx, key("c", "nope"), store.Exists())
	cf("delete exists on absent", err)
	err = s.Delete(ctx, key("c", "nope"), store.HasVersion(1))
	cf("delete version on absent", err)
	err = s.Delete(ctx, k, store.NotExists())
	cf("delete not-exists on present", err)
	err = s.Delete(ctx, k, store.HasVersion(2))
	cf("delete stale version", err)
	err = s.Delete(ctx, key("c", "n"), store.NumBelow("n", 5))
	cf("delete n<5 with n=5", err)
	unchanged(k, 3, "3")
	if err := s.Delete(ctx, k, store.HasVersion(3)); err != nil {
		t.Fatal(err)
	}
	absent(t, s, k)
	if err := s.Delete(ctx, key("c", "n"), store.NumBelow("n", 6)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key("c", "u"), store.Exists()); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, key("c", "never"), store.NotExists()); err != nil {
		t.Fatalf("delete not-exists on absent: %v", err)
	}
}

func testUpdate(t *testing.T, s store.Store) {
	k := key("u", "a")
	got := update(t, s, store.Update{Key: k, Add: map[string]int64{"a": 2, "b": -1}})
	want := store.Item{Key: k, Nums: map[string]int64{"a": 2, "b": -1}}
	sameItem(t, "update creates an absent item", got, want)
	if got.Version != 1 {
		t.Fatalf("created by update: v%d", got.Version)
	}
	got = update(t, s, store.Update{Key: k, Add: map[string]int64{"a": 3}})
	want.Nums["a"] = 5
	sameItem(t, "add", got, want)
	if got.Version != 2 {
		t.Fatalf("v%d", got.Version)
	}
	got = update(t, s, store.Update{Key: k, SetData: []byte("d1")})
	want.Data = []byte("d1")
	sameItem(t, "set data keeps the counters", got, want)

	// Indexes: set, move, remove; others untouched.
	update(t, s, store.Update{Key: k, SetIndexes: map[string]store.IndexKey{"gsi1": {PK: "i1", SK: "s1"}, "gsi2": {PK: "i2", SK: "s2"}}})
	if p := queryAll(t, s, store.Query{Index: "gsi1", PK: "i1"}); sks(p) != "a" || string(p[0].Data) != "d1" {
		t.Fatalf("index entry after update: %q", sks(p))
	}
	got = update(t, s, store.Update{Key: k, SetIndexes: map[string]store.IndexKey{"gsi1": {PK: "i1b", SK: "s1b"}}})
	want.Indexes = map[string]store.IndexKey{"gsi1": {PK: "i1b", SK: "s1b"}, "gsi2": {PK: "i2", SK: "s2"}}
	sameItem(t, "move in one index", got, want)
	if p := queryAll(t, s, store.Query{Index: "gsi1", PK: "i1"}); len(p) != 0 {
		t.Fatalf("old index entry survived the move: %q", sks(p))
	}
	if p := queryAll(t, s, store.Query{Index: "gsi1", PK: "i1b", SK: store.SKCond{Op: store.SKEqual, A: "s1b"}}); sks(p) != "a" {
		t.Fatalf("new index entry: %q", sks(p))
	}
	// Expiry.
	exp := time.Now().Add(time.Hour)
	got = update(t, s, store.Update{Key: k, SetExpiresAt: &exp})
	want.ExpiresAt = exp
	sameItem(t, "set expiry", got, want)

	// An empty update only bumps the version; the result is what Get sees.
	before := get(t, s, k)
	got = update(t, s, store.Update{Key: k})
	if got.Version != before.Version+1 {
		t.Fatalf("empty update: v%d after v%d", got.Version, before.Version)
	}
	sameItem(t, "empty update", got, want)
	g := get(t, s, k)
	sameItem(t, "get after update", g, got)
	if g.Version != got.Version {
		t.Fatalf("get v%d, update returned v%d", g.Version, got.Version)
	}

}

// Update removes what it is told to: an index entry (an empty IndexKey),
// the expiry (a zero time), the payload (an empty, non-nil SetData).
func testUpdateClears(t *testing.T, s store.Store) {
	k := key("uc", "a")
	want := store.Item{Key: k, Data: []byte("d"), Nums: map[string]int64{"n": 1}, ExpiresAt: time.Now().Add(time.Hour),
		Indexes: map[string]store.IndexKey{"gsi1": {PK: "i1", SK: "s1"}, "gsi2": {PK: "i2", SK: "s2"}}}
	put(t, s, want, store.Condition{})

	got := update(t, s, store.Update{Key: k, SetIndexes: map[string]store.IndexKey{"gsi1": {}}})
	delete(want.Indexes, "gsi1")
	sameItem(t, "remove from one index", got, want)
	if p := queryAll(t, s, store.Query{Index: "gsi1", PK: "i1"}); len(p) != 0 {
		t.Fatalf("removed index entry survived: %q", sks(p))
	}
	if p := queryAll(t, s, store.Query{Index: "gsi2", PK: "i2"}); sks(p) != "a" {
		t.Fatalf("other index lost its entry: %q", sks(p))
	}

	got = update(t, s, store.Update{Key: k, SetExpiresAt: &time.Time{}})
	want.ExpiresAt = time.Time{}
	sameItem(t, "clear expiry", got, want)
	sameItem(t, "get after clearing the expiry", get(t, s, k), want)

	got = update(t, s, store.Update{Key: k, SetData: []byte{}})
	want.Data = nil
	sameItem(t, "clear payload", got, want)
	sameItem(t, "get after clearing the payload", get(t, s, k), want)
	if got.Version != 4 {
		t.Fatalf("v%d after three updates", got.Version)
	}
}
