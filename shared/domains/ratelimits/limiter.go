package ratelimits

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// Limiter counts one request of key against rate and decides.
type Limiter interface {
	// Take counts one request. An error means the limiter could not
	// decide (its store failed); the caller admits the request.
	Take(ctx context.Context, key Key, rate Rate) (Decision, error)
}

// Decision is a limiter's answer, and what the RateLimit headers say.
type Decision struct {
	Allowed bool
	// Limit is the rate's count.
	Limit int64
	// Remaining is how many more requests would be admitted now.
	Remaining int64
	// Reset is how long until the whole count is available again.
	Reset time.Duration
	// RetryAfter, when refused, is how long until a request is admitted.
	RetryAfter time.Duration
}

// Rates beyond these bounds are refused, so the arithmetic below cannot
// overflow (the table's largest is 10000 per 60 s, its longest 3600 s).
const (
	maxCount    = 1_000_000
	maxInterval = 24 * time.Hour
)

var errRate = errors.New("ratelimits: rate out of range")

func checkRate(r Rate) error {
	if r.Count < 1 || r.Count > maxCount || r.Interval < time.Millisecond || r.Interval > maxInterval {
		return fmt.Errorf("%w: %d per %s", errRate, r.Count, r.Interval)
	}
	return nil
}

// MemoryOptions configure a MemoryLimiter.
type MemoryOptions struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// MaxKeys bounds the identities held (default 100000, about 8 MB).
	MaxKeys int
}

// MemoryLimiter is exact within one process. It runs GCRA (the generic
// cell rate algorithm, a token bucket kept as one timestamp): a key may
// spend its whole count at once and then gets one request back every
// interval/count. Why GCRA rather than a sliding-window log: it is O(1) in
// time and memory per identity (one timestamp instead of up to 10000 for
// Commits), it never admits more than count in a burst nor more than
// count per interval on average, and an identity whose bucket is full
// again holds no information, so evicting it changes no decision.
type MemoryLimiter struct {
	now      func() time.Time
	seed     maphash.Seed
	perShard int
	shards   [shardCount]memShard
}

const shardCount = 64

type memShard struct {
	mu sync.Mutex
	m  map[Key]gcra
	// lastSweep bounds full sweeps to one a second per shard.
	lastSweep int64
	_         [40]byte // keep shards on separate cache lines
}

// gcra is the theoretical arrival time of a key's next request, in
// microseconds since the Unix epoch plus rem/count of a microsecond (so
// interval/count is added exactly), and the count it was kept for.
type gcra struct {
	tat   int64
	rem   int64
	count int64
}

// NewMemoryLimiter returns an empty MemoryLimiter.
func NewMemoryLimiter(o MemoryOptions) *MemoryLimiter {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = 100_000
	}
	l := &MemoryLimiter{now: o.Now, seed: maphash.MakeSeed(), perShard: max(1, o.MaxKeys/shardCount)}
	for i := range l.shards {
		l.shards[i].m = make(map[Key]gcra)
	}
	return l
}

// Len is how many identities the limiter holds.
func (l *MemoryLimiter) Len() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// Take implements Limiter.
func (l *MemoryLimiter) Take(_ context.Context, k Key, r Rate) (Decision, error) {
	if err := checkRate(r); err != nil {
		return Decision{}, err
	}
	now := l.now().UnixMicro()
	c, iv := r.Count, r.Interval.Microseconds()
	// interval/count = q + rem/count microseconds.
	q, rem := iv/c, iv%c
	s := &l.shards[maphash.Comparable(l.seed, k)%shardCount]
	s.mu.Lock()
	st, ok := s.m[k]
	if !ok || st.count != c || st.tat < now {
		// Absent, kept for another rate, or full again: start from now.
		st = gcra{tat: now, count: c}
	}
	// The request's new arrival time must stay within one interval of now.
	nt, nr := st.tat+q, st.rem+rem
	if nr >= c {
		nt, nr = nt+1, nr-c
	}
	if nt-now > iv || nt-now == iv && nr > 0 {
		s.mu.Unlock()
		// Admitted again once now+interval reaches nt.
		wait := nt - iv - now
		if nr > 0 {
			wait++
		}
		return Decision{Limit: c, Reset: ceilMicros(st.tat-now, st.rem > 0), RetryAfter: time.Duration(max(wait, 1)) * time.Microsecond}, nil
	}
	if !ok && len(s.m) >= l.perShard {
		l.evict(s, now)
	}
	s.m[k] = gcra{tat: nt, rem: nr, count: c}
	s.mu.Unlock()
	// Requests that still fit: each takes interval/count.
	remaining := ((now+iv-nt)*c - nr) / iv
	return Decision{Allowed: true, Limit: c, Remaining: remaining, Reset: ceilMicros(nt-now, nr > 0)}, nil
}

func ceilMicros(us int64, frac bool) time.Duration {
	if frac {
		us++
	}
	return time.Duration(max(us, 0)) * time.Microsecond
}

// evict makes room in a full shard: first every key whose bucket is full
// again (forgetting it changes nothing), at most once a second; if none
// is, the sampled key nearest to full (the least loss of exactness).
func (l *MemoryLimiter) evict(s *memShard, now int64) {
	if now-s.lastSweep >= int64(time.Second/time.Microsecond) {
		s.lastSweep = now
		for k, st := range s.m {
			if st.tat <= now {
				delete(s.m, k)
			}
		}
		if len(s.m) < l.perShard {
			return
		}
	}
	var victim Key
	best, n := int64(-1), 0
	for k, st := range s.m {
		if best < 0 || st.tat < best {
			victim, best = k, st.tat
		}
		if n++; n == 8 {
			break
		}
	}
	delete(s.m, victim)
}
