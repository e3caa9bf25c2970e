package storequeue_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/childtest"
	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/queuetest"
	"github.com/agentplane/agentplane/shared/kernel/queue/storequeue"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStore(t testing.TB, path string) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newQueue(t testing.TB, st store.Store, name string, opts queue.Options) *storequeue.Queue {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	q, err := storequeue.New(st, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestConformance(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	paths := map[queue.Queue]string{}
	var n atomic.Int64
	queuetest.Run(t, func(t *testing.T, opts queue.Options) queue.Queue {
		path := filepath.Join(t.TempDir(), "db")
		st := openStore(t, path)
		t.Cleanup(func() { st.Close() })
		q := newQueue(t, st, "q"+strconv.FormatInt(n.Add(1), 10), opts)
		mu.Lock()
		paths[q] = path
		mu.Unlock()
		return q
	}, queuetest.Durable(func(t *testing.T, q queue.Queue, opts queue.Options) queue.Queue {
		mu.Lock()
		path := paths[q]
		mu.Unlock()
		// The old process is gone: its store handle is closed (bbolt
		// allows one process per file), its consumers abandoned.
		q.(*storequeue.Queue).Store().Close()
		st := openStore(t, path)
		t.Cleanup(func() { st.Close() })
		q2 := newQueue(t, st, q.(*storequeue.Queue).Name(), opts)
		mu.Lock()
		paths[q2] = path
		mu.Unlock()
		return q2
	}))
}

// Handles of one queue in several processes over a shared store (as over
// DynamoDB) claim with conditional writes: no message is handled twice at
// once, none is lost.
func TestHandlesShareAQueue(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer st.Close()
	opts := queue.Options{Concurrency: 3, VisibilityTimeout: 30 * time.Second}
	a := newQueue(t, st, "shared", opts)
	b := newQueue(t, st, "shared", opts)
	c := newQueue(t, st, "shared", opts)
	queuetest.CompetingConsumers(t, a, []queue.Consumer{a, b, c, c}, 90)
}

// Two queues in one store do not see each other's messages.
func TestQueuesAreSeparate(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db"))
	defer st.Close()
	a := newQueue(t, st, "a", queue.Options{})
	b := newQueue(t, st, "b", queue.Options{})
	if err := a.Send(t.Context(), []byte("for a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Consume(ctx, func(_ context.Context, m queue.Message) error { got <- "b:" + string(m.Body); return nil })
	}()
	go func() {
		_ = a.Consume(ctx, func(_ context.Context, m queue.Message) error { got <- "a:" + string(m.Body); return nil })
	}()
	select {
	case m := <-got:
		if m != "a:for a" {
			t.Fatalf("got %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered")
	}
	select {
	case m := <-got:
		t.Fatalf("extra delivery %q", m)
	case <-time.After(300 * time.Millisecond):
	}
	cancel()
	<-done
	for _, name := range []string{"", "a b", "q#1", strings.Repeat("x", 81)} {
		if _, err := storequeue.New(st, name, queue.Options{}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// Without a dead-letter queue, a message that failed MaxReceives times is
// kept in the store with its last error, can be listed, put back on the
// queue, or deleted.
func TestDeadLettersKeptInTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	st := openStore(t, path)
	q := newQueue(t, st, "jobs", queue.Options{MaxReceives: 2, RetryDelay: -1})
	ctx := t.Context()
	for _, body := range []string{"poison", "fine"} {
		if err := q.Send(ctx, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	var attempts atomic.Int64
	healthy := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, m queue.Message) error {
			if string(m.Body) == "poison" {
				attempts.Add(1)
				return fmt.Errorf("cannot parse %q (attempt %d)", m.Body, m.Receives)
			}
			close(healthy)
			return nil
		})
	}()
	<-healthy
	var dead []storequeue.DeadLetter
	for start := time.Now(); len(dead) == 0 && time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		var err error
		if dead, _, err = q.DeadLetters(ctx, 10, ""); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].Body != "poison" || dead[0].Receives != 2 || !strings.Contains(dead[0].Error, "attempt 2") || dead[0].DeadAt.IsZero() {
		t.Fatalf("dead letters %+v", dead)
	}
	if attempts.Load() != 2 {
		t.Fatalf("%d attempts, want MaxReceives = 2", attempts.Load())
	}

	// Kept across a restart.
	st.Close()
	st = openStore(t, path)
	defer st.Close()
	q = newQueue(t, st, "jobs", queue.Options{MaxReceives: 2, RetryDelay: -1})
	if again, _, err := q.DeadLetters(ctx, 10, ""); err != nil || len(again) != 1 || again[0].ID != dead[0].ID {
		t.Fatalf("after restart: %+v %v", again, err)
	}

	// Redrive puts it back with a fresh receive count.
	if err := q.Redrive(ctx, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := q.Redrive(ctx, dead[0].ID); !errors.Is(err, storequeue.ErrNoDeadLetter) {
		t.Fatalf("second redrive: %v", err)
	}
	got := make(chan queue.Message, 1)
	cctx, cancel = context.WithCancel(ctx)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, m queue.Message) error { got <- m; return nil })
	}()
	select {
	case m := <-got:
		if string(m.Body) != "poison" || m.Receives != 1 {
			t.Fatalf("redriven message %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("redriven message not delivered")
	}
	cancel()
	<-done
	if left, _, _ := q.DeadLetters(ctx, 10, ""); len(left) != 0 {
		t.Fatalf("dead letters after redrive: %+v", left)
	}
	if err := q.DeleteDeadLetter(ctx, "absent"); err != nil {
		t.Fatal(err)
	}
}

// The crash is real: a child process sends messages, acknowledges some,
// and is killed (SIGKILL) inside a handler. Every message whose Send
// returned is still there; the one in the killed handler comes back after
// its visibility timeout as a second receive; acknowledged ones never
// come back.
func TestSurvivesKill(t *testing.T) {
	if os.Getenv("STOREQUEUE_CHILD") != "" {
		t.Skip("child mode")
	}
	path := filepath.Join(t.TempDir(), "db")
	cmd, lines := childtest.Start(t, "TestChildProcess", "STOREQUEUE_CHILD="+path)
	var acked []string
	inFlight := ""
	for inFlight == "" && lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 2 && f[0] == "ACKED":
			acked = append(acked, f[1])
		case len(f) == 2 && f[0] == "HANDLING":
			inFlight = f[1]
		}
	}
	if inFlight == "" {
		t.Fatalf("child ended before handling: %v", lines.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killedAt := time.Now()

	st := openStore(t, path)
	defer st.Close()
	q := newQueue(t, st, "jobs", queue.Options{VisibilityTimeout: childVisibility, Concurrency: 4})
	got := make(chan queue.Message, 100)
	at := map[string]time.Time{}
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(_ context.Context, m queue.Message) error {
			mu.Lock()
			at[string(m.Body)] = time.Now()
			mu.Unlock()
			got <- m
			return nil
		})
	}()
	seen := map[string]queue.Message{}
	for len(seen) < childMessages-len(acked) {
		select {
		case m := <-got:
			if _, dup := seen[string(m.Body)]; dup {
				t.Fatalf("%s delivered twice", m.Body)
			}
			seen[string(m.Body)] = m
		case <-time.After(20 * time.Second):
			t.Fatalf("after the kill %d messages came back, want %d (acked %v)", len(seen), childMessages-len(acked), acked)
		}
	}
	cancel()
	<-done
	for _, a := range acked {
		if _, ok := seen[a]; ok {
			t.Errorf("acknowledged message %s delivered again", a)
		}
	}
	m, ok := seen[inFlight]
	if !ok || m.Receives != 2 {
		t.Fatalf("message in the killed handler: %+v (present %v)", m, ok)
	}
	if gap := at[inFlight].Sub(killedAt); gap < childVisibility/2 {
		t.Errorf("redelivered %s after the kill, before its visibility timeout", gap)
	}
	// The child handled one message at a time and claimed at most two
	// ahead (its buffer holds up to twice its handlers): those come back as
	// second receives too, the rest as first receives.
	second := 0
	for body, m := range seen {
		switch {
		case m.Receives == 2:
			second++
			if gap := at[body].Sub(killedAt); gap < childVisibility/2 {
				t.Errorf("%s redelivered %s after the kill, before its visibility timeout", body, gap)
			}
		case m.Receives != 1:
			t.Errorf("%s: receives %d", body, m.Receives)
		}
	}
	if second > 3 {
		t.Errorf("%d messages were claimed by the killed child, at most 3 may be", second)
	}
}

const (
	childMessages   = 30
	childAcks       = 5
	childVisibility = 2 * time.Second
)

// TestChildProcess is the process TestSurvivesKill kills.
func TestChildProcess(t *testing.T) {
	path := os.Getenv("STOREQUEUE_CHILD")
	if path == "" {
		t.Skip("run by TestSurvivesKill")
	}
	st := openStore(t, path)
	q := newQueue(t, st, "jobs", queue.Options{VisibilityTimeout: childVisibility, Concurrency: 1})
	for i := range childMessages {
		if err := q.Send(t.Context(), fmt.Appendf(nil, "m%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	var acked []string
	_ = q.Consume(t.Context(), func(ctx context.Context, m queue.Message) error {
		n++
		if n <= childAcks {
			acked = append(acked, string(m.Body))
			return nil
		}
		// Acknowledgements are written after their handlers return: wait
		// until the stored messages (layout in the package doc) no longer
		// hold them, then tell the parent.
		for {
			page, err := st.Query(ctx, store.Query{PK: "queue#jobs", Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			left := map[string]bool{}
			for _, it := range page.Items {
				left[string(it.Data)] = true
			}
			gone := true
			for _, a := range acked {
				gone = gone && !left[a]
			}
			if gone {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, a := range acked {
			fmt.Printf("ACKED %s\n", a)
		}
		fmt.Printf("HANDLING %s\n", m.Body)
		select {} // killed here
	})
}
