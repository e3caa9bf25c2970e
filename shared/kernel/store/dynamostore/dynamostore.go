// Package dynamostore is the DynamoDB adapter of the store port
// (aws-sdk-go-v2), over the single table described in store/schema.go.
//
// DynamoDB cannot compute a whole-item put's new version, so a Put whose
// condition does not pin the old state (Always, IfExists, IfNumBelow) reads
// the item first, checks the condition on what it read, and writes guarded
// by the version it saw, retrying on a concurrent change.
//
// TTL: ExpiresAt is stored in the table's TTL attribute as epoch seconds,
// rounded up. DynamoDB deletes expired items only eventually, so every read
// filters them out and every condition treats them as absent; an Update of
// an expired item first removes it, so nothing of it carries over.
//
// Queries of a secondary index are eventually consistent on DynamoDB
// itself (GSIs offer nothing else); base-table reads are strongly
// consistent.
package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// pageSize is the page of a query whose Limit is 0.
const pageSize = 100

// maxRetries bounds optimistic retries under contention.
const maxRetries = 50

// Store is a DynamoDB-backed store.Store.
type Store struct {
	c     *dynamodb.Client
	table string
	now   func() time.Time
	meter meter // capacity.go
}

var _ store.Store = (*Store)(nil)

// New returns a store over table, which must exist (see CreateTable).
func New(c *dynamodb.Client, table string) *Store {
	return &Store{c: c, table: table, now: time.Now}
}

// Close implements store.Store; the client needs no closing.
func (s *Store) Close() error { return nil }

type av = types.AttributeValue

func str(v string) av { return &types.AttributeValueMemberS{Value: v} }
func num(n int64) av  { return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)} }
func bin(b []byte) av { return &types.AttributeValueMemberB{Value: b} }

func keyOf(k store.Key) map[string]av {
	return map[string]av{store.AttrPK: str(k.PK), store.AttrSK: str(k.SK)}
}

// expiry is t in epoch seconds, rounded up so that no item expires early.
func expiry(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}

func toAttrs(it store.Item, version int64) map[string]av {
	m := keyOf(it.Key)
	if len(it.Data) > 0 {
		m[store.AttrData] = bin(it.Data)
	}
	m[store.AttrVersion] = num(version)
	if !it.ExpiresAt.IsZero() {
		m[store.AttrTTL] = num(expiry(it.ExpiresAt))
	}
	for name, ik := range it.Indexes {
		if ik.PK != "" {
			m[store.IndexPKAttr(name)] = str(ik.PK)
			m[store.IndexSKAttr(name)] = str(ik.SK)
		}
	}
	for name, n := range it.Nums {
		m[store.NumPrefix+name] = num(n)
	}
	return m
}

func getNum(v av) int64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	return 0
}

func getStr(v av) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func fromAttrs(m map[string]av) store.Item {
	it := store.Item{Key: store.Key{PK: getStr(m[store.AttrPK]), SK: getStr(m[store.AttrSK])}, Data: []byte{}}
	if b, ok := m[store.AttrData].(*types.AttributeValueMemberB); ok {
		it.Data = b.Value
	}
	it.Version = getNum(m[store.AttrVersion])
	if v, ok := m[store.AttrTTL]; ok {
		it.ExpiresAt = time.Unix(getNum(v), 0).UTC()
	}
	for _, name := range store.IndexNames {
		if pk, ok := m[store.IndexPKAttr(name)]; ok {
			if it.Indexes == nil {
				it.Indexes = map[string]store.IndexKey{}
			}
			it.Indexes[name] = store.IndexKey{PK: getStr(pk), SK: getStr(m[store.IndexSKAttr(name)])}
		}
	}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, store.NumPrefix); ok {
			if it.Nums == nil {
				it.Nums = map[string]int64{}
			}
			it.Nums[name] = getNum(v)
		}
	}
	return it
}

func (s *Store) live(m map[string]av) bool {
	v, ok := m[store.AttrTTL]
	return !ok || s.now().Unix() < getNum(v)
}

