// Package dynamostore is the DynamoDB adapter of the store port
// (aws-sdk-go-v2), over the single table described in store/schema.go.
//
// DynamoDB cannot compute a whole-item put's new version, so a Put whose
// condition does not already pin the old state (IfNotExists, IfVersion)
// reads the item first, checks the condition on what it read, and writes
// guarded by the version it saw, retrying on a concurrent change. TTL is
// enforced at read time and inside every condition (DynamoDB deletes
// expired items only eventually).
package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/store"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Store is a DynamoDB-backed store.Store.
type Store struct {
	c     *dynamodb.Client
	table string
	now   func() time.Time
}

var _ store.Store = (*Store)(nil)

// New returns a store over table.
func New(c *dynamodb.Client, table string) *Store {
	return &Store{c: c, table: table, now: time.Now}
}

// SetClock replaces the clock (tests of TTL).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Close implements store.Store; the client needs no closing.
func (s *Store) Close() error { return nil }

type av = types.AttributeValue

func str(v string) av { return &types.AttributeValueMemberS{Value: v} }
func num(n int64) av  { return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)} }
func bin(b []byte) av { return &types.AttributeValueMemberB{Value: b} }
func keyOf(k store.Key) map[string]av {
	return map[string]av{store.AttrPK: str(k.PK), store.AttrSK: str(k.SK)}
}

// expiry stores ExpiresAt as epoch seconds, rounded up so an item is never
// treated as expired early.
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
		if strings.HasPrefix(k, store.NumPrefix) {
			if it.Nums == nil {
				it.Nums = map[string]int64{}
			}
			it.Nums[strings.TrimPrefix(k, store.NumPrefix)] = getNum(v)
		}
	}
	return it
}

func (s *Store) live(m map[string]av) bool {
	v, ok := m[store.AttrTTL]
	return !ok || s.now().Unix() < getNum(v)
}

// expr accumulates a condition or update expression's placeholders.
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

// condition renders c ("" for Always).
func (s *Store) condition(e *expr, c store.Condition) (string, error) {
	switch c.Kind {
	case store.Always:
		return "", nil
	case store.IfNotExists:
		return s.absent(e), nil
	case store.IfExists:
		return s.alive(e), nil
	case store.IfVersion:
		return fmt.Sprintf("%s AND %s = %s", s.alive(e), e.name(store.AttrVersion), e.value(num(c.Version))), nil
	case store.IfNumBelow:
		n := e.name(store.NumPrefix + c.Num)
		return fmt.Sprintf("(%s OR attribute_not_exists(%s) OR %s < %s)", s.absent(e), n, n, e.value(num(c.Limit))), nil
	}
	return "", fmt.Errorf("%w: unknown condition kind %d", store.ErrInvalid, c.Kind)
}

// holds evaluates c on an item read from the table (nil when absent).
func (s *Store) holds(c store.Condition, m map[string]av) bool {
	exists := m != nil && s.live(m)
	switch c.Kind {
	case store.Always:
		return true
	case store.IfNotExists:
		return !exists
	case store.IfExists:
		return exists
	case store.IfVersion:
		return exists && getNum(m[store.AttrVersion]) == c.Version
	case store.IfNumBelow:
		if !exists {
			return true
		}
		return getNum(m[store.NumPrefix+c.Num]) < c.Limit
	}
	return false
}

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return store.ErrConditionFailed
	}
	if strings.Contains(err.Error(), "Item size") && strings.Contains(err.Error(), "maximum") {
		return store.ErrTooLarge
	}
	return err
}

