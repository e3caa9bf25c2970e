package dynamostore

import (
	"math"
	"strings"
	"sync"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Capacity is what a Store asked of DynamoDB: calls per operation, items
// read, and the read and write capacity units consumed (benchmarks and
// cost reports read it through Store.Capacity).
type Capacity struct {
	GetItem, PutItem, UpdateItem, DeleteItem, Query, TransactWriteItems int64
	// TxItems counts the items of the transactions.
	TxItems int64
	// ItemsRead counts the items GetItem and Query returned.
	ItemsRead int64
	// ReadUnits and WriteUnits are the units the service reported
	// (ReturnConsumedCapacity INDEXES: the table and its indexes). For a
	// call answered without a report (the emulators, or dynalite's table
	// only figure for a write) they are the units DynamoDB's published
	// rules charge for the item sizes involved; Estimated counts those
	// calls. The estimate is a lower bound for updates and deletes, whose
	// old item the call does not see (DynamoDB charges the larger of the
	// old and new item, and both index entries when an index key moves).
	ReadUnits, WriteUnits float64
	Estimated             int64
}

// Sub returns c minus o (the consumption between two readings).
func (c Capacity) Sub(o Capacity) Capacity {
	return Capacity{
		GetItem: c.GetItem - o.GetItem, PutItem: c.PutItem - o.PutItem, UpdateItem: c.UpdateItem - o.UpdateItem,
		DeleteItem: c.DeleteItem - o.DeleteItem, Query: c.Query - o.Query, TransactWriteItems: c.TransactWriteItems - o.TransactWriteItems,
		TxItems: c.TxItems - o.TxItems, ItemsRead: c.ItemsRead - o.ItemsRead,
		ReadUnits: c.ReadUnits - o.ReadUnits, WriteUnits: c.WriteUnits - o.WriteUnits, Estimated: c.Estimated - o.Estimated,
	}
}

// Calls is the number of DynamoDB requests.
func (c Capacity) Calls() int64 {
	return c.GetItem + c.PutItem + c.UpdateItem + c.DeleteItem + c.Query + c.TransactWriteItems
}

// Capacity returns what the store consumed since it was made (or reset).
func (s *Store) Capacity() Capacity {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	return s.meter.c
}

// ResetCapacity zeroes the counters.
func (s *Store) ResetCapacity() {
	s.meter.mu.Lock()
	s.meter.c = Capacity{}
	s.meter.mu.Unlock()
}

type meter struct {
	mu sync.Mutex
	c  Capacity
}

// record adds one call: f counts it, units are the reported consumption
// (nil: none reported) and estimate what the rules charge.
func (m *meter) record(f func(*Capacity), reported []types.ConsumedCapacity, read bool, estimate float64) {
	units, ok := 0.0, false
	for _, r := range reported {
		if r.CapacityUnits != nil {
			units += *r.CapacityUnits
			ok = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.c)
	if !ok {
		units = estimate
		m.c.Estimated++
	}
	if read {
		m.c.ReadUnits += units
	} else {
		m.c.WriteUnits += units
	}
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// itemSize is an item's size by DynamoDB's rules: each attribute's name
// plus its value.
func itemSize(m map[string]av) int {
	n := 0
	for k, v := range m {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v av) int {
	switch t := v.(type) {
	case *types.AttributeValueMemberS:
		return len(t.Value)
	case *types.AttributeValueMemberB:
		return len(t.Value)
	case *types.AttributeValueMemberN:
		digits := len(strings.Trim(strings.TrimLeft(strings.ReplaceAll(t.Value, ".", ""), "-"), "0"))
		return (digits+1)/2 + 1
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, x := range t.Value {
			n += len(k) + valueSize(x) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, x := range t.Value {
			n += valueSize(x) + 1
		}
		return n
	}
	return 0
}

// readUnits: 4 KB units, at least one, half for an eventually consistent
// read.
func readUnits(size int, consistent bool) float64 {
	u := math.Max(1, math.Ceil(float64(size)/4096))
	if !consistent {
		u /= 2
	}
	return u
}

// writeUnits charges an item written: 1 KB units on the table, and on each
// index the item is in (its entry: the item, all attributes projected,
// plus 100 bytes).
func writeUnits(m map[string]av) float64 {
	size := itemSize(m)
	u := math.Max(1, math.Ceil(float64(size)/1024))
	for _, name := range store.IndexNames {
		if _, ok := m[store.IndexPKAttr(name)]; ok {
			u += math.Ceil(float64(size+100) / 1024)
		}
	}
	return u
}

// txWriteUnits charges a transaction: twice the units of each item.
func txWriteUnits(items []types.TransactWriteItem) float64 {
	u := 0.0
	for _, it := range items {
		switch {
		case it.Put != nil:
			u += 2 * writeUnits(it.Put.Item)
		case it.Update != nil:
			size := itemSize(it.Update.Key) + itemSize(it.Update.ExpressionAttributeValues)
			u += 2 * math.Max(1, math.Ceil(float64(size)/1024))
		default:
			u += 2
		}
	}
	return u
}