// expr accumulates the placeholders of a condition or update expression.
type expr struct {
	names  map[string]string
	values map[string]av
	n      int
}

func newExpr() *expr { return &expr{names: map[string]string{}, values: map[string]av{}} }

func (e *expr) name(attr string) string {
	for k, v := range e.names {
		if v == attr {
			return k
		}
	}
	e.n++
	k := fmt.Sprintf("#n%d", e.n)
	e.names[k] = attr
	return k
}

func (e *expr) value(v av) string {
	e.n++
	k := fmt.Sprintf(":v%d", e.n)
	e.values[k] = v
	return k
}

func (e *expr) namesOrNil() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valuesOrNil() map[string]av {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// absent holds for a missing or expired item; alive for a live one.
func (s *Store) absent(e *expr) string {
	return fmt.Sprintf("(attribute_not_exists(%s) OR %s <= %s)", e.name(store.AttrPK), e.name(store.AttrTTL), e.value(num(s.now().Unix())))
}

func (s *Store) alive(e *expr) string {
	return fmt.Sprintf("(attribute_exists(%s) AND (attribute_not_exists(%s) OR %s > %s))",
		e.name(store.AttrPK), e.name(store.AttrTTL), e.name(store.AttrTTL), e.value(num(s.now().Unix())))
}

// condition renders c ("" for Always); c has been checked.
func (s *Store) condition(e *expr, c store.Condition) string {
	switch c.Kind {
	case store.IfNotExists:
		return s.absent(e)
	case store.IfExists:
		return s.alive(e)
	case store.IfVersion:
		return fmt.Sprintf("%s AND %s = %s", s.alive(e), e.name(store.AttrVersion), e.value(num(c.Version)))
	case store.IfNumBelow:
		n := e.name(store.NumPrefix + c.Num)
		return fmt.Sprintf("(%s OR attribute_not_exists(%s) OR %s < %s)", s.absent(e), n, n, e.value(num(c.Limit)))
	}
	return ""
}

// holds evaluates c on an item read from the table (nil when absent).
func (s *Store) holds(c store.Condition, m map[string]av) bool {
	exists := m != nil && s.live(m)
	switch c.Kind {
	case store.IfNotExists:
		return !exists
	case store.IfExists:
		return exists
	case store.IfVersion:
		return exists && getNum(m[store.AttrVersion]) == c.Version
	case store.IfNumBelow:
		return !exists || getNum(m[store.NumPrefix+c.Num]) < c.Limit
	}
	return true
}

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return store.ErrConditionFailed
	}
	// DynamoDB's own size check (an update can grow an item past it).
	if strings.Contains(err.Error(), "exceeded the maximum allowed size") {
		return fmt.Errorf("%w: %v", store.ErrTooLarge, err)
	}
	return err
}

// utf8OK refuses strings DynamoDB cannot store: the SDK would replace
// invalid UTF-8 on the wire, and two keys could collide.
func utf8OK(ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: %q is not valid UTF-8", store.ErrInvalid, s)
		}
	}
	return nil
}

