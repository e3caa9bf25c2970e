package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/kernel/childtest"
	"github.com/agentplane/agentplane/shared/kernel/store"
	"github.com/agentplane/agentplane/shared/kernel/store/boltstore"
)

// The crash is real: a child process writes from many goroutines and
// prints each write once its call has returned; it is killed (SIGKILL)
// mid-stream. Reopened, the store holds every write the child was told
// had committed, whatever the log, the memory tables and the checkpoints
// were doing: it is killed after more than a second of writing, so that
// its memory tables have been frozen and checkpointed meanwhile.
func TestSurvivesKill(t *testing.T) {
	if os.Getenv("BOLTSTORE_CHILD") != "" {
		t.Skip("child mode")
	}
	path := filepath.Join(t.TempDir(), "db")
	cmd, lines := childtest.Start(t, "TestKillChild", "BOLTSTORE_CHILD="+path)
	var acked []int
	until := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(until) && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "OK "); ok {
			i, err := strconv.Atoi(n)
			if err != nil {
				t.Fatal(err)
			}
			acked = append(acked, i)
		}
	}
	if time.Now().Before(until) || len(acked) == 0 {
		t.Fatalf("child ended after %d writes: %v", len(acked), lines.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, i := range acked {
		it, err := s.Get(context.Background(), killKey(i))
		if err != nil || string(it.Data) != fmt.Sprint(i) {
			t.Fatalf("write %d was acknowledged before the kill, then: %q, %v", i, it.Data, err)
		}
	}
	p, err := s.Query(context.Background(), store.Query{PK: "kill", Index: "gsi1", Limit: 100000})
	if err != nil || len(p.Items) < len(acked) {
		t.Fatalf("the index holds %d items, %d were acknowledged (%v)", len(p.Items), len(acked), err)
	}
}

func killKey(i int) store.Key { return store.Key{PK: "kill", SK: fmt.Sprintf("%06d", i)} }

// TestKillChild is the child of TestSurvivesKill: it writes until killed.
func TestKillChild(t *testing.T) {
	path := os.Getenv("BOLTSTORE_CHILD")
	if path == "" {
		t.Skip("run by TestSurvivesKill")
	}
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(os.Stdout)
	acks := make(chan int, 64)
	for g := range 16 {
		go func() {
			for i := g; ; i += 16 {
				it := store.Item{Key: killKey(i), Data: []byte(fmt.Sprint(i)),
					Indexes: map[string]store.IndexKey{"gsi1": {PK: "kill", SK: fmt.Sprintf("%06d", i)}}}
				if _, err := s.Put(context.Background(), it, store.NotExists()); err != nil && !errors.Is(err, store.ErrConditionFailed) {
					panic(err)
				}
				acks <- i
			}
		}()
	}
	for i := range acks {
		fmt.Fprintf(w, "OK %d\n", i)
		w.Flush()
	}
}
