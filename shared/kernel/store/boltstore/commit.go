package boltstore

import (
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Group commit. Every bbolt commit costs an fsync (two, data and meta), and
// bbolt runs one writer at a time, so writers one after another are bound
// by the disk. The committer lets concurrent writers share a transaction:
// the first writer to arrive commits at once (a lone writer waits for
// nothing); writers that arrive while a commit is on the disk queue up, and
// the first of them then commits all of them in one transaction, in arrival
// order. Each is durable when its call returns.
//
// bbolt's own DB.Batch was not used: it waits up to 10ms to fill a batch
// (a lone writer's latency), and when one function fails it rolls the
// whole batch back and runs them again, so a condition failure among many
// concurrent conditional writers would re-run all the others, again and
// again.
//
// Instead a write function obeys one rule: it returns a plain error (a
// condition failed, an item is too large, a record is corrupt) only before
// it has written anything, and then the others in the batch go on; an
// error from a write itself is marked dirty, and then the batch is rolled
// back and each function is run again in a transaction of its own. Writes
// in one batch see each other's effects, exactly as if they had run one
// after another, so conditions keep their meaning.

// maxBatch bounds the writes in one transaction, so that one commit does
// not grow without bound under a flood of writers.
const maxBatch = 256

// dirty marks an error after which the transaction is half-written.
type dirty struct{ err error }

func (d dirty) Error() string { return d.err.Error() }
func (d dirty) Unwrap() error { return d.err }

type writeReq struct {
	fn       func(*bolt.Tx) error
	err      error
	panicked any
	// lead receives true when this writer is to commit the next batch,
	// false when its write has been committed (or has failed).
	lead chan bool
}

type committer struct {
	db      *bolt.DB
	mu      sync.Mutex
	queue   []*writeReq
	leading bool // a writer is committing a batch
}

var reqPool = sync.Pool{New: func() any { return &writeReq{lead: make(chan bool, 1)} }}

// write runs fn in a write transaction shared with concurrent writers, and
// returns once that transaction is committed (or fn failed).
func (c *committer) write(fn func(*bolt.Tx) error) error {
	r := reqPool.Get().(*writeReq)
	r.fn = fn
	c.mu.Lock()
	c.queue = append(c.queue, r)
	if c.leading {
		c.mu.Unlock()
		if lead := <-r.lead; !lead {
			return r.finish()
		}
		c.mu.Lock()
	} else {
		c.leading = true
	}
	n := min(len(c.queue), maxBatch)
	batch := c.queue[:n:n]
	if n == len(c.queue) {
		c.queue = nil
	} else {
		c.queue = c.queue[n:]
	}
	c.mu.Unlock()

	c.commit(batch)
	for _, o := range batch {
		if o != r {
			o.lead <- false
		}
	}

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].lead <- true
	} else {
		c.leading = false
	}
	c.mu.Unlock()
	return r.finish()
}

// finish returns the request to the pool and its outcome to the caller,
// re-raising a panic of its function in the caller's goroutine.
func (r *writeReq) finish() error {
	err, p := r.err, r.panicked
	*r = writeReq{lead: r.lead}
	reqPool.Put(r)
	if p != nil {
		panic(p)
	}
	return err
}

// run calls r.fn; a panic counts as dirty (the function may have written).
func run(r *writeReq, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
			err = dirty{fmt.Errorf("boltstore: write panicked: %v", p)}
		}
	}()
	return r.fn(tx)
}

// commit runs batch in one transaction, or each alone when one of them
// left the shared transaction half-written.
func (c *committer) commit(batch []*writeReq) {
	if len(batch) == 1 {
		c.solo(batch[0])
		return
	}
	tx, err := c.db.Begin(true)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	var d dirty
	for _, r := range batch {
		r.err = run(r, tx)
		if errors.As(r.err, &d) {
			break
		}
	}
	if d.err != nil {
		_ = tx.Rollback()
		for _, r := range batch {
			r.err, r.panicked = nil, nil
			c.solo(r)
		}
		return
	}
	if err := tx.Commit(); err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
}

// solo runs r in a transaction of its own.
func (c *committer) solo(r *writeReq) {
	tx, err := c.db.Begin(true)
	if err != nil {
		r.err = err
		return
	}
	if err := run(r, tx); err != nil {
		_ = tx.Rollback()
		var d dirty
		if errors.As(err, &d) {
			err = d.err
		}
		r.err = err
		return
	}
	r.err = tx.Commit()
}
