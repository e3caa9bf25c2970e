package storetest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// bigItem is an item with every kind of attribute whose store.Size is
// exactly size.
func bigItem(t *testing.T, k store.Key, size int) store.Item {
	it := store.Item{
		Key:       k,
		Nums:      map[string]int64{"count": 1 << 40},
		Indexes:   map[string]store.IndexKey{"gsi1": {PK: "big", SK: k.SK}},
		ExpiresAt: time.Now().Add(time.Hour),
	}
	n := size - store.Size(it)
	if n < 0 {
		t.Fatalf("size %d is below the item's overhead", size)
	}
	it.Data = []byte(strings.Repeat("x", n))
	if store.Size(it) != size {
		t.Fatalf("sized item: %d, want %d", store.Size(it), size)
	}
	return it
}

// Items up to store.MaxItemSize (as store.Size counts) are stored; larger
// ones are refused with ErrTooLarge and change nothing.
func testItemSizeLimit(t *testing.T, s store.Store) {
	max := bigItem(t, key("big", "max"), store.MaxItemSize)
	got := put(t, s, max, store.NotExists())
	if len(got.Data) != len(max.Data) {
		t.Fatalf("returned %d bytes", len(got.Data))
	}
	sameItem(t, "an item of exactly MaxItemSize", get(t, s, max.Key), max)

	over := bigItem(t, key("big", "over"), store.MaxItemSize+1)
	_, err := s.Put(ctx, over, store.Condition{})
	wantErr(t, "one byte over the limit", err, store.ErrTooLarge)
	absent(t, s, over.Key)

	// Replacing an item with a too-large one keeps the old one.
	put(t, s, item("big", "small", "small"), store.Condition{})
	_, err = s.Put(ctx, bigItem(t, key("big", "small"), store.MaxItemSize+100), store.Condition{})
	wantErr(t, "too-large replacement", err, store.ErrTooLarge)
	if g := get(t, s, key("big", "small")); string(g.Data) != "small" || g.Version != 1 {
		t.Fatalf("too-large replacement changed the item: %s", show(g))
	}

	// An update that makes an item too large is refused too.
	_, err = s.Update(ctx, store.Update{Key: key("big", "small"), SetData: make([]byte, store.MaxItemSize)})
	wantErr(t, "too-large update", err, store.ErrTooLarge)
	if g := get(t, s, key("big", "small")); string(g.Data) != "small" || g.Version != 1 {
		t.Fatalf("too-large update changed the item: %s", show(g))
	}
	_, err = s.Update(ctx, store.Update{Key: key("big", "new"), SetData: make([]byte, store.MaxItemSize)})
	wantErr(t, "too-large update creating an item", err, store.ErrTooLarge)
	absent(t, s, key("big", "new"))
}

func testInvalidRequests(t *testing.T, s store.Store) {
	inv := func(what string, err error) {
		t.Helper()
		wantErr(t, what, err, store.ErrInvalid)
		if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: %v also matches another error", what, err)
		}
	}
	put(t, s, item("v", "a", "a"), store.Condition{})
	for _, k := range []store.Key{{}, {PK: "v"}, {SK: "a"}} {
		_, err := s.Get(ctx, k)
		inv("get with an empty key part", err)
		_, err = s.Put(ctx, store.Item{Key: k}, store.Condition{})
		inv("put with an empty key part", err)
		_, err = s.Update(ctx, store.Update{Key: k, Add: map[string]int64{"n": 1}})
		inv("update with an empty key part", err)
		inv("delete with an empty key part", s.Delete(ctx, k, store.Condition{}))
	}

	bad := func(c store.Condition) {
		t.Helper()
		_, err := s.Put(ctx, item("v", "a", "x"), c)
		inv("put with a bad condition", err)
		_, err = s.Update(ctx, store.Update{Key: key("v", "a"), SetData: []byte("x"), Cond: c})
		inv("update with a bad condition", err)
		inv("delete with a bad condition", s.Delete(ctx, key("v", "a"), c))
	}
	bad(store.Condition{Kind: store.CondKind(99)})
	bad(store.Condition{Kind: -1})

	for _, idx := range []map[string]store.IndexKey{
		{"gsi6": {PK: "x", SK: "y"}},
		{"GSI1": {PK: "x", SK: "y"}},
		{"": {PK: "x", SK: "y"}},
		{"gsi1": {PK: "x"}}, // an index entry needs a sort key
	} {
		_, err := s.Put(ctx, store.Item{Key: key("v", "idx"), Indexes: idx}, store.Condition{})
		inv("put with a bad index key", err)
		_, err = s.Update(ctx, store.Update{Key: key("v", "a"), SetIndexes: idx})
		inv("update with a bad index key", err)
	}
	absent(t, s, key("v", "idx"))
	if g := get(t, s, key("v", "a")); string(g.Data) != "a" || g.Version != 1 {
		t.Fatalf("invalid requests changed the item: %s", show(g))
	}

	// Queries.
	for _, q := range []store.Query{
		{},
		{Index: "gsi1"},
		{PK: "v", Index: "gsi9"},
		{PK: "v", Index: "GSI1"},
		{PK: "v", Index: "pk"},
		{PK: "v", Limit: -1},
		{PK: "v", SK: store.SKCond{Op: store.SKOp(99)}},
		{PK: "v", SK: store.SKCond{Op: -1}},
		{PK: "v", Cursor: "!!not base64!!"},
		{PK: "v", Cursor: base64.RawURLEncoding.EncodeToString([]byte("garbage"))},
		{PK: "v", Cursor: base64.RawURLEncoding.EncodeToString([]byte(`{"pk":"v"}`))},
		{PK: "v", Cursor: "e30"}, // "{}"
	} {
		_, err := s.Query(ctx, q)
		inv(fmt.Sprintf("query %+v", q), err)
	}
	// A cursor of one partition is refused in another.
	for i := 0; i < 3; i++ {
		put(t, s, item("v", string(rune('b'+i)), ""), store.Condition{})
	}
	p, err := s.Query(ctx, store.Query{PK: "v", Limit: 1})
	if err != nil || p.Next == "" {
		t.Fatalf("paging: %v %+v", err, p)
	}
	_, err = s.Query(ctx, store.Query{PK: "w", Cursor: p.Next})
	inv("cursor of another partition", err)
}
