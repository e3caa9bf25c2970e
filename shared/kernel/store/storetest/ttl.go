package storetest

import (
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// expiredItem is stored already expired: no adapter deletes it physically
// before the checks below run, so they test read-time filtering.
func expiredItem(pk, sk string) store.Item {
	return store.Item{
		Key:       key(pk, sk),
		Data:      []byte("old"),
		Nums:      map[string]int64{"n": 5},
		Indexes:   map[string]store.IndexKey{"gsi1": {PK: "ttl-ix", SK: sk}},
		ExpiresAt: time.Now().Add(-time.Hour),
	}
}

// An expired item is absent for every read and every condition.
func testTTL(t *testing.T, s store.Store) {
	cf := func(what string, err error) { t.Helper(); wantErr(t, what, err, store.ErrConditionFailed) }
	live := store.Item{Key: key("x", "live"), Data: []byte("live"), ExpiresAt: time.Now().Add(time.Hour),
		Indexes: map[string]store.IndexKey{"gsi1": {PK: "ttl-ix", SK: "live"}}}
	put(t, s, live, store.Condition{})
	put(t, s, expiredItem("x", "a"), store.Condition{})
	absent(t, s, key("x", "a"))
	for _, c := range []struct {
		q    store.Query
		want string
	}{
		{store.Query{PK: "x"}, "live"},
		{store.Query{PK: "x", Limit: 1}, "live"},
		{store.Query{PK: "x", Desc: true}, "live"},
		{store.Query{PK: "x", SK: store.SKCond{Op: store.SKEqual, A: "a"}}, ""},
		{store.Query{Index: "gsi1", PK: "ttl-ix"}, "live"},
		{store.Query{Index: "gsi1", PK: "ttl-ix", Limit: 1, Desc: true}, "live"},
	} {
		if got := sks(queryAll(t, s, c.q)); got != c.want {
			t.Fatalf("query %+v: %q, want %q; the expired item must not show", c.q, got, c.want)
		}
	}

	// Conditions that need a live item fail.
	_, err := s.Put(ctx, item("x", "a", "x"), store.Exists())
	cf("put exists on expired", err)
	_, err = s.Put(ctx, item("x", "a", "x"), store.HasVersion(1))
	cf("put version on expired", err)
	_, err = s.Update(ctx, store.Update{Key: key("x", "a"), SetData: []byte("x"), Cond: store.Exists()})
	cf("update exists on expired", err)
	_, err = s.Update(ctx, store.Update{Key: key("x", "a"), SetData: []byte("x"), Cond: store.HasVersion(1)})
	cf("update version on expired", err)
	cf("delete exists on expired", s.Delete(ctx, key("x", "a"), store.Exists()))
	cf("delete version on expired", s.Delete(ctx, key("x", "a"), store.HasVersion(1)))
	absent(t, s, key("x", "a"))

	// Conditions that need an absent item hold, and the write starts afresh:
	// nothing of the expired item (payload, counters, indexes) survives.
	got := put(t, s, item("x", "a", "new"), store.NotExists())
	if got.Version != 1 {
		t.Fatalf("put over an expired item: v%d", got.Version)
	}
	sameItem(t, "put over an expired item", get(t, s, key("x", "a")), item("x", "a", "new"))
	if got := sks(queryAll(t, s, store.Query{Index: "gsi1", PK: "ttl-ix"})); got != "live" {
		t.Fatalf("the expired item's index entry survived its replacement: %q", got)
	}

	put(t, s, expiredItem("x", "b"), store.Condition{})
	got = update(t, s, store.Update{Key: key("x", "b"), Add: map[string]int64{"n": 1}, Cond: store.NumBelow("n", 3)})
	sameItem(t, "NumBelow and Add on an expired item count from 0", got, store.Item{Key: key("x", "b"), Nums: map[string]int64{"n": 1}})
	if got.Version != 1 {
		t.Fatalf("update over an expired item: v%d", got.Version)
	}

	put(t, s, expiredItem("x", "c"), store.Condition{})
	got = update(t, s, store.Update{Key: key("x", "c"), SetData: []byte("fresh"), Cond: store.NotExists()})
	sameItem(t, "update not-exists on an expired item", got, item("x", "c", "fresh"))

	put(t, s, expiredItem("x", "d"), store.Condition{})
	if err := s.Delete(ctx, key("x", "d"), store.NotExists()); err != nil {
		t.Fatalf("delete not-exists on expired: %v", err)
	}
	absent(t, s, key("x", "d"))

	// A Put of an expired item over a live one hides it at once.
	put(t, s, expiredItem("x", "live"), store.Exists())
	absent(t, s, key("x", "live"))

	// Update can expire and revive: a past expiry hides the item.
	put(t, s, item("x", "e", "e"), store.Condition{})
	past := time.Now().Add(-time.Minute)
	update(t, s, store.Update{Key: key("x", "e"), SetExpiresAt: &past})
	absent(t, s, key("x", "e"))
}

// An item that was live stops being visible once its expiry passes, with
// no write in between.
func testTTLExpiresWhileStored(t *testing.T, s store.Store) {
	// A whole second, so second-granularity adapters expire it at the same
	// instant.
	exp := time.Now().Truncate(time.Second).Add(2 * time.Second)
	it := store.Item{Key: key("e", "a"), Data: []byte("soon"), ExpiresAt: exp, Indexes: map[string]store.IndexKey{"gsi2": {PK: "e-ix", SK: "a"}}}
	put(t, s, it, store.NotExists())
	put(t, s, store.Item{Key: key("e", "keep"), ExpiresAt: exp.Add(time.Hour), Indexes: map[string]store.IndexKey{"gsi2": {PK: "e-ix", SK: "keep"}}}, store.Condition{})
	g := get(t, s, key("e", "a"))
	if !g.ExpiresAt.Equal(exp) {
		t.Fatalf("expiry read back as %v, want %v", g.ExpiresAt, exp)
	}
	if got := sks(queryAll(t, s, store.Query{Index: "gsi2", PK: "e-ix"})); got != "a,keep" {
		t.Fatalf("before expiry: %q", got)
	}
	time.Sleep(time.Until(exp) + 20*time.Millisecond)
	absent(t, s, key("e", "a"))
	if got := sks(queryAll(t, s, store.Query{PK: "e"})); got != "keep" {
		t.Fatalf("after expiry, base table: %q", got)
	}
	if got := sks(queryAll(t, s, store.Query{Index: "gsi2", PK: "e-ix"})); got != "keep" {
		t.Fatalf("after expiry, index: %q", got)
	}
	if got := put(t, s, item("e", "a", "again"), store.NotExists()); got.Version != 1 {
		t.Fatalf("recreated after expiry: v%d", got.Version)
	}
}
