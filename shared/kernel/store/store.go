// Package store defines the DynamoDB-shaped key-value port that every domain
// package persists through. Adapters live in sub-packages (boltstore,
// dynamostore); the conformance suite in storetest is the definition of the
// semantics below, and every adapter must pass it.
//
// The model is a single table: items are addressed by a partition key (PK) and
// a sort key (SK), carry an opaque Data payload, a store-managed Version, an
// optional expiry, a few named numeric attributes for atomic counters, and up to
// NumIndexes secondary index keys (the table's GSIs).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxItemSize is the largest item the port accepts, in bytes, counted the way
// DynamoDB counts it (attribute names plus values). Domain packages put larger
// values into blob storage.
const MaxItemSize = 400 * 1024

// NumIndexes is how many secondary indexes the table has. They are named
// "gsi1" … "gsi5"; each has a string partition key and a string sort key.
const NumIndexes = 5

// IndexNames lists the secondary indexes in order.
var IndexNames = []string{"gsi1", "gsi2", "gsi3", "gsi4", "gsi5"}

var (
	// ErrNotFound: no live item has that key.
	ErrNotFound = errors.New("store: item not found")
	// ErrConditionFailed: a write's condition did not hold; nothing changed.
	ErrConditionFailed = errors.New("store: condition failed")
	// ErrTooLarge: the item exceeds MaxItemSize.
	ErrTooLarge = errors.New("store: item too large")
	// ErrInvalid: the request is malformed (empty key, unknown index, bad cursor…).
	ErrInvalid = errors.New("store: invalid request")
)

// TxConditionError reports which operation of a transaction failed its
// condition. It matches ErrConditionFailed with errors.Is.
type TxConditionError struct {
	Index int // position of the failing operation in the transaction
}

func (e *TxConditionError) Error() string {
	return fmt.Sprintf("store: transaction condition failed at operation %d", e.Index)
}

func (e *TxConditionError) Is(target error) bool { return target == ErrConditionFailed }

// Key addresses one item.
type Key struct {
	PK string
	SK string
}

// IndexKey is an item's key in one secondary index. An empty PK means the
// item is absent from that index (a sparse GSI). A present entry needs a
// non-empty SK too (DynamoDB refuses empty index key strings): adapters
// reject one without it as ErrInvalid.
type IndexKey struct {
	PK string
	SK string
}

// Item is one stored record.
type Item struct {
	Key
	// Indexes holds the item's keys in the secondary indexes, by index name.
	Indexes map[string]IndexKey
	// Data is the opaque payload (domain packages store JSON here).
	Data []byte
	// Nums are named integer attributes that Update can add to atomically.
	Nums map[string]int64
	// Version is managed by the store: 1 on create, +1 on every write.
	// It is ignored on input.
	Version int64
	// ExpiresAt is the TTL. Zero means never. An expired item is treated as
	// absent by every read and condition, even before it is physically removed.
	ExpiresAt time.Time
}

// CondKind selects a write condition.
type CondKind int

const (
	// Always: unconditional write.
	Always CondKind = iota
	// IfNotExists: the item must be absent (or expired).
	IfNotExists
	// IfExists: a live item must exist.
	IfExists
	// IfVersion: a live item must exist with exactly Condition.Version.
	IfVersion
	// IfNumBelow: a live item's Nums[Condition.Num] must be below
	// Condition.Limit, or the item/attribute must be absent (it counts as 0).
	IfNumBelow
)

// Condition guards a write.
type Condition struct {
	Kind    CondKind
	Version int64
	Num     string
	Limit   int64
}

// Convenience constructors.
func NotExists() Condition                 { return Condition{Kind: IfNotExists} }
func Exists() Condition                    { return Condition{Kind: IfExists} }
func HasVersion(v int64) Condition         { return Condition{Kind: IfVersion, Version: v} }
func NumBelow(n string, l int64) Condition { return Condition{Kind: IfNumBelow, Num: n, Limit: l} }

// Update changes parts of an item in place, creating it when absent (unless the
// condition forbids that). Fields left nil are untouched.
type Update struct {
	Key
	// Add adds each delta to the named numeric attribute (absent counts as 0).
	Add map[string]int64
	// SetData replaces the payload when non-nil.
	SetData []byte
	// SetIndexes replaces the given index keys; an empty IndexKey removes the
	// item from that index.
	SetIndexes map[string]IndexKey
	// SetExpiresAt replaces the TTL when non-nil (a zero time clears it).
	SetExpiresAt *time.Time
	Cond         Condition
}

// SKOp is a sort-key condition in a query.
type SKOp int

const (
	SKAny SKOp = iota
	SKEqual
	SKBeginsWith
	SKBetween // inclusive on both ends: A <= sk <= B
	SKLess
	SKLessEq
	SKGreater
	SKGreaterEq
)

// SKCond restricts the sort key of a query.
type SKCond struct {
	Op SKOp
	A  string
	B  string
}

// Query reads items of one partition in sort-key order.
type Query struct {
	// Index is "" for the base table, or one of IndexNames.
	Index string
	// PK is the partition key value (of the base table or of Index).
	PK string
	SK SKCond
	// Desc returns items in descending sort-key order.
	Desc bool
	// Limit caps the number of items returned; 0 means the adapter's page
	// size (100). A page may hold fewer items than Limit even when more
	// exist; only an empty Next means the end.
	Limit int
	// Cursor continues a previous query; it is the Next of the page before.
	Cursor string
}

// Page is one page of query results.
type Page struct {
	Items []Item
	// Next is an opaque cursor; empty when there are no more items.
	Next string
}