func checkKey(k store.Key) error {
	if !store.ValidKey(k) {
		return fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	return utf8OK(k.PK, k.SK)
}

func checkItem(it store.Item) error {
	if err := store.CheckItem(it); err != nil {
		return err
	}
	if err := utf8OK(it.PK, it.SK); err != nil {
		return err
	}
	for _, ik := range it.Indexes {
		if err := utf8OK(ik.PK, ik.SK); err != nil {
			return err
		}
	}
	for name := range it.Nums {
		if err := utf8OK(name); err != nil {
			return err
		}
	}
	return nil
}

func checkUpdate(u store.Update) error {
	if err := store.CheckUpdate(u); err != nil {
		return err
	}
	if err := utf8OK(u.PK, u.SK, u.Cond.Num); err != nil {
		return err
	}
	for _, ik := range u.SetIndexes {
		if err := utf8OK(ik.PK, ik.SK); err != nil {
			return err
		}
	}
	for name := range u.Add {
		if err := utf8OK(name); err != nil {
			return err
		}
	}
	// A lower bound of the updated item's size: what the update sets.
	lower := store.Item{Key: u.Key, Data: u.SetData, Indexes: u.SetIndexes, Nums: u.Add}
	if u.SetExpiresAt != nil {
		lower.ExpiresAt = *u.SetExpiresAt
	}
	if store.Size(lower) > store.MaxItemSize {
		return store.ErrTooLarge
	}
	return nil
}

func (s *Store) raw(ctx context.Context, k store.Key) (map[string]av, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: keyOf(k), ConsistentRead: aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	if err != nil {
		return nil, err
	}
	found := int64(0)
	if len(out.Item) > 0 {
		found = 1
	}
	s.meter.record(func(c *Capacity) { c.GetItem++; c.ItemsRead += found }, one(out.ConsumedCapacity), true, readUnits(itemSize(out.Item), true))
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := checkKey(k); err != nil {
		return store.Item{}, err
	}
	m, err := s.raw(ctx, k)
	if err != nil {
		return store.Item{}, err
	}
	if m == nil || !s.live(m) {
		return store.Item{}, store.ErrNotFound
	}
	return fromAttrs(m), nil
}

// guardedPut builds a Put of it under c. When c does not pin the old state,
// it reads the item, checks c, and guards the write with what it saw;
// pinned reports whether the returned condition is c itself (a failure is
// then c failing, not a race).
func (s *Store) guardedPut(ctx context.Context, it store.Item, c store.Condition) (put *types.Put, version int64, pinned bool, err error) {
	e := newExpr()
	var cond string
	switch c.Kind {
	case store.IfNotExists:
		version, pinned = 1, true
		cond = s.condition(e, c)
	case store.IfVersion:
		version, pinned = c.Version+1, true
		cond = s.condition(e, c)
	default:
		m, err := s.raw(ctx, it.Key)
		if err != nil {
			return nil, 0, false, err
		}
		if !s.holds(c, m) {
			return nil, 0, false, store.ErrConditionFailed
		}
		version = 1
		if m != nil && s.live(m) {
			version = getNum(m[store.AttrVersion]) + 1
		}
		if m == nil {
			cond = fmt.Sprintf("attribute_not_exists(%s)", e.name(store.AttrPK))
		} else {
			cond = fmt.Sprintf("%s = %s", e.name(store.AttrVersion), e.value(m[store.AttrVersion]))
		}
	}
	return &types.Put{TableName: &s.table, Item: toAttrs(it, version), ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}, version, pinned, nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, it store.Item, c store.Condition) (store.Item, error) {
	if err := checkItem(it); err != nil {
		return store.Item{}, err
	}
	if err := store.CheckCond(c); err != nil {
		return store.Item{}, err
	}
	for i := 0; i < maxRetries; i++ {
		p, version, pinned, err := s.guardedPut(ctx, it, c)
		if err != nil {
			return store.Item{}, err
		}
		po, err := s.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
			ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		var cc *types.ConsumedCapacity
		if po != nil {
			cc = po.ConsumedCapacity
		}
		s.meter.record(func(c *Capacity) { c.PutItem++ }, one(cc), false, writeUnits(p.Item))
		err = mapErr(err)
		if err == nil {
			out := fromAttrs(p.Item)
			out.Version = version
			return out, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) || pinned {
			return store.Item{}, err
		}
	}
	return store.Item{}, fmt.Errorf("dynamostore: put %q/%q: too much contention", it.PK, it.SK)
}

// updateInput renders u with its condition AND a guard that the item is
// live or absent (an expired item must be removed first; see dropExpired).
func (s *Store) updateInput(u store.Update) *types.Update {
	e := newExpr()
	var set, add, remove []string
	v := e.name(store.AttrVersion)
	set = append(set, fmt.Sprintf("%s = if_not_exists(%s, %s) + %s", v, v, e.value(num(0)), e.value(num(1))))
	if u.SetData != nil {
		if len(u.SetData) == 0 {
			remove = append(remove, e.name(store.AttrData))
		} else {
			set = append(set, fmt.Sprintf("%s = %s", e.name(store.AttrData), e.value(bin(u.SetData))))
		}
	}
	for _, name := range sortedKeys(u.Add) {
		add = append(add, fmt.Sprintf("%s %s", e.name(store.NumPrefix+name), e.value(num(u.Add[name]))))
	}
	for _, name := range sortedKeys(u.SetIndexes) {
		ik := u.SetIndexes[name]
		if ik.PK == "" {
			remove = append(remove, e.name(store.IndexPKAttr(name)), e.name(store.IndexSKAttr(name)))
		} else {
			set = append(set, fmt.Sprintf("%s = %s", e.name(store.IndexPKAttr(name)), e.value(str(ik.PK))),
				fmt.Sprintf("%s = %s", e.name(store.IndexSKAttr(name)), e.value(str(ik.SK))))
		}
	}
	if u.SetExpiresAt != nil {
		if u.SetExpiresAt.IsZero() {
			remove = append(remove, e.name(store.AttrTTL))
		} else {
			set = append(set, fmt.Sprintf("%s = %s", e.name(store.AttrTTL), e.value(num(expiry(*u.SetExpiresAt)))))
		}
	}
	parts := []string{"SET " + strings.Join(set, ", ")}
	if len(add) > 0 {
		parts = append(parts, "ADD "+strings.Join(add, ", "))
	}
	if len(remove) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(remove, ", "))
	}
	guard := fmt.Sprintf("(attribute_not_exists(%s) OR attribute_not_exists(%s) OR %s > %s)",
		e.name(store.AttrPK), e.name(store.AttrTTL), e.name(store.AttrTTL), e.value(num(s.now().Unix())))
	if cond := s.condition(e, u.Cond); cond != "" {
		guard += " AND " + cond
	}
	return &types.Update{TableName: &s.table, Key: keyOf(u.Key), UpdateExpression: aws.String(strings.Join(parts, " ")),
		ConditionExpression: aws.String(guard), ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// dropExpired removes k's item if it is stored but expired (and still the
// version read), so that an update can start from nothing. It reports
// whether there was such an item: otherwise a failed guard was the
// caller's condition.
func (s *Store) dropExpired(ctx context.Context, k store.Key) (bool, error) {
	m, err := s.raw(ctx, k)
	if err != nil || m == nil || s.live(m) {
		return false, err
	}
	e := newExpr()
	do, err := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: keyOf(k),
		ConditionExpression:      aws.String(fmt.Sprintf("%s = %s", e.name(store.AttrVersion), e.value(m[store.AttrVersion]))),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
	s.recordDelete(do, writeUnits(m))
	if err = mapErr(err); err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return false, err
	}
	return true, nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, u store.Update) (store.Item, error) {
	if err := checkUpdate(u); err != nil {
		return store.Item{}, err
	}
	for i := 0; i < maxRetries; i++ {
		up := s.updateInput(u)
		out, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: up.TableName, Key: up.Key, UpdateExpression: up.UpdateExpression,
			ConditionExpression: up.ConditionExpression, ExpressionAttributeNames: up.ExpressionAttributeNames,
			ExpressionAttributeValues: up.ExpressionAttributeValues, ReturnValues: types.ReturnValueAllNew,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		var cc *types.ConsumedCapacity
		var attrs map[string]av
		if out != nil {
			cc, attrs = out.ConsumedCapacity, out.Attributes
		}
		if attrs == nil {
			attrs = up.Key
		}
		s.meter.record(func(c *Capacity) { c.UpdateItem++ }, one(cc), false, writeUnits(attrs))
		err = mapErr(err)
		if err == nil {
			return fromAttrs(out.Attributes), nil
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return store.Item{}, err
		}
		dropped, err := s.dropExpired(ctx, u.Key)
		if err != nil {
			return store.Item{}, err
		}
		if !dropped {
			return store.Item{}, store.ErrConditionFailed
		}
	}
	return store.Item{}, fmt.Errorf("dynamostore: update %q/%q: too much contention", u.PK, u.SK)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, k store.Key, c store.Condition) error {
	if err := checkKey(k); err != nil {
		return err
	}
	if err := store.CheckCond(c); err != nil {
		return err
	}
	e := newExpr()
	in := &dynamodb.DeleteItemInput{TableName: &s.table, Key: keyOf(k)}
	if cond := s.condition(e, c); cond != "" {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = aws.String(cond), e.names, e.values
	}
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityIndexes
	do, err := s.c.DeleteItem(ctx, in)
	s.recordDelete(do, 1)
	return mapErr(err)
}

