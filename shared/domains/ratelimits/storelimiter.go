package ratelimits

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// Updater is the part of store.Store the shared limiter uses.
type Updater interface {
	Update(ctx context.Context, u store.Update) (store.Item, error)
}

// StoreOptions configure a StoreLimiter.
type StoreOptions struct {
	Store Updater
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Timeout bounds one store write (default 300 ms): a slow store is a
	// fault, and faults admit.
	Timeout time.Duration
	// MaxRefused bounds the windows remembered as full (default 10000).
	MaxRefused int
}

// StoreLimiter is shared by every process over one store (every Lambda of
// a region over its DynamoDB table). It counts in fixed windows: the
// window of a key is [start, start+interval) with start = phase +
// k*interval, where the phase is a hash of the key (so all clients' windows
// do not turn over at the same instant). Each request is one conditional
// store.Update on the window's item: Add 1 to the counter if it is below
// the count; the item expires at the window's end. The condition makes it
// exact with any number of writers (no read-modify-write), and a refused
// request changes nothing. Like any fixed window it can admit up to twice
// the count across a window boundary.
//
// Once a window refuses, the process remembers it until the window ends
// and refuses without a store write: the counter cannot go down within a
// window, so this changes no decision and spares the store under a flood.
type StoreLimiter struct {
	st      Updater
	now     func() time.Time
	timeout time.Duration
	refused refusedSet
}

// Store layout: one item per key and window.
//
//	PK  rl#<row>#<kind><id hex>#<window index>   SK  c
//	Nums {"c": requests admitted}   ExpiresAt  window end + windowGrace
const (
	counterSK   = "c"
	counterName = "c"
	// windowGrace keeps an item a little past its window: the window is in
	// the key, so expiry only collects it, and the grace absorbs clock
	// skew between the limiter and the store's TTL check.
	windowGrace = time.Minute
)

// NewStoreLimiter returns a StoreLimiter over o.Store.
func NewStoreLimiter(o StoreOptions) (*StoreLimiter, error) {
	if o.Store == nil {
		return nil, errors.New("ratelimits: StoreOptions.Store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = 300 * time.Millisecond
	}
	if o.MaxRefused <= 0 {
		o.MaxRefused = 10_000
	}
	return &StoreLimiter{st: o.Store, now: o.Now, timeout: o.Timeout, refused: refusedSet{m: map[Key]int64{}, max: o.MaxRefused}}, nil
}

// window returns the index and the end of the window holding now.
func window(k Key, iv time.Duration, now time.Time) (idx int64, start, end time.Time) {
	phase := int64(phaseHash(k) % uint64(iv))
	t := now.UnixNano() - phase
	idx = t / int64(iv)
	if t < 0 && t%int64(iv) != 0 {
		idx--
	}
	start = time.Unix(0, idx*int64(iv)+phase)
	return idx, start, start.Add(iv)
}

// phaseHash is FNV-1a of the key: stable across processes, unlike maphash.
func phaseHash(k Key) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	mix(k.Row)
	mix(byte(k.Kind))
	for _, b := range k.ID {
		mix(b)
	}
	return h
}

// StoreKey is the item that counts k's window holding now.
func StoreKey(k Key, iv time.Duration, now time.Time) store.Key {
	idx, _, _ := window(k, iv, now)
	return counterKey(k, idx)
}

func counterKey(k Key, idx int64) store.Key {
	return store.Key{PK: "rl#" + k.String() + "#" + strconv.FormatInt(idx, 10), SK: counterSK}
}

// CounterName is the Nums entry of a window's item.
const CounterName = counterName

// Take implements Limiter.
func (l *StoreLimiter) Take(ctx context.Context, k Key, r Rate) (Decision, error) {
	if err := checkRate(r); err != nil {
		return Decision{}, err
	}
	now := l.now()
	idx, _, end := window(k, r.Interval, now)
	left := end.Sub(now)
	refused := Decision{Limit: r.Count, Reset: left, RetryAfter: left}
	if l.refused.has(k, end.UnixNano()) {
		return refused, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	exp := end.Add(windowGrace)
	it, err := l.st.Update(ctx, store.Update{
		Key:          counterKey(k, idx),
		Add:          map[string]int64{counterName: 1},
		SetExpiresAt: &exp,
		Cond:         store.NumBelow(counterName, r.Count),
	})
	if errors.Is(err, store.ErrConditionFailed) {
		l.refused.add(k, end.UnixNano(), now.UnixNano())
		return refused, nil
	}
	if err != nil {
		return Decision{}, err
	}
	n := it.Nums[counterName]
	return Decision{Allowed: true, Limit: r.Count, Remaining: max(r.Count-n, 0), Reset: left}, nil
}

// refusedSet remembers, per key, the end of a window that refused.
type refusedSet struct {
	mu  sync.Mutex
	m   map[Key]int64
	max int
}

func (s *refusedSet) has(k Key, end int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k] == end
}

func (s *refusedSet) add(k Key, end, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; !ok && len(s.m) >= s.max {
		for key, e := range s.m {
			if e <= now {
				delete(s.m, key)
			}
		}
		// Still full: forget one; that costs one store write, no decision.
		for key := range s.m {
			if len(s.m) < s.max {
				break
			}
			delete(s.m, key)
		}
	}
	s.m[k] = end
}
