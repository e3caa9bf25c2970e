package boltstore

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit. Every commit costs an fsync of the write-ahead log
// (wal.go), and writes are serialized, so writers one after another are
// bound by the disk. The committer lets concurrent writers share a
// transaction: one goroutine of the store commits, batch after batch; a
// writer queues its write and waits. A lone writer's write is committed
// at once (it waits for nothing but a goroutine switch); writers that
// arrive while a commit is on the disk queue up and go, in arrival order,
// into the next transaction, which starts as soon as the one before is
// durable. Each write is durable (its log record synced) and visible (in
// the active memory table, engine.go) when its call returns.
//
// The committer used to be whichever writer came first, handing the role
// to the first queued writer after each commit. Under load that writer
// then waited for a CPU behind the request goroutines the commit had just
// woken: 350µs, on average, in which the disk sat idle (about a fifth of
// each commit's time at 32 connections). A goroutine that does nothing
// else goes straight on to the next batch: about 1µs between commits.
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

// errClosed answers writes that come after Close.
var errClosed = errors.New("boltstore: the store is closed")

// dirty marks an error after which the transaction is half-written.
type dirty struct{ err error }

func (d dirty) Error() string { return d.err.Error() }
func (d dirty) Unwrap() error { return d.err }

type writeReq struct {
	fn       func(*txn) error
	err      error
	panicked any
	done     chan struct{} // receives once the write is committed or failed
	next     *writeReq     // the request queued before this one
}

// committer's queue is a stack that writers push onto with a
// compare-and-swap and the committing goroutine empties in one swap. It
// had been a slice under a mutex: the committing goroutine, having just
// woken a batch's writers onto its own CPU's run queue, could not spin for
// that mutex when a writer held it, so it slept and waited for a CPU
// behind them (about 300µs a batch, with the disk idle).
type committer struct {
	stats  commitCounters
	db     *bolt.DB
	cache  *readCache // told when each batch's writes have ended
	layers *layers
	wal    *wal
	head   atomic.Pointer[writeReq] // the last request queued; closed once stopped
	wake   chan struct{}            // capacity 1: the queue was empty and has a write
	quit   chan struct{}            // closed by stop
	exited chan struct{}

	// Checkpoints (checkpoint.go).
	born     time.Time     // when the active table took its first write
	ckpt     chan ckptJob  // to the checkpointing goroutine; capacity 1
	ckptIdle chan struct{} // capacity 1: a checkpoint has finished
	ckptDone chan struct{} // closed when the checkpointing goroutine exits
	ckptErr  atomic.Pointer[error]
	// abandon skips the final checkpoint at stop (tests: a crash).
	abandon     bool
	freezeBytes int
	freezeAge   time.Duration
}

// commitCounters count what the committer has committed (Store.CommitStats).
type commitCounters struct {
	commits, writes, bytes, checkpoints atomic.Int64
}

// count records a committed transaction of n writes and its log record's
// size.
func (c *committer) count(n, size int) {
	c.stats.commits.Add(1)
	c.stats.writes.Add(int64(n))
	c.stats.bytes.Add(int64(size))
}

// closed heads the queue of a stopped committer.
var closed = &writeReq{}

var reqPool = sync.Pool{New: func() any { return &writeReq{done: make(chan struct{}, 1)} }}

// start runs the committing and checkpointing goroutines until stop.
func (c *committer) start(db *bolt.DB, rc *readCache, l *layers, w *wal, o Options) {
	c.db, c.cache, c.layers, c.wal = db, rc, l, w
	c.freezeBytes, c.freezeAge = o.freezeBytes, o.freezeAge
	if c.freezeBytes <= 0 {
		c.freezeBytes = defaultFreezeBytes
	}
	if c.freezeAge <= 0 {
		c.freezeAge = defaultFreezeAge
	}
	c.wake = make(chan struct{}, 1)
	c.quit = make(chan struct{})
	c.exited = make(chan struct{})
	c.ckpt = make(chan ckptJob, 1)
	c.ckptIdle = make(chan struct{}, 1)
	c.ckptDone = make(chan struct{})
	go c.checkpoints()
	go c.loop()
}

// stop lets the queued writes commit, refuses new ones, checkpoints what
// the memory tables hold, and returns once the goroutines have exited.
// What a failed checkpoint leaves stays in the log, for the next open.
func (c *committer) stop() error {
	close(c.quit)
	<-c.exited
	close(c.ckpt)
	<-c.ckptDone
	werr := c.wal.close()
	if c.abandon || c.layers.frozen != nil {
		// A frozen table whose checkpoint failed must reach bbolt before
		// anything newer: both stay in the log, replayed in order.
		return werr
	}
	active := c.layers.active
	if active.empty() {
		return errors.Join(werr, removeSegment(c.wal.dir, c.wal.seq))
	}
	return errors.Join(werr, c.checkpoint(ckptJob{m: active, seq: c.wal.seq}, false))
}