func (s *Store) raw(ctx context.Context, k store.Key) (map[string]av, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: keyOf(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if !store.ValidKey(k) {
		return store.Item{}, fmt.Errorf("%w: empty key", store.ErrInvalid)
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

// maxRetries bounds optimistic retries under contention.
const maxRetries = 50

// guardedPut builds a Put of it under c. When c does not pin the old state,
// it reads the item, checks c, and guards the write with what it saw;
// pinned reports whether the returned condition is c itself (a failure is
// then the caller's condition failing, not a race).
func (s *Store) guardedPut(ctx context.Context, it store.Item, c store.Condition) (put *types.Put, version int64, pinned bool, err error) {
	e := newExpr()
	var cond string
	switch c.Kind {
	case store.IfNotExists:
		version, pinned = 1, true
		cond, _ = s.condition(e, c)
	case store.IfVersion:
		version, pinned = c.Version+1, true
		cond, _ = s.condition(e, c)
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
	if err := store.CheckItem(it); err != nil {
		return store.Item{}, err
	}
	for i := 0; i < maxRetries; i++ {
		p, version, pinned, err := s.guardedPut(ctx, it, c)
		if err != nil {
			return store.Item{}, err
		}
		_, err = s.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item, ConditionExpression: p.ConditionExpression,
			ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues})
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
// live or absent (an expired item must first be removed, see Update).
func (s *Store) updateInput(u store.Update) (*types.Update, error) {
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
	for name, d := range u.Add {
		add = append(add, fmt.Sprintf("%s %s", e.name(store.NumPrefix+name), e.value(num(d))))
	}
	for name, ik := range u.SetIndexes {
		if name == "" || !store.ValidIndex(name) {
			return nil, fmt.Errorf("%w: unknown index %q", store.ErrInvalid, name)
		}
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
	cond, err := s.condition(e, u.Cond)
	if err != nil {
		return nil, err
	}
	if cond != "" {
		guard += " AND " + cond
	}
	return &types.Update{TableName: &s.table, Key: keyOf(u.Key), UpdateExpression: aws.String(strings.Join(parts, " ")),
		ConditionExpression: aws.String(guard), ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}, nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, u store.Update) (store.Item, error) {
	if !store.ValidKey(u.Key) {
		return store.Item{}, fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	up, err := s.updateInput(u)
	if err != nil {
		return store.Item{}, err
	}
	for i := 0; i < maxRetries; i++ {
		out, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: up.TableName, Key: up.Key, UpdateExpression: up.UpdateExpression,
			ConditionExpression: up.ConditionExpression, ExpressionAttributeNames: up.ExpressionAttributeNames,
			ExpressionAttributeValues: up.ExpressionAttributeValues, ReturnValues: types.ReturnValueAllNew})
		err = mapErr(err)
		if err == nil {
			return fromAttrs(out.Attributes), nil
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return store.Item{}, err
		}
		// An expired item blocks the guard: remove it (only if it is still
		// that expired version) and try again as if it were absent.
		m, rerr := s.raw(ctx, u.Key)
		if rerr != nil {
			return store.Item{}, rerr
		}
		if m == nil || s.live(m) {
			return store.Item{}, store.ErrConditionFailed
		}
		e := newExpr()
		_, derr := s.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: keyOf(u.Key),
			ConditionExpression:      aws.String(fmt.Sprintf("%s = %s", e.name(store.AttrVersion), e.value(m[store.AttrVersion]))),
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
		if derr = mapErr(derr); derr != nil && !errors.Is(derr, store.ErrConditionFailed) {
			return store.Item{}, derr
		}
	}
	return store.Item{}, fmt.Errorf("dynamostore: update %q/%q: too much contention", u.PK, u.SK)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, k store.Key, c store.Condition) error {
	if !store.ValidKey(k) {
		return fmt.Errorf("%w: empty key", store.ErrInvalid)
	}
	e := newExpr()
	cond, err := s.condition(e, c)
	if err != nil {
		return err
	}
	in := &dynamodb.DeleteItemInput{TableName: &s.table, Key: keyOf(k)}
	if cond != "" {
		in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = aws.String(cond), e.names, e.values
	}
	_, err = s.c.DeleteItem(ctx, in)
	return mapErr(err)
}

// Transact implements store.Store with TransactWriteItems.
func (s *Store) Transact(ctx context.Context, ops []store.TxOp) error {
	if err := store.CheckTx(ops); err != nil {
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
				up, err := s.updateInput(op.Update)
				if err != nil {
					return err
				}
				items[i], pinned[i] = types.TransactWriteItem{Update: up}, true
			case store.OpDelete, store.OpCheck:
				e := newExpr()
				cond, err := s.condition(e, op.Cond)
				if err != nil {
					return err
				}
				if op.Kind == store.OpCheck {
					if cond == "" {
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
		_, err := s.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
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
		if failed >= 0 && pinned[failed] {
			return &store.TxConditionError{Index: failed}
		}
		if failed < 0 && !conflict {
			return err
		}
		// A guard saw a concurrent change, or transactions collided: retry.
	}
	return errors.New("dynamostore: transaction: too much contention")
}

// cursor is the JSON form of a LastEvaluatedKey (all key attributes are
// strings in this table).
func encodeCursor(lek map[string]av) string {
	m := map[string]string{}
	for k, v := range lek {
		m[k] = getStr(v)
	}
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c, pkAttr, pk string) (map[string]av, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, fmt.Errorf("%w: bad cursor", store.ErrInvalid)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil || m[pkAttr] != pk || m[store.AttrPK] == "" || m[store.AttrSK] == "" {
		return nil, fmt.Errorf("%w: bad cursor", store.ErrInvalid)
	}
	out := map[string]av{}
	for k, v := range m {
		out[k] = str(v)
	}
	return out, nil
}

// Query implements store.Store.
func (s *Store) Query(ctx context.Context, q store.Query) (store.Page, error) {
	if q.PK == "" || !store.ValidIndex(q.Index) || q.Limit < 0 {
		return store.Page{}, fmt.Errorf("%w: query needs a partition key, a known index and a limit >= 0", store.ErrInvalid)
	}
	pkAttr, skAttr := store.AttrPK, store.AttrSK
	if q.Index != "" {
		pkAttr, skAttr = store.IndexPKAttr(q.Index), store.IndexSKAttr(q.Index)
	}
	e := newExpr()
	kc := fmt.Sprintf("%s = %s", e.name(pkAttr), e.value(str(q.PK)))
	sk := ""
	if q.SK.Op != store.SKAny {
		sk = e.name(skAttr)
	}
	switch q.SK.Op {
	case store.SKAny:
	case store.SKEqual:
		kc += fmt.Sprintf(" AND %s = %s", sk, e.value(str(q.SK.A)))
	case store.SKBeginsWith:
		kc += fmt.Sprintf(" AND begins_with(%s, %s)", sk, e.value(str(q.SK.A)))
	case store.SKBetween:
		kc += fmt.Sprintf(" AND %s BETWEEN %s AND %s", sk, e.value(str(q.SK.A)), e.value(str(q.SK.B)))
	case store.SKLess:
		kc += fmt.Sprintf(" AND %s < %s", sk, e.value(str(q.SK.A)))
	case store.SKLessEq:
		kc += fmt.Sprintf(" AND %s <= %s", sk, e.value(str(q.SK.A)))
	case store.SKGreater:
		kc += fmt.Sprintf(" AND %s > %s", sk, e.value(str(q.SK.A)))
	case store.SKGreaterEq:
		kc += fmt.Sprintf(" AND %s >= %s", sk, e.value(str(q.SK.A)))
	default:
		return store.Page{}, fmt.Errorf("%w: unknown sort-key operator", store.ErrInvalid)
	}
	if q.SK.Op == store.SKBetween && q.SK.A > q.SK.B {
		return store.Page{}, nil // DynamoDB rejects an inverted range; it is simply empty.
	}
	ttl := e.name(store.AttrTTL)
	filter := fmt.Sprintf("attribute_not_exists(%s) OR %s > %s", ttl, ttl, e.value(num(s.now().Unix())))
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	in := &dynamodb.QueryInput{TableName: &s.table, KeyConditionExpression: aws.String(kc), FilterExpression: aws.String(filter),
		ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values, ScanIndexForward: aws.Bool(!q.Desc),
		Limit: aws.Int32(int32(limit))}
	if q.Index != "" {
		in.IndexName = aws.String(q.Index)
	} else {
		in.ConsistentRead = aws.Bool(true)
	}
	if q.Cursor != "" {
		lek, err := decodeCursor(q.Cursor, pkAttr, q.PK)
		if err != nil {
			return store.Page{}, err
		}
		in.ExclusiveStartKey = lek
	}
	out, err := s.c.Query(ctx, in)
	if err != nil {
		return store.Page{}, err
	}
	page := store.Page{}
	for _, m := range out.Items {
		page.Items = append(page.Items, fromAttrs(m))
	}
	if len(out.LastEvaluatedKey) > 0 {
		page.Next = encodeCursor(out.LastEvaluatedKey)
	}
	return page, nil
}

// CreateTable creates the table as store/schema.go describes it (an
// existing table is fine) and waits until it is active.
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
		return err
	}
	var last string
	for i := 0; i < 100; i++ {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err == nil && out.Table != nil && (out.Table.TableStatus == types.TableStatusActive || out.Table.TableStatus == "") {
			// minidyn reports no status: it is usable at once.
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
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("dynamostore: table %s did not become active (%s)", table, last)
}
