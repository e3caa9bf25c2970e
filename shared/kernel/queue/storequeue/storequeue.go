// Package storequeue is a durable adapter of the queue port over the store
// port. Locally it runs over boltstore, so a message is on disk (fsync'd by
// bbolt) before Send returns, survives a restart, and a message that was
// received but not acknowledged before a crash is delivered again once its
// visibility timeout has passed. Over any store it keeps SQS's semantics
// (at-least-once delivery, visibility timeout, retry delay, receive counts,
// dead-lettering after MaxReceives), so it passes queuetest.
//
// Layout, for a queue named N (all in the single table):
//
//	message      PK "queue#N"       SK "m#<id>"   Data: the body; Nums["receives"]
//	             gsi1 PK "queue#N"  SK "<visible-at, 20-digit unix ns>#<id>"
//	dead letter  PK "queue#N#dead"  SK "<id>"     Data: JSON (DeadLetter)
//
// Ids start with the send time, so the index orders messages by when they
// become visible, then by send order: delivery is roughly FIFO (a retried
// message goes to the back). A receive reads one page of the index up to
// now (one query) and claims what it found in one transaction whose
// conditions are the items' versions, so two consumers — in this process
// or another — never both claim one message: the loser's condition fails
// and it skips the message. The claim moves the message's index key to
// now + visibility timeout and counts the receive; an acknowledgement
// deletes the item; a failure moves the index key to now + retry delay,
// conditional on the version the claim left (the receipt), so a consumer
// whose claim has expired cannot reset another's.
//
// A consumer claims ahead of its handlers (up to twice Concurrency
// messages wait in its buffer), since each claim is a durable write; after
// a crash those too come back once their visibility timeout has passed.
//
// Costs: Send is one conditional put; a receive is one index query of up
// to 32 items plus one transaction over the messages claimed; an
// acknowledgement is one delete; a retry is one conditional update. Over
// boltstore each write is durable before it returns, and concurrent writes
// share an fsync (group commit).
package storequeue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/store"
)

// index orders the visible messages.
const index = "gsi1"

// pollEvery bounds how long a waiting consumer goes without looking at
// the store: sends of this process wake it at once, those of another
// process (or a message's visibility running out) within this time.
const pollEvery = time.Second

// maxClaim is the most messages one receive claims (one transaction).
const maxClaim = 32

// maxErrorText bounds the handler error kept with a dead letter.
const maxErrorText = 1024

// Queue is a durable queue over a store. It is safe for concurrent use, and
// any number of Consume loops, in one process or several, may share it.
type Queue struct {
	st   store.Store
	name string
	pk   string
	opts queue.Options

	prefix string // of this handle's message ids
	seq    atomic.Uint64

	mu   sync.Mutex
	wake chan struct{} // closed (and replaced) by Send
}

var _ queue.Queue = (*Queue)(nil)

