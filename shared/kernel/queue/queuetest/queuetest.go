// Package queuetest is the conformance suite of the queue port. Every
// adapter runs it; it is the definition of the port's semantics.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/queue"
)

// Factory returns a new, empty queue whose consumers use opts. It registers
// its own clean-up with t.
type Factory func(t *testing.T, opts queue.Options) queue.Queue

// Reopen simulates a restart of the process that holds q: it returns a new
// handle on the same queue (the same stored messages). q and its consumers
// are abandoned as after a crash: nothing is acknowledged or handed back.
type Reopen func(t *testing.T, q queue.Queue, opts queue.Options) queue.Queue

// Option adapts the suite to an adapter.
type Option func(*config)

type config struct {
	reopen Reopen
}

// Durable runs the restart cases too, for an adapter whose messages outlive
// the process (sqsqueue, storequeue); reopen makes the new handle.
func Durable(reopen Reopen) Option { return func(c *config) { c.reopen = reopen } }

// Run runs the suite. Its tests run in parallel, each on its own queues.
func Run(t *testing.T, newQueue Factory, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	t.Run("Delivery", func(t *testing.T) { t.Parallel(); testDelivery(t, newQueue) })
	t.Run("InvalidBody", func(t *testing.T) { t.Parallel(); testInvalid(t, newQueue) })
	t.Run("Ack", func(t *testing.T) { t.Parallel(); testAck(t, newQueue) })
	t.Run("RedeliveryAfterError", func(t *testing.T) { t.Parallel(); testRedelivery(t, newQueue) })
	t.Run("Panic", func(t *testing.T) { t.Parallel(); testPanic(t, newQueue) })
	t.Run("DeadLetter", func(t *testing.T) { t.Parallel(); testDeadLetter(t, newQueue) })
	t.Run("ConcurrentSenders", func(t *testing.T) { t.Parallel(); testConcurrent(t, newQueue) })
	t.Run("StopHandsBack", func(t *testing.T) { t.Parallel(); testStop(t, newQueue) })
	t.Run("CompetingConsumers", func(t *testing.T) { t.Parallel(); testCompeting(t, newQueue) })
	if c.reopen != nil {
		t.Run("Restart", func(t *testing.T) { t.Parallel(); testRestart(t, newQueue, c.reopen) })
	}
}

// consume runs Consume in the background until the test ends, and checks
// that it stops cleanly.
func consume(t *testing.T, q queue.Consumer, h queue.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Consume(ctx, h) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume returned %v after cancel, want nil", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("Consume did not return within 30s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func recv(t *testing.T, ch <-chan queue.Message, within time.Duration) queue.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(within):
		t.Fatalf("no message within %s", within)
		return queue.Message{}
	}
}

func none(t *testing.T, ch <-chan queue.Message, during time.Duration) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("unexpected delivery %q (receive %d)", m.Body, m.Receives)
	case <-time.After(during):
	}
}

func testDelivery(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{VisibilityTimeout: 5 * time.Second})
	ctx := context.Background()
	// Non-ASCII text from the Basic Multilingual Plane: SQS also allows
	// U+10000 and above, but fauxqs rejects them, so the suite does not
	// rely on it.
	body := `{"kind":"build","id":"rev-1","text":"héllo ✓ 日本"}`
	if err := q.Send(ctx, []byte(body)); err != nil {
		t.Fatal(err)
	}
	got := make(chan queue.Message, 10)
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		got <- m
		return nil
	})
	m := recv(t, got, 20*time.Second)
	if string(m.Body) != body {
		t.Errorf("body = %q, want %q", m.Body, body)
	}
	if m.ID == "" || m.Receives != 1 {
		t.Errorf("id %q, receives %d; want an id and 1", m.ID, m.Receives)
	}
}

func testInvalid(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{})
	ctx := context.Background()
	for name, body := range map[string][]byte{
		"empty":    nil,
		"too big":  []byte(strings.Repeat("x", queue.MaxBodySize+1)),
		"not utf8": {'a', 0xff, 'b'},
		"nul":      []byte("a\x00b"),
		"control":  []byte("a\x07b"),
		"fffe":     []byte("a\uFFFEb"),
	} {
		if err := q.Send(ctx, body); !errors.Is(err, queue.ErrInvalid) {
			t.Errorf("%s: Send = %v, want ErrInvalid", name, err)
		}
	}
	// The largest body is accepted.
	if err := q.Send(ctx, []byte(strings.Repeat("y", queue.MaxBodySize))); err != nil {
		t.Errorf("body of MaxBodySize: %v", err)
	}
}