func checkTx(ops []store.TxOp) error {
	if err := store.CheckTx(ops); err != nil {
		return err
	}
	for _, op := range ops {
		var err error
		switch op.Kind {
		case store.OpPut:
			err = checkItem(op.Item)
		case store.OpUpdate:
			err = checkUpdate(op.Update)
		default:
			err = checkKey(op.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Transact implements store.Store with TransactWriteItems.
func (s *Store) Transact(ctx context.Context, ops []store.TxOp) error {
	if err := checkTx(ops); err != nil {
		return err
	}
	for attempt := 0; attempt < maxRetries; attempt++ {
		items := make([]types.TransactWriteItem, len(ops))
		pinned := make([]bool, len(ops))
		for i, op := range ops {
			switch op.Kind {
			case store.OpPut:
				p, _, pin, err := s.guardedPut(ctx, op.Item, op.Cond)
				if errors.Is(err, store.ErrConditionFailed) {
					return &store.TxConditionError{Index: i}
				}
				if err != nil {
					return err
				}
				items[i], pinned[i] = types.TransactWriteItem{Put: p}, pin
			case store.OpUpdate:
				items[i], pinned[i] = types.TransactWriteItem{Update: s.updateInput(op.Update)}, true
			case store.OpDelete, store.OpCheck:
				e := newExpr()
				cond := s.condition(e, op.Cond)
				if op.Kind == store.OpCheck {
					if cond == "" {
						// A check needs an expression; this one always holds.
						cond = fmt.Sprintf("(attribute_exists(%s) OR attribute_not_exists(%s))", e.name(store.AttrPK), e.name(store.AttrPK))
					}
					items[i] = types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &s.table, Key: keyOf(op.Key),
						ConditionExpression: aws.String(cond), ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}}
				} else {
					d := &types.Delete{TableName: &s.table, Key: keyOf(op.Key)}
					if cond != "" {
						d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues = aws.String(cond), e.namesOrNil(), e.valuesOrNil()
					}
					items[i] = types.TransactWriteItem{Delete: d}
				}
				pinned[i] = true
			}
		}
		to, err := s.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items,
			ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
		var cc []types.ConsumedCapacity
		if to != nil {
			cc = to.ConsumedCapacity
		}
		s.meter.record(func(c *Capacity) { c.TransactWriteItems++; c.TxItems += int64(len(items)) }, cc, false, txWriteUnits(items))
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return mapErr(err)
		}
		failed, conflict := -1, false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if failed < 0 {
					failed = i
				}
			case "TransactionConflict":
				conflict = true
			}
		}
		switch {
		case failed >= 0 && ops[failed].Kind == store.OpUpdate:
			// The guard or the condition failed: an expired item blocks
			// the guard, and goes; otherwise the condition failed.
			dropped, err := s.dropExpired(ctx, ops[failed].Update.Key)
			if err != nil {
				return err
			}
			if !dropped {
				return &store.TxConditionError{Index: failed}
			}
		case failed >= 0 && pinned[failed]:
			return &store.TxConditionError{Index: failed}
		case failed < 0 && !conflict:
			return err
		}
		// A guard saw a concurrent change, transactions collided, or an
		// expired item was removed: try again.
	}
	return errors.New("dynamostore: transaction: too much contention")
}