// New returns the queue named name in st; its consumers use opts. A name is
// 1 to 80 letters, digits, '-' or '_'.
func New(st store.Store, name string, opts queue.Options) (*Queue, error) {
	if st == nil {
		return nil, errors.New("storequeue: a store is required")
	}
	if !validName(name) {
		return nil, fmt.Errorf("storequeue: invalid queue name %q", name)
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &Queue{st: st, name: name, pk: "queue#" + name, opts: opts.WithDefaults(),
		prefix: hex.EncodeToString(b[:]), wake: make(chan struct{})}, nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Store is the store the queue keeps its messages in.
func (q *Queue) Store() store.Store { return q.st }

func validName(s string) bool {
	if s == "" || len(s) > 80 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (q *Queue) msgKey(id string) store.Key { return store.Key{PK: q.pk, SK: "m#" + id} }

// visible is the index sort key of a message visible from t.
func visible(t time.Time, id string) string { return stamp(t) + "#" + id }

// stamp is t in unix nanoseconds, 20 digits, so that strings sort as times.
func stamp(t time.Time) string {
	n := t.UnixNano()
	if n < 0 {
		n = 0
	}
	s := strconv.FormatInt(n, 10)
	const width = 20
	if len(s) < width {
		s = "00000000000000000000"[:width-len(s)] + s
	}
	return s
}

func (q *Queue) indexKey(t time.Time, id string) map[string]store.IndexKey {
	return map[string]store.IndexKey{index: {PK: q.pk, SK: visible(t, id)}}
}

// Send implements queue.Sender: the message is stored (durably, over
// boltstore) before Send returns.
func (q *Queue) Send(ctx context.Context, body []byte) error {
	if err := queue.Validate(body); err != nil {
		return err
	}
	now := time.Now()
	// Send time first, for order; then this handle's random prefix and a
	// counter, for uniqueness across handles and processes.
	id := stamp(now) + "-" + q.prefix + strconv.FormatUint(q.seq.Add(1), 36)
	it := store.Item{Key: q.msgKey(id), Data: body, Indexes: q.indexKey(now, id)}
	if _, err := q.st.Put(ctx, it, store.NotExists()); err != nil {
		return fmt.Errorf("storequeue: send: %w", err)
	}
	q.notify()
	return nil
}

// notify wakes this handle's waiting consumers.
func (q *Queue) notify() {
	q.mu.Lock()
	close(q.wake)
	q.wake = make(chan struct{})
	q.mu.Unlock()
}

// claimed is a received message and its receipt (the version its claim
// left).
type claimed struct {
	m       queue.Message
	receipt int64
	at      time.Time // claimed
}

// receive claims up to max visible messages. When there are none it
// returns when the next message becomes visible (as far as it knows).
func (q *Queue) receive(ctx context.Context, max int) ([]claimed, time.Time, error) {
	now := time.Now()
	page, err := q.st.Query(ctx, store.Query{Index: index, PK: q.pk,
		SK: store.SKCond{Op: store.SKLess, A: stamp(now.Add(time.Nanosecond))}, Limit: max})
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(page.Items) == 0 {
		// When does the first hidden message come back?
		next, err := q.st.Query(ctx, store.Query{Index: index, PK: q.pk, Limit: 1})
		if err != nil || len(next.Items) == 0 {
			return nil, time.Time{}, err
		}
		sk := next.Items[0].Indexes[index].SK
		ns, err := strconv.ParseInt(sk[:min(len(sk), 20)], 10, 64)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("storequeue: corrupt index key %q", sk)
		}
		return nil, time.Unix(0, ns), nil
	}
	cands := page.Items
	hidden := now.Add(q.opts.VisibilityTimeout)
	for len(cands) > 0 {
		ops := make([]store.TxOp, len(cands))
		for i, it := range cands {
			ops[i] = store.TxOp{Kind: store.OpUpdate, Update: store.Update{Key: it.Key,
				Add: map[string]int64{"receives": 1}, SetIndexes: q.indexKey(hidden, it.SK[2:]),
				Cond: store.HasVersion(it.Version)}}
		}
		err := q.st.Transact(ctx, ops)
		var cf *store.TxConditionError
		if errors.As(err, &cf) && cf.Index >= 0 && cf.Index < len(cands) {
			// Another consumer took (or acknowledged) that one.
			cands = append(cands[:cf.Index:cf.Index], cands[cf.Index+1:]...)
			continue
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		out := make([]claimed, len(cands))
		for i, it := range cands {
			out[i] = claimed{
				m:       queue.Message{ID: it.SK[2:], Body: it.Data, Receives: int(it.Nums["receives"]) + 1},
				receipt: it.Version + 1,
				at:      now,
			}
		}
		return out, time.Time{}, nil
	}
	// Every candidate was taken by someone else: look again at once.
	return nil, now, nil
}

// Consume implements queue.Consumer. Concurrency handlers take messages
// from a buffer of up to twice as many, which the receive loop refills, a
// batch per claim, when it is half empty: a claim costs a durable write, so
// it should not wait for handlers to come free one by one. A message that waited in the buffer
// for half its visibility timeout is handed back rather than handled late.
func (q *Queue) Consume(ctx context.Context, h queue.Handler) error {
	conc := q.opts.Concurrency
	work := make(chan claimed)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if time.Since(c.at) > q.opts.VisibilityTimeout/2 {
					q.release(c, 0)
					continue
				}
				err := queue.Run(ctx, h, c.m)
				// Settled apart, so that the handler slot is free at once
				// and the write shares its commit with others.
				wg.Add(1)
				go func() {
					defer wg.Done()
					q.settle(ctx, c, err)
				}()
			}
		}()
	}
	defer func() {
		close(work)
		wg.Wait()
	}()
	var buf []claimed
	backoff := 100 * time.Millisecond
	for {
		if ctx.Err() != nil {
			// Stopped: what is claimed but not started goes back at once.
			for _, c := range buf {
				q.release(c, 0)
			}
			return nil
		}
		if len(buf) <= conc {
			q.mu.Lock()
			wake := q.wake
			q.mu.Unlock()
			msgs, next, err := q.receive(ctx, min(maxClaim, 2*conc-len(buf)))
			buf = append(buf, msgs...)
			switch {
			case err != nil && ctx.Err() == nil:
				q.opts.Logger.Error("storequeue: receive failed; retrying", "queue", q.name, "error", err.Error(), "backoff", backoff.String())
				if len(buf) == 0 {
					sleep(ctx, backoff, nil)
					backoff = min(2*backoff, 10*time.Second)
					continue
				}
			case err == nil:
				backoff = 100 * time.Millisecond
			}
			if len(buf) == 0 {
				wait := pollEvery
				if !next.IsZero() {
					wait = min(wait, time.Until(next))
				}
				sleep(ctx, wait, wake)
				continue
			}
		}
		select {
		case work <- buf[0]:
			buf = buf[1:]
		case <-ctx.Done():
		}
	}
}

