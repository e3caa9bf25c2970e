package dynamostore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/dynamostore"
)

// The store counts its calls and the capacity they consume: reported by
// the service where it reports it (dynalite does for single-item calls),
// else by DynamoDB's rules from the item sizes (minidyn reports nothing).
func TestCapacityAccounting(t *testing.T) {
	t.Run("minidyn", func(t *testing.T) { capacityAccounting(t, newTable(t, client(minidynEndpoint(t))), true) })
	t.Run("dynalite", func(t *testing.T) { capacityAccounting(t, newTable(t, client(dynaliteEndpoint(t))), false) })
}

func capacityAccounting(t *testing.T, s *dynamostore.Store, tx bool) {
	ctx := context.Background()
	small := store.Item{Key: store.Key{PK: "p", SK: "small"}, Data: []byte("x")}
	big := store.Item{Key: store.Key{PK: "p", SK: "big"}, Data: []byte(strings.Repeat("y", 9000)),
		Indexes: map[string]store.IndexKey{"gsi1": {PK: "i", SK: "big"}}}
	var checked dynamostore.Capacity // what verifying a refused create read
	for _, it := range []store.Item{small, big} {
		if _, err := s.Put(ctx, it, store.NotExists()); err != nil {
			// Twice in full -race runs (never alone) minidyn answered a first
			// create into a fresh table "condition failed": most likely the
			// SDK retried a request minidyn had already applied. The store
			// counted one PutItem either way; go on only if the item is ours.
			before := s.Capacity()
			got, gerr := s.Get(ctx, it.Key)
			d := s.Capacity().Sub(before)
			checked.GetItem, checked.ItemsRead, checked.ReadUnits, checked.Estimated = checked.GetItem+d.GetItem,
				checked.ItemsRead+d.ItemsRead, checked.ReadUnits+d.ReadUnits, checked.Estimated+d.Estimated
			if !errors.Is(err, store.ErrConditionFailed) || gerr != nil || string(got.Data) != string(it.Data) || got.Version != 1 {
				t.Fatal(err, gerr)
			}
			t.Logf("put %s: %v, but the item is the one written (a retried request)", it.SK, err)
		}
	}
	c := s.Capacity().Sub(checked)
	if c.PutItem != 2 || c.Calls() != 2 || c.WriteUnits < 2 || c.ReadUnits != 0 {
		t.Fatalf("after two puts: %+v", c)
	}
	s.ResetCapacity()
	if _, err := s.Get(ctx, small.Key); err != nil {
		t.Fatal(err)
	}
	c = s.Capacity()
	if c.GetItem != 1 || c.ItemsRead != 1 || c.ReadUnits != 1 || c.WriteUnits != 0 {
		t.Fatalf("a strongly consistent read of a small item is one unit: %+v", c)
	}
	before := c
	if _, err := s.Get(ctx, big.Key); err != nil {
		t.Fatal(err)
	}
	if d := s.Capacity().Sub(before); d.GetItem != 1 || d.ReadUnits != 3 {
		t.Fatalf("a 9 KB item is three 4 KB units: %+v", d)
	}
	before = s.Capacity()
	if _, err := s.Query(ctx, store.Query{PK: "p"}); err != nil {
		t.Fatal(err)
	}
	if d := s.Capacity().Sub(before); d.Query != 1 || d.ItemsRead != 2 || d.ReadUnits < 3 {
		t.Fatalf("query of both: %+v", d)
	}
	if !tx {
		return
	}
	before = s.Capacity()
	err := s.Transact(ctx, []store.TxOp{
		{Kind: store.OpPut, Item: store.Item{Key: store.Key{PK: "p", SK: "t1"}, Data: []byte("z")}, Cond: store.NotExists()},
		{Kind: store.OpCheck, Key: small.Key, Cond: store.Exists()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Capacity().Sub(before); d.TransactWriteItems != 1 || d.TxItems != 2 || d.WriteUnits != 4 {
		t.Fatalf("a transaction of two small items is 2×2 units: %+v", d)
	}
}