// A cursor is the LastEvaluatedKey, whose attributes are all strings in
// this table, as base64 JSON.
func encodeCursor(lek map[string]av) string {
	m := make(map[string]string, len(lek))
	for k, v := range lek {
		m[k] = getStr(v)
	}
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string, q store.Query) (map[string]av, error) {
	bad := fmt.Errorf("%w: bad cursor", store.ErrInvalid)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, bad
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, bad
	}
	want := []string{store.AttrPK, store.AttrSK}
	pkAttr := store.AttrPK
	if q.Index != "" {
		pkAttr = store.IndexPKAttr(q.Index)
		want = append(want, pkAttr, store.IndexSKAttr(q.Index))
	}
	if len(m) != len(want) || m[pkAttr] != q.PK {
		return nil, bad
	}
	out := make(map[string]av, len(m))
	for _, k := range want {
		v, ok := m[k]
		if !ok || v == "" || !utf8.ValidString(v) {
			return nil, bad
		}
		out[k] = str(v)
	}
	return out, nil
}

// keyCond renders q's key condition; empty reports a range that holds no
// sort key (DynamoDB refuses empty strings and inverted ranges in key
// conditions, so those are decided here).
func keyCond(e *expr, q store.Query, pkAttr, skAttr string) (cond string, empty bool) {
	c := q.SK
	cond = fmt.Sprintf("%s = %s", e.name(pkAttr), e.value(str(q.PK)))
	// Every stored sort key is non-empty, so "" is below all of them.
	if c.A == "" {
		switch c.Op {
		case store.SKEqual, store.SKLess, store.SKLessEq:
			return "", true
		case store.SKBeginsWith, store.SKGreater, store.SKGreaterEq:
			return cond, false
		case store.SKBetween:
			if c.B == "" {
				return "", true
			}
			c = store.SKCond{Op: store.SKLessEq, A: c.B}
		}
	}
	if c.Op == store.SKBetween && c.A > c.B {
		return "", true
	}
	if c.Op == store.SKAny {
		return cond, false
	}
	sk := e.name(skAttr)
	switch c.Op {
	case store.SKEqual:
		cond += fmt.Sprintf(" AND %s = %s", sk, e.value(str(c.A)))
	case store.SKBeginsWith:
		cond += fmt.Sprintf(" AND begins_with(%s, %s)", sk, e.value(str(c.A)))
	case store.SKBetween:
		cond += fmt.Sprintf(" AND %s BETWEEN %s AND %s", sk, e.value(str(c.A)), e.value(str(c.B)))
	case store.SKLess:
		cond += fmt.Sprintf(" AND %s < %s", sk, e.value(str(c.A)))
	case store.SKLessEq:
		cond += fmt.Sprintf(" AND %s <= %s", sk, e.value(str(c.A)))
	case store.SKGreater:
		cond += fmt.Sprintf(" AND %s > %s", sk, e.value(str(c.A)))
	case store.SKGreaterEq:
		cond += fmt.Sprintf(" AND %s >= %s", sk, e.value(str(c.A)))
	}
	return cond, false
}