// sleep waits d, or until wake is closed; it reports false when ctx ended.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-ctx.Done():
		return false
	}
	return true
}

// settle acknowledges, hands back, retries or dead-letters a message
// after its handler returned err.
func (q *Queue) settle(ctx context.Context, c claimed, err error) {
	m := c.m
	log := q.opts.Logger.With("queue", q.name, "message_id", m.ID, "receives", m.Receives)
	switch {
	case err == nil:
		q.ack(c, log)
	case ctx.Err() != nil:
		// Stopping is not the message's fault: hand it back at once.
		q.release(c, 0)
	case m.Receives >= q.opts.MaxReceives:
		q.deadLetter(ctx, c, err, log)
	default:
		log.Warn("storequeue: handler failed; will retry", "error", err.Error())
		q.release(c, q.opts.RetryDelay)
	}
}

// settling bounds a write that settles a message; it runs even when the
// consumer's context has ended.
func settling(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// ack deletes a handled message. Like an SQS delete it applies even when
// the message was received again meanwhile: the work is done.
func (q *Queue) ack(c claimed, log *slog.Logger) {
	ctx, cancel := settling(context.Background())
	defer cancel()
	if err := q.st.Delete(ctx, q.msgKey(c.m.ID), store.Condition{}); err != nil {
		log.Error("storequeue: delete failed; the message will be delivered again", "error", err.Error())
	}
}

// release makes a message visible again after delay, unless it was
// received again since (its receipt changed) or is gone.
func (q *Queue) release(c claimed, delay time.Duration) {
	ctx, cancel := settling(context.Background())
	defer cancel()
	_, err := q.st.Update(ctx, store.Update{Key: q.msgKey(c.m.ID),
		SetIndexes: q.indexKey(time.Now().Add(delay), c.m.ID), Cond: store.HasVersion(c.receipt)})
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		// The visibility timeout still brings it back.
		q.opts.Logger.Error("storequeue: release failed", "queue", q.name, "message_id", c.m.ID, "error", err.Error())
	}
	q.notify()
}

// DeadLetter is a message that failed MaxReceives times, kept in the store
// when the queue has no dead-letter queue of its own.
type DeadLetter struct {
	ID       string    `json:"id"`
	Body     string    `json:"body"`
	Receives int       `json:"receives"`
	Error    string    `json:"error"`
	DeadAt   time.Time `json:"dead_at"`
}

