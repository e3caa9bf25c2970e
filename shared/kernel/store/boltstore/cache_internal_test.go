package boltstore

import (
	"bytes"
	"fmt"
	"testing"
)

// A read that overlapped a write of its shard is not kept, whether the
// write is still uncommitted or has ended since the read began.
func TestCacheRefusesFillsAcrossWrites(t *testing.T) {
	c := newReadCache(DefaultCacheBytes)
	k, other := []byte("key"), []byte("other")
	_, e, _ := c.get(k)
	c.begin(k) // a write of k begins after the read did
	c.fill(k, newCached([]byte("old")), e)
	if _, _, ok := c.get(k); ok {
		t.Fatal("a fill while the write is pending was kept")
	}
	_, e2, _ := c.get(k)
	c.settle()
	c.fill(k, newCached([]byte("old")), e2) // read before the commit, filled after it
	if _, _, ok := c.get(k); ok {
		t.Fatal("a fill that began before the write ended was kept")
	}
	_, e3, _ := c.get(k)
	c.fill(k, newCached([]byte("new")), e3)
	if v, _, ok := c.get(k); !ok || string(v.rec) != "new" {
		t.Fatalf("a fill with no write between was not kept: %q %v", v.rec, ok)
	}
	// A write begins on k: it leaves the cache at once.
	_, eo, _ := c.get(other)
	c.begin(k)
	if _, _, ok := c.get(k); ok {
		t.Fatal("a key being written is still served from the cache")
	}
	c.settle()
	if c.shard(other) != c.shard(k) {
		c.fill(other, newCached([]byte("x")), eo)
		if _, _, ok := c.get(other); !ok {
			t.Fatal("a write of another shard refused a fill")
		}
	}
}

// The cache stays within its size, and does not keep large records.
func TestCacheStaysWithinItsSize(t *testing.T) {
	const size = 2 << 20
	c := newReadCache(size)
	for i := 0; i < 40000; i++ {
		k := []byte(fmt.Sprintf("key-%05d", i))
		_, e, _ := c.get(k)
		c.fill(k, newCached(bytes.Repeat([]byte("v"), 40)), e)
	}
	if n := c.size(); n > size || n < size/2 {
		t.Fatalf("the cache holds %d bytes; its size is %d", n, size)
	}
	big := []byte("big")
	_, e, _ := c.get(big)
	c.fill(big, newCached(make([]byte, maxCachedRecord+1)), e)
	if _, _, ok := c.get(big); ok {
		t.Fatal("a record over maxCachedRecord was kept")
	}
	if newReadCache(0) != nil || newReadCache(-1) != nil {
		t.Fatal("a size of zero or less should turn the cache off")
	}
	var off *readCache
	off.begin(big)
	off.settle()
	off.fill(big, newCached([]byte("x")), 0)
	if _, _, ok := off.get(big); ok {
		t.Fatal("no cache, no hits")
	}
}