// Query implements store.Store. A page may be short (expired items are
// dropped after DynamoDB applies the limit); only an empty Next is the end.
func (s *Store) Query(ctx context.Context, q store.Query) (store.Page, error) {
	if q.PK == "" || !store.ValidIndex(q.Index) || q.Limit < 0 {
		return store.Page{}, fmt.Errorf("%w: a query needs a partition key, a known index and a limit >= 0", store.ErrInvalid)
	}
	if q.SK.Op < store.SKAny || q.SK.Op > store.SKGreaterEq {
		return store.Page{}, fmt.Errorf("%w: unknown sort-key operator %d", store.ErrInvalid, q.SK.Op)
	}
	if err := utf8OK(q.PK, q.SK.A, q.SK.B); err != nil {
		return store.Page{}, err
	}
	var lek map[string]av
	if q.Cursor != "" {
		var err error
		if lek, err = decodeCursor(q.Cursor, q); err != nil {
			return store.Page{}, err
		}
	}
	pkAttr, skAttr := store.AttrPK, store.AttrSK
	if q.Index != "" {
		pkAttr, skAttr = store.IndexPKAttr(q.Index), store.IndexSKAttr(q.Index)
	}
	e := newExpr()
	kc, empty := keyCond(e, q, pkAttr, skAttr)
	if empty {
		return store.Page{}, nil
	}
	limit := q.Limit
	if limit == 0 {
		limit = pageSize
	}
	in := &dynamodb.QueryInput{TableName: &s.table, KeyConditionExpression: aws.String(kc),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values, ScanIndexForward: aws.Bool(!q.Desc),
		Limit: aws.Int32(int32(min(limit, math.MaxInt32))), ExclusiveStartKey: lek,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
	if q.Index != "" {
		in.IndexName = aws.String(q.Index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	out, err := s.c.Query(ctx, in)
	if err != nil {
		return store.Page{}, err
	}
	size := 0
	for _, m := range out.Items {
		size += itemSize(m)
	}
	s.meter.record(func(c *Capacity) { c.Query++; c.ItemsRead += int64(len(out.Items)) }, one(out.ConsumedCapacity), true,
		readUnits(size, q.Index == ""))
	page := store.Page{Items: make([]store.Item, 0, len(out.Items))}
	for _, m := range out.Items {
		// Expired items are dropped here rather than by a FilterExpression:
		// the same read cost and page semantics, and emulators that count
		// filtered items wrongly (minidyn) page correctly.
		if s.live(m) {
			page.Items = append(page.Items, fromAttrs(m))
		}
	}
	if len(out.LastEvaluatedKey) > 0 {
		page.Next = encodeCursor(out.LastEvaluatedKey)
	}
	return page, nil
}

// CreateTable creates the table as store/schema.go describes it: string
// keys pk/sk, indexes gsi1…gsi5 on gsiNpk/gsiNsk projecting all attributes,
// on-demand billing. An existing table is fine. It waits until the table is
// active, then turns on TTL on the ttl attribute where the service offers
// it (emulators do not; reads filter expired items either way).
func CreateTable(ctx context.Context, c *dynamodb.Client, table string) error {
	attrs := []types.AttributeDefinition{
		{AttributeName: aws.String(store.AttrPK), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(store.AttrSK), AttributeType: types.ScalarAttributeTypeS},
	}
	var gsis []types.GlobalSecondaryIndex
	for _, name := range store.IndexNames {
		attrs = append(attrs,
			types.AttributeDefinition{AttributeName: aws.String(store.IndexPKAttr(name)), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String(store.IndexSKAttr(name)), AttributeType: types.ScalarAttributeTypeS})
		gsis = append(gsis, types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(store.IndexPKAttr(name)), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(store.IndexSKAttr(name)), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: attrs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(store.AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(store.AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
		BillingMode:            types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamostore: create table %s: %w", table, err)
	}
	if err := waitActive(ctx, c, table); err != nil {
		return err
	}
	// Best effort: TTL only reclaims space, and an enabled TTL answers
	// with an error too.
	_, _ = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(store.AttrTTL), Enabled: aws.Bool(true)}})
	return nil
}

func waitActive(ctx context.Context, c *dynamodb.Client, table string) error {
	var last string
	for i := 0; i < 600; i++ {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		// minidyn reports no status: its tables are usable at once.
		if err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "") {
			return nil
		}
		if err != nil {
			last = err.Error()
		} else if out.Table != nil {
			last = string(out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("dynamostore: table %s did not become active (%s)", table, last)
}

func (s *Store) recordDelete(out *dynamodb.DeleteItemOutput, estimate float64) {
	var cc *types.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	s.meter.record(func(c *Capacity) { c.DeleteItem++ }, one(cc), false, estimate)
}