func testAck(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{VisibilityTimeout: time.Second})
	got := make(chan queue.Message, 10)
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		got <- m
		return nil
	})
	if err := q.Send(context.Background(), []byte("once")); err != nil {
		t.Fatal(err)
	}
	recv(t, got, 20*time.Second)
	// Past the visibility timeout an unacknowledged message would return.
	none(t, got, 2500*time.Millisecond)
}

func testRedelivery(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{VisibilityTimeout: 30 * time.Second, RetryDelay: time.Second})
	got := make(chan queue.Message, 10)
	var mu sync.Mutex
	at := map[int]time.Time{}
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		mu.Lock()
		at[m.Receives] = time.Now()
		mu.Unlock()
		got <- m
		if m.Receives == 1 {
			return errors.New("flaky dependency")
		}
		return nil
	})
	if err := q.Send(context.Background(), []byte("retry me")); err != nil {
		t.Fatal(err)
	}
	first := recv(t, got, 20*time.Second)
	second := recv(t, got, 20*time.Second)
	if first.ID != second.ID || string(second.Body) != "retry me" || first.Receives != 1 || second.Receives != 2 {
		t.Fatalf("deliveries %+v then %+v", first, second)
	}
	mu.Lock()
	gap := at[2].Sub(at[1])
	mu.Unlock()
	// The retry waits for RetryDelay, not for the 30s visibility timeout.
	if gap < 900*time.Millisecond || gap > 20*time.Second {
		t.Errorf("redelivered after %s, want about the 1s retry delay", gap)
	}
	none(t, got, 1500*time.Millisecond)
}

func testPanic(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{RetryDelay: -1})
	got := make(chan queue.Message, 10)
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		got <- m
		if m.Receives == 1 {
			panic("bad message")
		}
		return nil
	})
	if err := q.Send(context.Background(), []byte("boom")); err != nil {
		t.Fatal(err)
	}
	recv(t, got, 20*time.Second)
	if m := recv(t, got, 20*time.Second); m.Receives != 2 {
		t.Errorf("after a panic: receives = %d, want 2", m.Receives)
	}
}

func testDeadLetter(t *testing.T, newQueue Factory) {
	dlq := newQueue(t, queue.Options{})
	q := newQueue(t, queue.Options{RetryDelay: -1, MaxReceives: 3, DeadLetter: dlq})
	got := make(chan queue.Message, 10)
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		got <- m
		return fmt.Errorf("attempt %d failed", m.Receives)
	})
	if err := q.Send(context.Background(), []byte("poison")); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if m := recv(t, got, 20*time.Second); m.Receives != i {
			t.Fatalf("delivery %d has receives %d", i, m.Receives)
		}
	}
	dead := make(chan queue.Message, 10)
	consume(t, dlq, func(ctx context.Context, m queue.Message) error {
		dead <- m
		return nil
	})
	if m := recv(t, dead, 20*time.Second); string(m.Body) != "poison" {
		t.Errorf("dead letter body %q", m.Body)
	}
	// It is gone from the main queue.
	none(t, got, 1500*time.Millisecond)
}

func testConcurrent(t *testing.T, newQueue Factory) {
	const senders, each = 8, 40
	q := newQueue(t, queue.Options{Concurrency: 8, VisibilityTimeout: 30 * time.Second})
	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(m.Body)]++
		if len(seen) == senders*each {
			select {
			case <-all:
			default:
				close(all)
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, senders*each)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := q.Send(context.Background(), fmt.Appendf(nil, `{"sender":%d,"n":%d}`, s, i)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("received %d distinct messages of %d", len(seen), senders*each)
	}
	mu.Lock()
	defer mu.Unlock()
	for s := range senders {
		for i := range each {
			if seen[fmt.Sprintf(`{"sender":%d,"n":%d}`, s, i)] == 0 {
				t.Errorf("message %d/%d lost", s, i)
			}
		}
	}
}

func testStop(t *testing.T, newQueue Factory) {
	q := newQueue(t, queue.Options{VisibilityTimeout: 60 * time.Second})
	started := make(chan queue.Message, 1)
	sawCancel := make(chan bool, 1)
	stop := consume(t, q, func(ctx context.Context, m queue.Message) error {
		started <- m
		<-ctx.Done()
		sawCancel <- true
		return ctx.Err()
	})
	if err := q.Send(context.Background(), []byte("long job")); err != nil {
		t.Fatal(err)
	}
	recv(t, started, 20*time.Second)
	stop()
	select {
	case <-sawCancel:
	default:
		t.Fatal("Consume returned before its running handler did")
	}
	// The interrupted message is handed back at once, not after the 60s
	// visibility timeout, and is not dead-lettered.
	got := make(chan queue.Message, 1)
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		got <- m
		return nil
	})
	// (SQS may count one more receive: the stopped consumer's last poll
	// can pick the message up and hand it back again.)
	if m := recv(t, got, 20*time.Second); string(m.Body) != "long job" || m.Receives < 2 {
		t.Errorf("after stop: %q receives %d", m.Body, m.Receives)
	}
}