// OpKind is the kind of a transactional operation.
type OpKind int

const (
	OpPut OpKind = iota
	OpDelete
	OpCheck // condition only, no write
	OpUpdate
)

// TxOp is one operation of a transaction.
type TxOp struct {
	Kind   OpKind
	Item   Item   // OpPut
	Key    Key    // OpDelete, OpCheck
	Update Update // OpUpdate (its Cond is used)
	Cond   Condition
}

// MaxTxOps is the most operations one transaction may hold (DynamoDB's limit).
const MaxTxOps = 100

// Store is the port. All methods are safe for concurrent use.
type Store interface {
	// Get returns the live item with that key, or ErrNotFound.
	Get(ctx context.Context, key Key) (Item, error)
	// Put writes the whole item if cond holds, and returns it as stored
	// (with its new Version).
	Put(ctx context.Context, item Item, cond Condition) (Item, error)
	// Update applies u if u.Cond holds and returns the item as stored.
	Update(ctx context.Context, u Update) (Item, error)
	// Delete removes the item if cond holds. Deleting an absent item with
	// Always succeeds.
	Delete(ctx context.Context, key Key, cond Condition) error
	// Query reads one page of a partition.
	Query(ctx context.Context, q Query) (Page, error)
	// Transact applies every operation or none. A failed condition returns
	// a *TxConditionError. Two operations may not touch the same key.
	Transact(ctx context.Context, ops []TxOp) error
	// Close releases the adapter's resources.
	Close() error
}

// ValidKey reports whether k can be stored.
func ValidKey(k Key) bool { return k.PK != "" && k.SK != "" }

// ValidIndex reports whether name is "" or one of IndexNames.
func ValidIndex(name string) bool {
	if name == "" {
		return true
	}
	for _, n := range IndexNames {
		if n == name {
			return true
		}
	}
	return false
}

// Size estimates an item's stored size the way DynamoDB counts it; adapters
// reject items above MaxItemSize with ErrTooLarge so both behave alike.
func Size(it Item) int {
	// A number costs DynamoDB up to 11 bytes for 19 digits (one byte per
	// two digits, plus one); counting that keeps Size an upper bound.
	const numSize = 11
	n := 2 + len(it.PK) + 2 + len(it.SK) + 1 + len(it.Data) + 1 + numSize
	for name, k := range it.Indexes {
		if k.PK == "" {
			continue
		}
		n += len(name) + 2 + len(k.PK) + len(name) + 2 + len(k.SK)
	}
	for name := range it.Nums {
		n += len(NumPrefix) + len(name) + numSize
	}
	if !it.ExpiresAt.IsZero() {
		n += 3 + numSize
	}
	return n
}

// Live reports whether an item is unexpired at now.
func Live(it Item, now time.Time) bool {
	return it.ExpiresAt.IsZero() || now.Before(it.ExpiresAt)
}

// CheckItem validates an item for writing: a full key, known indexes, and
// at most MaxItemSize. Adapters call it so they reject the same items.
func CheckItem(it Item) error {
	if !ValidKey(it.Key) {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if err := checkIndexes(it.Indexes); err != nil {
		return err
	}
	if Size(it) > MaxItemSize {
		return ErrTooLarge
	}
	return nil
}

func checkIndexes(m map[string]IndexKey) error {
	for name, k := range m {
		if name == "" || !ValidIndex(name) {
			return fmt.Errorf("%w: unknown index %q", ErrInvalid, name)
		}
		if k.PK != "" && k.SK == "" {
			return fmt.Errorf("%w: index %s entry without a sort key", ErrInvalid, name)
		}
	}
	return nil
}

// CheckCond validates a condition's kind.
func CheckCond(c Condition) error {
	if c.Kind < Always || c.Kind > IfNumBelow {
		return fmt.Errorf("%w: unknown condition kind %d", ErrInvalid, c.Kind)
	}
	return nil
}

// CheckUpdate validates an update: a full key, known index keys, a known
// condition, and a payload that fits on its own. (Whether the updated item
// fits, only the adapter can tell.)
func CheckUpdate(u Update) error {
	if !ValidKey(u.Key) {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if err := checkIndexes(u.SetIndexes); err != nil {
		return err
	}
	if Size(Item{Key: u.Key, Data: u.SetData}) > MaxItemSize {
		return ErrTooLarge
	}
	return CheckCond(u.Cond)
}

// CheckTx validates a transaction: 1 to MaxTxOps operations of known kinds,
// valid items and keys, no key touched twice.
func CheckTx(ops []TxOp) error {
	if len(ops) == 0 || len(ops) > MaxTxOps {
		return fmt.Errorf("%w: a transaction holds 1 to %d operations", ErrInvalid, MaxTxOps)
	}
	seen := make(map[Key]bool, len(ops))
	for _, op := range ops {
		k := op.Key
		switch op.Kind {
		case OpPut:
			if err := CheckItem(op.Item); err != nil {
				return err
			}
			if err := CheckCond(op.Cond); err != nil {
				return err
			}
			k = op.Item.Key
		case OpUpdate:
			if err := CheckUpdate(op.Update); err != nil {
				return err
			}
			k = op.Update.Key
		case OpDelete, OpCheck:
			if err := CheckCond(op.Cond); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: unknown operation kind %d", ErrInvalid, op.Kind)
		}
		if !ValidKey(k) {
			return fmt.Errorf("%w: empty key", ErrInvalid)
		}
		if seen[k] {
			return fmt.Errorf("%w: two operations on %q/%q", ErrInvalid, k.PK, k.SK)
		}
		seen[k] = true
	}
	return nil
}
