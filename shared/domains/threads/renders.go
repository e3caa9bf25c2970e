package threads

import (
	"hash/maphash"
	"sync"
	"time"
)

// renders keeps the answers of the hot reads (GET a thread, GET its state)
// as they were last rendered, each with a fingerprint of the stored thread
// item it was rendered from. A read still reads the thread item (one
// store read, as before), and uses the kept answer only when the bytes it
// read now have the same fingerprint: the answer is a function of those
// bytes alone (a state's checkpoint is immutable and named by them), so
// no write, delete or other process ever needs to invalidate an entry,
// and nothing stale can be served across Lambdas. The fingerprint is a
// 64-bit maphash with a per-process random seed, so nobody can make two
// versions of a thread collide on purpose; the key holds the deployment
// and thread, so an answer never crosses tenants.
type renders struct {
	seed   maphash.Seed
	budget int // bytes per shard
	shards [renderShards]renderShard
}

const renderShards = 16

// maxRendered is the largest answer kept: larger ones are rare and would
// crowd out many small ones.
const maxRendered = 64 << 10

// A shard keeps one map of answers of every kind, so that eviction picks
// among all kinds alike: with a map per kind, evicting from the first map
// first let the answers of one kind (a GET after a run of state reads)
// only ever displace each other. A look-up hashes its key's two short
// strings and allocates nothing.
type renderShard struct {
	mu    sync.Mutex
	m     map[renderID]rendered
	bytes int
}

// renderID names a kept answer: its kind, deployment and thread.
type renderID struct {
	kind     byte
	dep, tid string
}

type rendered struct {
	sum     uint64
	size    int // of the source item
	out     []byte
	expires time.Time // a delete TTL: the thread reads as absent from then on
}

// Kinds of kept answers.
const (
	renderThread    = 't'
	renderThreadTTL = 'T'
	renderState     = 's'
)

// newRenders returns a cache of at most budget bytes of answers (0: none).
func newRenders(budget int) *renders {
	if budget <= 0 {
		return nil
	}
	r := &renders{seed: maphash.MakeSeed(), budget: max(budget/renderShards, 1)}
	for i := range r.shards {
		r.shards[i].m = map[renderID]rendered{}
	}
	return r
}

func (r *renders) shard(key renderID) *renderShard {
	return &r.shards[maphash.String(r.seed, key.tid)%renderShards]
}

// get returns the answer rendered from src, if kept; gone reports that its
// delete TTL has run out since.
func (r *renders) get(key renderID, src []byte, now time.Time) (out []byte, gone, ok bool) {
	if r == nil {
		return nil, false, false
	}
	sh := r.shard(key)
	sh.mu.Lock()
	e, hit := sh.m[key]
	sh.mu.Unlock()
	if !hit || e.size != len(src) || e.sum != maphash.Bytes(r.seed, src) {
		return nil, false, false
	}
	if !e.expires.IsZero() && !now.Before(e.expires) {
		return nil, true, true
	}
	return e.out, false, true
}

// put keeps out as the answer rendered from src. out must not be changed
// afterwards: it is served as it is.
func (r *renders) put(key renderID, src, out []byte, expires time.Time) {
	if r == nil || len(out) > maxRendered {
		return
	}
	e := rendered{sum: maphash.Bytes(r.seed, src), size: len(src), out: out, expires: expires}
	cost := e.cost(key)
	sh := r.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old, ok := sh.m[key]; ok {
		delete(sh.m, key)
		sh.bytes -= old.cost(key)
	}
	// Over budget: drop entries at random (map order) until it fits.
	for old, e := range sh.m {
		if sh.bytes+cost <= r.budget {
			break
		}
		delete(sh.m, old)
		sh.bytes -= e.cost(old)
	}
	if sh.bytes+cost > r.budget {
		return
	}
	sh.m[key] = e
	sh.bytes += cost
}

// cost is an entry's share of the budget, roughly: its key, answer and
// bookkeeping.
func (e rendered) cost(k renderID) int { return 1 + len(k.dep) + len(k.tid) + len(e.out) + 64 }
