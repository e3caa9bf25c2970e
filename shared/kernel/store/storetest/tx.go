package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

func wantTxFailure(t *testing.T, what string, err error, index int) {
	t.Helper()
	var tce *store.TxConditionError
	if !errors.As(err, &tce) || tce.Index != index {
		t.Fatalf("%s: want *TxConditionError at %d, got %v", what, index, err)
	}
	if !errors.Is(err, store.ErrConditionFailed) {
		t.Fatalf("%s: a TxConditionError must match ErrConditionFailed", what)
	}
}

// Transactions apply every operation or none, and report which condition
// failed.
func testTransactions(t *testing.T, s store.Store) {
	put(t, s, item("t", "exists", "e"), store.Condition{})
	put(t, s, store.Item{Key: key("t", "ctr"), Nums: map[string]int64{"n": 1}}, store.Condition{})
	put(t, s, item("t", "doomed", "d"), store.Condition{})
	snapshot := func() string {
		var out string
		for _, it := range queryAll(t, s, store.Query{PK: "t"}) {
			out += show(it)
		}
		return out
	}
	before := snapshot()

	newItem := item("t", "new", "n")
	newItem.Indexes = map[string]store.IndexKey{"gsi1": {PK: "tx-ix", SK: "new"}}
	okOps := func() []store.TxOp {
		return []store.TxOp{
			{Kind: store.OpPut, Item: newItem, Cond: store.NotExists()},
			{Kind: store.OpDelete, Key: key("t", "doomed"), Cond: store.HasVersion(1)},
			{Kind: store.OpUpdate, Update: store.Update{Key: key("t", "ctr"), Add: map[string]int64{"n": 5}, Cond: store.NumBelow("n", 2)}},
			{Kind: store.OpCheck, Key: key("t", "exists"), Cond: store.HasVersion(1)},
			{Kind: store.OpUpdate, Update: store.Update{Key: key("t", "created"), SetData: []byte("c"), Cond: store.NotExists()}},
		}
	}
	// Each operation failing in turn cancels the whole transaction.
	failing := []store.TxOp{
		{Kind: store.OpPut, Item: newItem, Cond: store.Exists()},
		{Kind: store.OpDelete, Key: key("t", "doomed"), Cond: store.HasVersion(2)},
		{Kind: store.OpUpdate, Update: store.Update{Key: key("t", "ctr"), Add: map[string]int64{"n": 5}, Cond: store.NumBelow("n", 1)}},
		{Kind: store.OpCheck, Key: key("t", "exists"), Cond: store.NotExists()},
		{Kind: store.OpUpdate, Update: store.Update{Key: key("t", "created"), SetData: []byte("c"), Cond: store.Exists()}},
	}
	for i := range failing {
		ops := okOps()
		ops[i] = failing[i]
		wantTxFailure(t, fmt.Sprintf("operation %d fails", i), s.Transact(ctx, ops), i)
		if now := snapshot(); now != before {
			t.Fatalf("a cancelled transaction changed the table:\n%s\n%s", before, now)
		}
		if got := queryAll(t, s, store.Query{Index: "gsi1", PK: "tx-ix"}); len(got) != 0 {
			t.Fatal("a cancelled transaction left an index entry")
		}
	}
	// Several failing: some failing operation is reported.
	ops := okOps()
	ops[1], ops[3] = failing[1], failing[3]
	err := s.Transact(ctx, ops)
	var tce *store.TxConditionError
	if !errors.As(err, &tce) || (tce.Index != 1 && tce.Index != 3) {
		t.Fatalf("two failing operations: %v", err)
	}

	if err := s.Transact(ctx, okOps()); err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, key("t", "new")); g.Version != 1 || string(g.Data) != "n" {
		t.Fatalf("put in transaction: %s", show(g))
	}
	absent(t, s, key("t", "doomed"))
	if g := get(t, s, key("t", "ctr")); g.Nums["n"] != 6 || g.Version != 2 {
		t.Fatalf("update in transaction: %s", show(g))
	}
	if g := get(t, s, key("t", "exists")); g.Version != 1 {
		t.Fatalf("a check must not write: %s", show(g))
	}
	if g := get(t, s, key("t", "created")); g.Version != 1 || string(g.Data) != "c" {
		t.Fatalf("update creating in transaction: %s", show(g))
	}
	if got := sks(queryAll(t, s, store.Query{Index: "gsi1", PK: "tx-ix"})); got != "new" {
		t.Fatalf("index entry of a put in a transaction: %q", got)
	}

	// Unconditional operations: a put replaces and bumps the version.
	err = s.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: item("t", "exists", "e2")},
		{Kind: store.OpPut, Item: item("t", "fresh", "f")},
		{Kind: store.OpDelete, Key: key("t", "never-was")},
		{Kind: store.OpCheck, Key: key("t", "never-was-either")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if g := get(t, s, key("t", "exists")); g.Version != 2 || string(g.Data) != "e2" {
		t.Fatalf("unconditional put in transaction: %s", show(g))
	}
	if g := get(t, s, key("t", "fresh")); g.Version != 1 {
		t.Fatalf("unconditional create in transaction: %s", show(g))
	}

	// The largest transaction.
	var big []store.TxOp
	for i := 0; i < store.MaxTxOps; i++ {
		big = append(big, store.TxOp{Kind: store.OpPut, Item: item("tbig", fmt.Sprintf("%03d", i), ""), Cond: store.NotExists()})
	}
	if err := s.Transact(ctx, big); err != nil {
		t.Fatalf("%d operations: %v", store.MaxTxOps, err)
	}
	if got := queryAll(t, s, store.Query{PK: "tbig"}); len(got) != store.MaxTxOps {
		t.Fatalf("%d items after the largest transaction", len(got))
	}
}

