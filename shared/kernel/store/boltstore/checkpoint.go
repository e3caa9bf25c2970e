package boltstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Checkpoints. The active memory table is frozen when it holds
// freezeBytes, or freezeAge after its first write: the committer starts a
// new log segment and a new active table, and hands the frozen one to the
// checkpointing goroutine, which writes it into bbolt in one durable
// transaction, removes its log segment and drops it. Writers go on
// meanwhile; only when the new active table reaches maxActiveBytes while
// the checkpoint is still running do they wait for it (or, if it keeps
// failing, get its error).

const (
	// defaultFreezeBytes and defaultFreezeAge are when the active table is
	// frozen (Options can lower them in tests).
	defaultFreezeBytes = 8 << 20
	defaultFreezeAge   = time.Second
	maxActiveBytes     = 64 << 20
	// ckptRetry is the wait before a failed checkpoint is tried again.
	ckptRetry = time.Second
)

// ckptJob is a frozen table and the log segment that holds its writes.
type ckptJob struct {
	m   *memtable
	seq uint64
}

// maybeFreeze freezes the active table when it is due and no checkpoint
// is running. It runs on the committing goroutine. When no new log
// segment can be started the table stays active, its writes in the
// current segment, and the next commit tries again; the error is
// returned for room, whose writers would otherwise wait for ever.
func (c *committer) maybeFreeze() error {
	a := c.layers.active
	if a.empty() || (a.bytes < c.freezeBytes && time.Since(c.born) < c.freezeAge) {
		return nil
	}
	if c.checkpointing() {
		return nil
	}
	seq, err := c.wal.rotate()
	if err != nil {
		slog.Error("store: starting a new log segment", "error", err.Error())
		return err
	}
	c.layers.mu.Lock()
	c.layers.frozen, c.layers.active = a, newMemtable()
	c.layers.mu.Unlock()
	c.ckpt <- ckptJob{m: a, seq: seq}
	return nil
}

// checkpointing says whether a frozen table is being checkpointed.
func (c *committer) checkpointing() bool {
	c.layers.mu.RLock()
	defer c.layers.mu.RUnlock()
	return c.layers.frozen != nil
}

// room waits, before a batch, until the active table has room: only when
// it is full and a checkpoint is still running.
func (c *committer) room() error {
	for c.layers.active.bytes >= maxActiveBytes {
		if !c.checkpointing() {
			if err := c.maybeFreeze(); err != nil {
				return fmt.Errorf("boltstore: the store is full and no new log segment can be started: %w", err)
			}
			if c.layers.active.bytes < maxActiveBytes {
				return nil
			}
		}
		if e := c.ckptErr.Load(); e != nil {
			return fmt.Errorf("boltstore: the store is full and its checkpoint fails: %w", *e)
		}
		select {
		case <-c.ckptIdle:
		case <-time.After(ckptRetry):
		case <-c.quit:
			return errClosed
		}
	}
	return nil
}

// checkpoints runs checkpoint jobs until ckpt is closed, retrying a
// failed one until it succeeds or the store stops (its writes stay in the
// log then, for the next open).
func (c *committer) checkpoints() {
	defer close(c.ckptDone)
	for job := range c.ckpt {
		for {
			err := c.checkpoint(job, true)
			if err == nil {
				c.ckptErr.Store(nil)
				break
			}
			slog.Error("store: checkpoint failed; the log keeps its writes", "error", err.Error())
			c.ckptErr.Store(&err)
			select {
			case <-time.After(ckptRetry):
				continue
			case <-c.quit:
			}
			break
		}
		select {
		case c.ckptIdle <- struct{}{}:
		default:
		}
	}
}

// checkpoint writes job's table into bbolt durably, removes its log
// segment and, when it was the frozen table, drops it.
func (c *committer) checkpoint(job ckptJob, frozen bool) error {
	err := c.db.Update(func(tx *bolt.Tx) error { return writeTable(tx, job.m) })
	if err != nil {
		return err
	}
	c.stats.checkpoints.Add(1)
	// bbolt holds the writes durably now; should the removal be lost in a
	// crash, replaying the segment writes the same values again, before
	// the newer segments. The removal is made durable before the next
	// checkpoint can begin: a file system that kept a later segment's
	// removal and lost this one's would replay this one alone, over newer
	// values.
	if err := removeSegment(c.wal.dir, job.seq); err != nil {
		return fmt.Errorf("removing the checkpointed log segment: %w", err)
	}
	if err := syncDir(c.wal.dir); err != nil {
		return err
	}
	if frozen {
		c.layers.mu.Lock()
		c.layers.frozen = nil
		c.layers.mu.Unlock()
	}
	return nil
}

func removeSegment(dir string, seq uint64) error {
	err := os.Remove(segmentPath(dir, seq))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// writeTable writes m's entries into their bbolt buckets in tx: a
// checkpoint, or the replay of the log.
func writeTable(tx *bolt.Tx, m *memtable) error {
	for _, b := range buckets {
		t := m.trees[b.id]
		if t == nil {
			continue
		}
		bk := tx.Bucket(b.name)
		if bk == nil {
			return errors.New("boltstore: missing bucket " + string(b.name))
		}
		bk.FillPercent = fillPercent
		var err error
		t.Scan(func(e memEntry) bool {
			if e.del {
				err = bk.Delete(e.key)
			} else {
				err = bk.Put(e.key, e.val)
			}
			return err == nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