// Several Consume loops share a queue: every message is handled, and no
// message is ever handled by two of them at once.
func testCompeting(t *testing.T, newQueue Factory) {
	const n = 60
	opts := queue.Options{Concurrency: 3, VisibilityTimeout: 30 * time.Second}
	q := newQueue(t, opts)
	CompetingConsumers(t, q, []queue.Consumer{q, q, q}, n)
}

// CompetingConsumers sends n messages to q while the consumers (which
// share q's messages: Consume loops of q, or handles of q in other
// processes) run, and checks that every message is handled and none by two
// consumers at once. Adapters whose handles can share a queue run it with
// several handles.
func CompetingConsumers(t *testing.T, q queue.Sender, consumers []queue.Consumer, n int) {
	var mu sync.Mutex
	inFlight := map[string]bool{}
	handled := map[string]int{}
	all := make(chan struct{})
	for _, c := range consumers {
		consume(t, c, func(ctx context.Context, m queue.Message) error {
			mu.Lock()
			if inFlight[m.ID] {
				t.Errorf("message %s handled by two consumers at once", m.Body)
			}
			inFlight[m.ID] = true
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			delete(inFlight, m.ID)
			handled[string(m.Body)]++
			if len(handled) == n {
				select {
				case <-all:
				default:
					close(all)
				}
			}
			return nil
		})
	}
	for i := range n {
		if err := q.Send(context.Background(), fmt.Appendf(nil, "m%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d messages handled", len(handled), n)
	}
	mu.Lock()
	defer mu.Unlock()
	for body, k := range handled {
		if k > 1 {
			// At-least-once allows it, but not within a visibility timeout
			// that no handler came near.
			t.Errorf("%s handled %d times", body, k)
		}
	}
}

// A restart keeps every message: those never received are delivered by the
// new process, and one that was received but never acknowledged (the old
// process died in its handler) comes back once its visibility timeout has
// passed, counted as a second receive.
func testRestart(t *testing.T, newQueue Factory, reopen Reopen) {
	opts := queue.Options{Concurrency: 1, VisibilityTimeout: 2 * time.Second, RetryDelay: -1}
	q := newQueue(t, opts)
	for _, body := range []string{"first", "second", "third"} {
		if err := q.Send(context.Background(), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan queue.Message, 1)
	block := make(chan struct{})
	consume(t, q, func(ctx context.Context, m queue.Message) error {
		started <- m
		<-block // the process dies here
		return errors.New("never returns before the crash")
	})
	// Registered after consume, so it runs first and lets that stop.
	t.Cleanup(func() { close(block) })
	inFlight := recv(t, started, 20*time.Second)
	receivedAt := time.Now()

	q2 := reopen(t, q, opts)
	type delivery struct {
		m  queue.Message
		at time.Time
	}
	got := make(chan delivery, 10)
	consume(t, q2, func(ctx context.Context, m queue.Message) error {
		got <- delivery{m, time.Now()}
		return nil
	})
	seen := map[string]delivery{}
	deadline := time.After(60 * time.Second)
	for len(seen) < 3 {
		select {
		case d := <-got:
			if _, dup := seen[string(d.m.Body)]; dup {
				t.Errorf("%s delivered twice after the restart", d.m.Body)
			}
			seen[string(d.m.Body)] = d
		case <-deadline:
			t.Fatalf("after the restart only %d of 3 messages came: %v", len(seen), seen)
		}
	}
	back := seen[string(inFlight.Body)]
	if back.m.ID != inFlight.ID || back.m.Receives < 2 {
		t.Errorf("the message in flight at the crash came back as %+v (was %+v)", back.m, inFlight)
	}
	// Not before its visibility timeout (SQS counts whole seconds).
	if gap := back.at.Sub(receivedAt); gap < opts.VisibilityTimeout-time.Second/2 {
		t.Errorf("redelivered %s after the crash, before its %s visibility timeout", gap, opts.VisibilityTimeout)
	}
	// The others were never handled, but their receive counts are not
	// fixed: an adapter may have received them ahead for its next free
	// handler (and then they too wait out a visibility timeout).
	for body, d := range seen {
		if d.m.Receives < 1 {
			t.Errorf("%s: receives %d", body, d.m.Receives)
		}
	}
	select {
	case d := <-got:
		t.Errorf("unexpected delivery %q (receive %d)", d.m.Body, d.m.Receives)
	case <-time.After(1500 * time.Millisecond):
	}
}