func (q *Queue) deadKey(id string) store.Key { return store.Key{PK: q.pk + "#dead", SK: id} }

func (q *Queue) deadLetter(ctx context.Context, c claimed, herr error, log *slog.Logger) {
	sctx, cancel := settling(ctx)
	defer cancel()
	if q.opts.DeadLetter != nil {
		if err := q.opts.DeadLetter.Send(sctx, c.m.Body); err != nil {
			log.Error("storequeue: dead-lettering failed; will retry", "error", herr.Error(), "dead_letter_error", err.Error())
			q.release(c, q.opts.RetryDelay)
			return
		}
		log.Warn("storequeue: message dead-lettered", "error", herr.Error())
		q.ack(c, log)
		return
	}
	text := herr.Error()
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	data, _ := json.Marshal(DeadLetter{ID: c.m.ID, Body: string(c.m.Body), Receives: c.m.Receives, Error: text, DeadAt: time.Now().UTC()})
	// Moved in one transaction, and only while this consumer still holds
	// the message.
	err := q.st.Transact(sctx, []store.TxOp{
		{Kind: store.OpDelete, Key: q.msgKey(c.m.ID), Cond: store.HasVersion(c.receipt)},
		{Kind: store.OpPut, Item: store.Item{Key: q.deadKey(c.m.ID), Data: data}},
	})
	switch {
	case err == nil:
		log.Warn("storequeue: message dead-lettered; kept in the store", "error", herr.Error())
	case errors.Is(err, store.ErrConditionFailed):
		// Received again meanwhile (its visibility timeout ran out): that
		// delivery decides.
	default:
		log.Error("storequeue: dead-lettering failed; will retry", "error", herr.Error(), "dead_letter_error", err.Error())
		q.release(c, q.opts.RetryDelay)
	}
}

// DeadLetters returns up to limit dead letters kept in the store (oldest
// message first) and a cursor for the next page ("" at the end).
func (q *Queue) DeadLetters(ctx context.Context, limit int, cursor string) ([]DeadLetter, string, error) {
	page, err := q.st.Query(ctx, store.Query{PK: q.pk + "#dead", Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", fmt.Errorf("storequeue: dead letters: %w", err)
	}
	out := make([]DeadLetter, 0, len(page.Items))
	for _, it := range page.Items {
		var d DeadLetter
		if err := json.Unmarshal(it.Data, &d); err != nil {
			return nil, "", fmt.Errorf("storequeue: corrupt dead letter %s: %w", it.SK, err)
		}
		out = append(out, d)
	}
	return out, page.Next, nil
}

// ErrNoDeadLetter: no dead letter has that id.
var ErrNoDeadLetter = errors.New("storequeue: no such dead letter")

// Redrive puts a dead letter back on the queue as a new message (receive
// count 0), in one transaction.
func (q *Queue) Redrive(ctx context.Context, id string) error {
	it, err := q.st.Get(ctx, q.deadKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return ErrNoDeadLetter
	}
	if err != nil {
		return err
	}
	var d DeadLetter
	if err := json.Unmarshal(it.Data, &d); err != nil {
		return fmt.Errorf("storequeue: corrupt dead letter %s: %w", id, err)
	}
	now := time.Now()
	err = q.st.Transact(ctx, []store.TxOp{
		{Kind: store.OpDelete, Key: it.Key, Cond: store.HasVersion(it.Version)},
		{Kind: store.OpPut, Item: store.Item{Key: q.msgKey(id), Data: []byte(d.Body), Indexes: q.indexKey(now, id)}, Cond: store.NotExists()},
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return ErrNoDeadLetter // redriven or removed meanwhile
	}
	if err != nil {
		return err
	}
	q.notify()
	return nil
}

// DeleteDeadLetter removes a dead letter; an absent one is not an error.
func (q *Queue) DeleteDeadLetter(ctx context.Context, id string) error {
	return q.st.Delete(ctx, q.deadKey(id), store.Condition{})
}
