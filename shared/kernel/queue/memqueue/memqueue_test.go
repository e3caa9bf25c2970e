package memqueue_test

import (
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/queue"
	"github.com/agentplane/agentplane/shared/kernel/queue/memqueue"
	"github.com/agentplane/agentplane/shared/kernel/queue/queuetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	queuetest.Run(t, func(t *testing.T, opts queue.Options) queue.Queue {
		return memqueue.New(opts)
	})
}

func TestLen(t *testing.T) {
	q := memqueue.New(queue.Options{})
	if err := q.Send(t.Context(), []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(t.Context(), nil); err == nil {
		t.Fatal("empty body accepted")
	}
	if q.Len() != 1 {
		t.Fatalf("Len = %d, want 1", q.Len())
	}
}
