package boltstore

import (
	"hash/maphash"
	"sync"
)

// Read cache. A Get that finds its record here skips the memory tables,
// bbolt's read transaction and its B+tree descent: at 32 connections GET
// thread went from about 59,000 to 67,000 requests a second with its
// reads served from memory. The file is locked by this process, so every
// write passes through this store and the cache can be kept exact: it
// holds encoded records (a Get hit decodes its own copy, as a read from the
// layers does; a GetData hit uses the head parsed when the record was
// kept), and never one older than what such a read would return.
//
// The rule that keeps it exact: a key is dropped from the cache when a
// write of it begins (inside the write transaction, before the write is
// logged and merged into the active table), and a read may put what it read back only if no write of a key of
// the same shard began or ended since the read started (the shard's epoch
// is unchanged) and none is still uncommitted (pending is zero). So a
// record read before a write committed can never be put back after it.
// Writes begin and end only on the committing goroutine.

// cacheShards spreads the keys over locks. Many shards also keep reads
// filling the cache under heavy writing: a fill is refused only when a
// write touched its shard meanwhile.
const cacheShards = 1024

// DefaultCacheBytes is the read cache's default size.
const DefaultCacheBytes = 32 << 20

// entryOverhead is a cached entry's memory beyond its key and record (the
// map slot, the string and slice headers, the parsed head), roughly.
const entryOverhead = 128

// maxCachedRecord bounds the records kept: a large one would push out
// hundreds of small ones and costs a copy on each hit.
const maxCachedRecord = 8 << 10

type readCache struct {
	seed   maphash.Seed
	limit  int64 // bytes per shard
	shards [cacheShards]cacheShard
	// touched are the keys whose writes began in the transaction being
	// committed; only the committing goroutine uses it.
	touched []string
}

// cached is a kept record and its head, parsed once when it was kept (a
// hit of GetData then decodes nothing).
type cached struct {
	rec  []byte
	head recordHead
}

func newCached(rec []byte) cached { return cached{rec: rec, head: parseHead(rec)} }

// size is what the entry of e under a key of keyLen bytes counts for.
func (e cached) size(keyLen int) int64 { return int64(keyLen + len(e.rec) + entryOverhead) }

type cacheShard struct {
	mu      sync.Mutex
	m       map[string]cached
	bytes   int64
	epoch   uint64 // advances whenever a write of one of its keys begins or ends
	pending int    // writes of its keys begun and not yet ended
}

// newReadCache returns a cache of about size bytes; nil (no cache) when
// size is not positive.
func newReadCache(size int64) *readCache {
	if size <= 0 {
		return nil
	}
	return &readCache{seed: maphash.MakeSeed(), limit: max(size/cacheShards, 1)}
}

func (c *readCache) shard(bk []byte) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, bk)%cacheShards]
}

// shardOf is shard for a key held as a string (the same hash).
func (c *readCache) shardOf(k string) *cacheShard {
	return &c.shards[maphash.String(c.seed, k)%cacheShards]
}

// get returns bk's cached record, or, on a miss, the epoch a read from
// bbolt passes to fill.
func (c *readCache) get(bk []byte) (e cached, epoch uint64, ok bool) {
	if c == nil {
		return cached{}, 0, false
	}
	sh := c.shard(bk)
	sh.mu.Lock()
	e, ok = sh.m[string(bk)]
	epoch = sh.epoch
	sh.mu.Unlock()
	return e, epoch, ok
}

// fill keeps e (its record the caller's own copy, never changed after) as
// bk's record, read when the shard was at epoch; unless a write of the
// shard came between.
func (c *readCache) fill(bk []byte, e cached, epoch uint64) {
	if c == nil || len(e.rec) > maxCachedRecord {
		return
	}
	size := e.size(len(bk))
	sh := c.shard(bk)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.pending != 0 || sh.epoch != epoch || size > c.limit {
		return
	}
	if sh.m == nil {
		sh.m = make(map[string]cached)
	}
	if old, ok := sh.m[string(bk)]; ok {
		sh.bytes -= old.size(len(bk))
	}
	sh.m[string(bk)] = e
	sh.bytes += size
	// Over its size, the shard drops entries from where Go's map
	// iteration happens to start: random enough, and free.
	for k, v := range sh.m {
		if sh.bytes <= c.limit {
			break
		}
		if k != string(bk) {
			sh.bytes -= v.size(len(k))
			delete(sh.m, k)
		}
	}
}

// begin is called, in the write transaction, before bk is written or
// removed: the key leaves the cache, and its shard takes no fill until
// end.
func (c *readCache) begin(bk []byte) {
	if c == nil {
		return
	}
	sh := c.shard(bk)
	sh.mu.Lock()
	if old, ok := sh.m[string(bk)]; ok {
		sh.bytes -= old.size(len(bk))
		delete(sh.m, string(bk))
	}
	sh.pending++
	sh.epoch++
	sh.mu.Unlock()
	c.touched = append(c.touched, string(bk))
}

// settle ends the writes begun since the last settle, once their
// transactions are committed or rolled back.
func (c *readCache) settle() {
	if c == nil {
		return
	}
	for i, k := range c.touched {
		sh := c.shardOf(k)
		sh.mu.Lock()
		sh.pending--
		sh.epoch++
		sh.mu.Unlock()
		c.touched[i] = ""
	}
	c.touched = c.touched[:0]
}

// size is the bytes the cache holds (for tests).
func (c *readCache) size() (n int64) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += sh.bytes
		sh.mu.Unlock()
	}
	return n
}
