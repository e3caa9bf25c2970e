// Package memqueue is the in-process adapter of the queue port, used by the
// all-in-one local server. It keeps SQS's semantics (visibility timeout,
// receive counts, retry delay, dead-lettering) so code tested against it
// behaves the same on AWS. Messages live in memory: they are lost when the
// process stops, which is why durable work (the build workflow) is kept in
// the store, not only in a queue.
package memqueue

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/queue"
)

// Queue is an in-process queue. It is safe for concurrent use, and any
// number of Consume loops may share it (they compete for messages).
type Queue struct {
	opts queue.Options

	mu   sync.Mutex
	msgs []*entry // in send order
	seq  int64
	// wake is closed (and replaced) whenever a message is added or made
	// visible, to wake waiting receivers.
	wake chan struct{}
}

type entry struct {
	id        string
	body      []byte
	receives  int
	visibleAt time.Time
	receipt   int64 // changes on every receive
}

// New returns an empty queue whose consumers use opts.
func New(opts queue.Options) *Queue {
	return &Queue{opts: opts.WithDefaults(), wake: make(chan struct{})}
}

var _ queue.Queue = (*Queue)(nil)

// Send enqueues a copy of body.
func (q *Queue) Send(ctx context.Context, body []byte) error {
	if err := queue.Validate(body); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	q.msgs = append(q.msgs, &entry{id: strconv.FormatInt(q.seq, 10), body: append([]byte(nil), body...)})
	q.notify()
	return nil
}

// Len reports how many messages are not yet deleted (visible or in flight).
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// notify wakes receivers; q.mu must be held.
func (q *Queue) notify() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// Consume implements queue.Consumer.
func (q *Queue) Consume(ctx context.Context, h queue.Handler) error {
	slots := make(chan struct{}, q.opts.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		m, receipt, ok := q.receive(ctx)
		if !ok {
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			q.handle(ctx, h, m, receipt)
		}()
	}
}

// receive blocks until a message is visible (and hides it) or ctx is done.
func (q *Queue) receive(ctx context.Context) (queue.Message, int64, bool) {
	for {
		q.mu.Lock()
		now := time.Now()
		var next time.Time
		for _, e := range q.msgs {
			if !e.visibleAt.After(now) {
				e.receives++
				q.seq++
				e.receipt = q.seq
				e.visibleAt = now.Add(q.opts.VisibilityTimeout)
				m := queue.Message{ID: e.id, Body: append([]byte(nil), e.body...), Receives: e.receives}
				q.mu.Unlock()
				return m, e.receipt, true
			}
			if next.IsZero() || e.visibleAt.Before(next) {
				next = e.visibleAt
			}
		}
		wake := q.wake
		q.mu.Unlock()

		var timeout <-chan time.Time
		var timer *time.Timer
		if !next.IsZero() {
			timer = time.NewTimer(next.Sub(now))
			timeout = timer.C
		}
		select {
		case <-wake:
		case <-timeout:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return queue.Message{}, 0, false
		}
	}
}

func (q *Queue) handle(ctx context.Context, h queue.Handler, m queue.Message, receipt int64) {
	err := queue.Run(ctx, h, m)
	switch {
	case err == nil:
		q.remove(m.ID)
	case ctx.Err() != nil:
		// Stopping is not the message's fault: hand it back at once.
		q.release(m.ID, receipt, 0)
	case m.Receives >= q.opts.MaxReceives:
		log := q.opts.Logger.With("message_id", m.ID, "receives", m.Receives, "error", err.Error())
		if q.opts.DeadLetter == nil {
			log.Error("queue: message failed for good and there is no dead-letter queue; dropped")
		} else if derr := q.opts.DeadLetter.Send(context.WithoutCancel(ctx), m.Body); derr != nil {
			log.Error("queue: dead-lettering failed; will retry", "dead_letter_error", derr.Error())
			q.release(m.ID, receipt, q.opts.RetryDelay)
			return
		} else {
			log.Warn("queue: message dead-lettered")
		}
		q.remove(m.ID)
	default:
		q.opts.Logger.Warn("queue: handler failed; will retry", "message_id", m.ID, "receives", m.Receives, "error", err.Error())
		q.release(m.ID, receipt, q.opts.RetryDelay)
	}
}

// remove deletes a message. Like an SQS delete, it applies even when the
// message was received again meanwhile: the work is done.
func (q *Queue) remove(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, e := range q.msgs {
		if e.id == id {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return
		}
	}
}

// release makes a message visible after delay, unless it was received again
// since (its receipt changed).
func (q *Queue) release(id string, receipt int64, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.msgs {
		if e.id == id && e.receipt == receipt {
			e.visibleAt = time.Now().Add(delay)
			q.notify()
			return
		}
	}
}