// Malformed transactions are refused before anything is written.
func testTransactionsInvalid(t *testing.T, s store.Store) {
	put(t, s, item("ti", "a", "a"), store.Condition{})
	good := store.TxOp{Kind: store.OpPut, Item: item("ti", "new", "")}
	var tooMany []store.TxOp
	for i := 0; i <= store.MaxTxOps; i++ {
		tooMany = append(tooMany, store.TxOp{Kind: store.OpPut, Item: item("ti", fmt.Sprintf("m%03d", i), "")})
	}
	cases := []struct {
		name string
		ops  []store.TxOp
		want error
	}{
		{"empty", nil, store.ErrInvalid},
		{"too many", tooMany, store.ErrInvalid},
		{"same key twice", []store.TxOp{good, {Kind: store.OpCheck, Key: key("ti", "new")}}, store.ErrInvalid},
		{"same key, put and update", []store.TxOp{good, {Kind: store.OpUpdate, Update: store.Update{Key: key("ti", "new")}}}, store.ErrInvalid},
		{"empty key", []store.TxOp{good, {Kind: store.OpDelete, Key: key("ti", "")}}, store.ErrInvalid},
		{"empty put key", []store.TxOp{good, {Kind: store.OpPut, Item: item("", "x", "")}}, store.ErrInvalid},
		{"unknown kind", []store.TxOp{good, {Kind: store.OpKind(42), Key: key("ti", "a")}}, store.ErrInvalid},
		{"unknown index", []store.TxOp{good, {Kind: store.OpUpdate, Update: store.Update{Key: key("ti", "a"), SetIndexes: map[string]store.IndexKey{"gsi0": {PK: "x", SK: "y"}}}}}, store.ErrInvalid},
		{"bad condition", []store.TxOp{good, {Kind: store.OpCheck, Key: key("ti", "a"), Cond: store.Condition{Kind: 77}}}, store.ErrInvalid},
		{"too large", []store.TxOp{good, {Kind: store.OpPut, Item: store.Item{Key: key("ti", "big"), Data: make([]byte, store.MaxItemSize)}}}, store.ErrTooLarge},
		{"too large update", []store.TxOp{good, {Kind: store.OpUpdate, Update: store.Update{Key: key("ti", "a"), SetData: make([]byte, store.MaxItemSize)}}}, store.ErrTooLarge},
	}
	for _, c := range cases {
		wantErr(t, c.name, s.Transact(ctx, c.ops), c.want)
		absent(t, s, key("ti", "new"))
		if got := queryAll(t, s, store.Query{PK: "ti"}); len(got) != 1 || got[0].Version != 1 {
			t.Fatalf("%s: a refused transaction wrote: %q", c.name, sks(got))
		}
	}
}

// Inside a transaction an expired item is absent too.
func testTransactionsTTL(t *testing.T, s store.Store) {
	for _, sk := range []string{"check", "put", "upd", "del"} {
		put(t, s, expiredItem("tt", sk), store.Condition{})
	}
	wantTxFailure(t, "check exists on expired", s.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: item("tt", "other", "")},
		{Kind: store.OpCheck, Key: key("tt", "check"), Cond: store.Exists()},
	}), 1)
	wantTxFailure(t, "update exists on expired", s.Transact(ctx, []store.TxOp{
		{Kind: store.OpUpdate, Update: store.Update{Key: key("tt", "upd"), Add: map[string]int64{"n": 1}, Cond: store.Exists()}},
	}), 0)
	absent(t, s, key("tt", "other"))
	err := s.Transact(ctx, []store.TxOp{
		{Kind: store.OpCheck, Key: key("tt", "check"), Cond: store.NotExists()},
		{Kind: store.OpPut, Item: item("tt", "put", "p"), Cond: store.NotExists()},
		{Kind: store.OpUpdate, Update: store.Update{Key: key("tt", "upd"), Add: map[string]int64{"n": 1}, Cond: store.NumBelow("n", 2)}},
		{Kind: store.OpDelete, Key: key("tt", "del"), Cond: store.NotExists()},
	})
	if err != nil {
		t.Fatal(err)
	}
	sameItem(t, "put over expired in a transaction", get(t, s, key("tt", "put")), item("tt", "put", "p"))
	g := get(t, s, key("tt", "upd"))
	sameItem(t, "update over expired in a transaction", g, store.Item{Key: key("tt", "upd"), Nums: map[string]int64{"n": 1}})
	if g.Version != 1 {
		t.Fatalf("update over expired in a transaction: v%d", g.Version)
	}
	absent(t, s, key("tt", "check"))
	absent(t, s, key("tt", "del"))
	if got := queryAll(t, s, store.Query{Index: "gsi1", PK: "ttl-ix"}); len(got) != 0 {
		t.Fatalf("expired index entries visible: %q", sks(got))
	}
}