func (c *committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// write runs fn in a write transaction shared with concurrent writers, and
// returns once that transaction is committed (or fn failed).
func (c *committer) write(fn func(*txn) error) error {
	r := reqPool.Get().(*writeReq)
	r.fn = fn
	for {
		old := c.head.Load()
		if old == closed {
			r.fn = nil
			reqPool.Put(r)
			return errClosed
		}
		r.next = old
		if c.head.CompareAndSwap(old, r) {
			if old == nil {
				c.signal()
			}
			break
		}
	}
	<-r.done
	return r.finish()
}

func (c *committer) loop() {
	defer close(c.exited)
	var batch []*writeReq
	for stopped := false; !stopped; {
		top := c.head.Swap(nil)
		if top == nil {
			// Idle: a table with writes is checkpointed after a while,
			// so that the log stays short.
			var due <-chan time.Time
			var idle chan struct{}
			if !c.layers.active.empty() {
				if c.checkpointing() {
					idle = c.ckptIdle // then freeze
				} else {
					due = time.After(max(time.Until(c.born.Add(c.freezeAge)), 0))
				}
			}
			select {
			case <-c.wake:
				continue
			case <-due:
				_ = c.maybeFreeze() // logged; tried again at the next commit
				continue
			case <-idle:
				continue
			case <-c.quit:
			}
			// Stopped: refuse new writes, then commit the last ones.
			stopped = true
			top = c.head.Swap(closed)
		}
		batch = batch[:0]
		for r := top; r != nil; r = r.next {
			batch = append(batch, r)
		}
		slices.Reverse(batch) // arrival order
		for i := 0; i < len(batch); i += maxBatch {
			part := batch[i:min(i+maxBatch, len(batch))]
			c.guarded(part)
			c.cache.settle() // committed or rolled back: the keys may fill again
			for _, r := range part {
				r.next = nil
				r.done <- struct{}{}
			}
		}
		clear(batch) // the requests go back to the pool
	}
}

// guarded commits batch; should bbolt itself panic, each writer of the
// batch re-raises the panic in its own goroutine (where net/http recovers
// it) instead of the process dying in this one.
func (c *committer) guarded(batch []*writeReq) {
	defer func() {
		if p := recover(); p != nil {
			for _, r := range batch {
				r.panicked = p
			}
		}
	}()
	c.commit(batch)
}

// finish returns the request to the pool and its outcome to the caller,
// re-raising a panic of its function in the caller's goroutine.
func (r *writeReq) finish() error {
	err, p := r.err, r.panicked
	*r = writeReq{done: r.done}
	reqPool.Put(r)
	if p != nil {
		panic(p)
	}
	return err
}

// run calls r.fn; a panic counts as dirty (the function may have written).
func run(r *writeReq, tx *txn) (err error) {
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
	if err := c.room(); err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	if len(batch) == 1 {
		c.solo(batch[0])
		return
	}
	t, err := c.begin()
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
		return
	}
	d := t.runAll(batch)
	if d.err != nil {
		for _, r := range batch {
			r.err, r.panicked = nil, nil
			c.solo(r)
		}
		return
	}
	if err := c.publish(t, len(batch)); err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
}

// runAll runs the batch's functions in t until one leaves it
// half-written (returned), and ends t's bbolt read transaction whatever
// happens: a leaked one would hold bbolt's remapping back for ever.
func (t *txn) runAll(batch []*writeReq) (d dirty) {
	defer t.tx.Rollback()
	for _, r := range batch {
		r.err = run(r, t)
		if errors.As(r.err, &d) {
			return d
		}
	}
	return dirty{}
}

// solo runs r in a transaction of its own.
func (c *committer) solo(r *writeReq) {
	t, err := c.begin()
	if err != nil {
		r.err = err
		return
	}
	if d := t.runAll([]*writeReq{r}); d.err != nil {
		r.err = d.err
		return
	}
	if r.err != nil {
		return
	}
	r.err = c.publish(t, 1)
}

// begin starts a write transaction: its own table over the layers as
// they are now, and a bbolt read transaction taken with them (see
// layers). It must end (tx.Rollback) before publish, which waits for
// readers.
func (c *committer) begin() (*txn, error) {
	c.layers.mu.RLock()
	active, frozen := c.layers.active, c.layers.frozen
	tx, err := c.db.Begin(false)
	c.layers.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &txn{view{own: newMemtable(), active: active, frozen: frozen, tx: tx}}, nil
}

// publish makes t's writes durable (one log record, synced) and then
// visible (merged into the active table). A transaction that wrote
// nothing has nothing to publish.
func (c *committer) publish(t *txn, n int) error {
	if t.own.empty() {
		return nil
	}
	size, err := c.wal.append(t.own)
	if err != nil {
		return err
	}
	c.layers.mu.Lock()
	if c.layers.active.empty() {
		c.born = time.Now()
	}
	c.layers.active.merge(t.own)
	c.layers.mu.Unlock()
	c.count(n, size)
	_ = c.maybeFreeze() // logged; this batch is committed whatever happens
	return nil
}

// fillPercent is how full bbolt leaves a page it splits (at checkpoints). Most keys here
// grow at one end (time-ordered thread and chain ids, created_at and
// updated_at index entries), and bbolt's default of one half left every
// page behind the growing end half empty: more pages, more of them dirty
// per commit, and a commit's fsync costs by the page. At 0.9 a batch of
// 18 creates, all of one owner, wrote 24% fewer pages (83 to 63); with
// owners spread over the key space most dirty pages are theirs, and the
// fill makes little difference there. etcd uses 0.9 for its sequential
// keys.
const fillPercent = 0.9
