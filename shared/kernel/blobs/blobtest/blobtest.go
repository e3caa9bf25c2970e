// Package blobtest is the conformance suite of the blobs port: every
// adapter must pass Run. The suite is the definition of the port's
// semantics; where port.go's comments and an adapter disagree, these tests
// decide.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
)

// Option adapts the suite to an adapter's environment.
type Option func(*config)

type config struct {
	skip map[string]string // subtest name → reason
}

// Skip skips the named subtests, for an emulator with a known bug that the
// adapter cannot and should not work around; reason says which. The adapter
// must still pass them somewhere else.
func Skip(reason string, subtests ...string) Option {
	return func(c *config) {
		if c.skip == nil {
			c.skip = map[string]string{}
		}
		for _, name := range subtests {
			c.skip[name] = reason
		}
	}
}

// Run runs the whole suite. open must return a fresh, empty bucket for each
// subtest and register its own clean-up; Run closes the bucket when the
// subtest ends.
func Run(t *testing.T, open func(t *testing.T) blobs.Bucket, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	tests := []struct {
		name string
		fn   func(*testing.T, blobs.Bucket)
	}{
		{"PutGetOverwrite", testPutGet},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"FailedPutKeepsOld", testFailedPut},
		{"CancelledPutKeepsOld", testCancelledPut},
		{"List", testList},
		{"ListByteOrder", testListByteOrder},
		{"ListManyKeys", testListMany},
		{"DeletePrefix", testDeletePrefix},
		{"InvalidKeys", testInvalidKeys},
		{"UnusualValidKeys", testUnusualKeys},
		{"ObjectAndFolder", testObjectAndFolder},
		{"LargeObject", testLarge},
		{"ConcurrentPutsOneKey", testConcurrentPuts},
	}
	known := map[string]bool{}
	for _, tc := range tests {
		known[tc.name] = true
	}
	for name := range c.skip {
		if !known[name] {
			t.Fatalf("blobtest.Skip: no subtest %q", name)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if reason, ok := c.skip[tc.name]; ok {
				t.Skip(reason)
			}
			b := open(t)
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			tc.fn(t, b)
		})
	}
}

var ctx = context.Background()

func put(t *testing.T, b blobs.Bucket, key, data string) {
	t.Helper()
	if err := blobs.WriteAll(ctx, b, key, []byte(data), "text/plain"); err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
}

func read(t *testing.T, b blobs.Bucket, key string) string {
	t.Helper()
	data, err := blobs.ReadAll(ctx, b, key)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return string(data)
}

func absent(t *testing.T, b blobs.Bucket, key string) {
	t.Helper()
	if data, err := blobs.ReadAll(ctx, b, key); !errors.Is(err, blobs.ErrNotFound) {
		t.Fatalf("read %q: want ErrNotFound, got %q, %v", key, data, err)
	}
	if ok, err := b.Exists(ctx, key); err != nil || ok {
		t.Fatalf("exists %q = %v, %v; want false", key, ok, err)
	}
}

type entry struct {
	Key  string
	Size int64
}

func list(t *testing.T, b blobs.Bucket, prefix string) []entry {
	t.Helper()
	var out []entry
	if err := b.List(ctx, prefix, func(k string, n int64) error {
		out = append(out, entry{k, n})
		return nil
	}); err != nil {
		t.Fatalf("list %q: %v", prefix, err)
	}
	return out
}

func keys(es []entry) string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Key
	}
	return strings.Join(out, " ")
}

func testPutGet(t *testing.T, b blobs.Bucket) {
	put(t, b, "a/one.txt", "first")
	if got := read(t, b, "a/one.txt"); got != "first" {
		t.Fatalf("read = %q", got)
	}
	if ok, err := b.Exists(ctx, "a/one.txt"); err != nil || !ok {
		t.Fatalf("exists = %v, %v", ok, err)
	}
	put(t, b, "a/one.txt", "second, longer")
	if got := read(t, b, "a/one.txt"); got != "second, longer" {
		t.Fatalf("after overwrite = %q", got)
	}
	put(t, b, "a/one.txt", "3")
	if got := read(t, b, "a/one.txt"); got != "3" {
		t.Fatalf("after shorter overwrite = %q", got)
	}
	// An empty object is an object.
	put(t, b, "a/empty", "")
	if got := read(t, b, "a/empty"); got != "" {
		t.Fatalf("empty object = %q", got)
	}
	if ok, err := b.Exists(ctx, "a/empty"); err != nil || !ok {
		t.Fatalf("exists empty = %v, %v", ok, err)
	}
	// No content type is fine too.
	if err := blobs.WriteAll(ctx, b, "a/untyped", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	if got := list(t, b, "a/"); fmt.Sprint(got) != "[{a/empty 0} {a/one.txt 1} {a/untyped 1}]" {
		t.Fatalf("list = %v", got)
	}
}

func testNotFound(t *testing.T, b blobs.Bucket) {
	absent(t, b, "missing")
	put(t, b, "dir/x", "x")
	// A folder of keys is not an object, nor is a key below an object.
	absent(t, b, "dir")
	absent(t, b, "dir/x/y")
	absent(t, b, "dir/y")
}

func testDelete(t *testing.T, b blobs.Bucket) {
	put(t, b, "d/1", "x")
	put(t, b, "d/2", "y")
	if err := b.Delete(ctx, "d/1"); err != nil {
		t.Fatal(err)
	}
	absent(t, b, "d/1")
	if got := keys(list(t, b, "")); got != "d/2" {
		t.Fatalf("after delete, list = %q", got)
	}
	// Deleting what is not there (an absent key, a folder of keys, a key
	// below an object) is not an error and removes nothing.
	for _, k := range []string{"d/1", "never", "d", "d/2/below"} {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatalf("delete absent %q: %v", k, err)
		}
	}
	if got := read(t, b, "d/2"); got != "y" {
		t.Fatalf("d/2 = %q", got)
	}
}

// failingReader yields n bytes, then fails.
type failingReader struct {
	n   int
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, r.err
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'z'
	}
	r.n -= k
	return k, nil
}

func testFailedPut(t *testing.T, b blobs.Bucket) {
	boom := errors.New("upload broke")
	// Small and large (past one S3 part) failures, over an object and on a
	// new key.
	for _, n := range []int{10, 6 << 20} {
		put(t, b, "f/old", "old")
		err := b.Put(ctx, "f/old", &failingReader{n: n, err: boom}, "")
		if !errors.Is(err, boom) {
			t.Fatalf("failed put of %d bytes: %v, want the reader's error", n, err)
		}
		if got := read(t, b, "f/old"); got != "old" {
			t.Fatalf("after failed put of %d bytes: %q", n, got)
		}
		if err := b.Put(ctx, "f/new", &failingReader{n: n, err: boom}, ""); !errors.Is(err, boom) {
			t.Fatalf("failed put of a new key: %v", err)
		}
		absent(t, b, "f/new")
		if got := keys(list(t, b, "")); got != "f/old" {
			t.Fatalf("after failed puts, list = %q", got)
		}
	}
}

// cancelReader cancels its context after n bytes, then keeps yielding.
type cancelReader struct {
	n      int
	cancel context.CancelFunc
}

func (r *cancelReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		r.cancel()
	}
	k := min(len(p), 32<<10)
	for i := range p[:k] {
		p[i] = 'c'
	}
	r.n -= k
	return k, nil
}

func testCancelledPut(t *testing.T, b blobs.Bucket) {
	for _, n := range []int{1, 6 << 20} {
		put(t, b, "c/old", "old")
		cctx, cancel := context.WithCancel(ctx)
		err := b.Put(cctx, "c/old", &cancelReader{n: n, cancel: cancel}, "")
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled put after %d bytes: %v, want context.Canceled", n, err)
		}
		if got := read(t, b, "c/old"); got != "old" {
			t.Fatalf("after cancelled put: %q", got)
		}
		cctx, cancel = context.WithCancel(ctx)
		if err := b.Put(cctx, "c/new", &cancelReader{n: n, cancel: cancel}, ""); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled put of a new key: %v", err)
		}
		cancel()
		absent(t, b, "c/new")
	}
	// A context cancelled before the call writes nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := blobs.WriteAll(cctx, b, "c/old", []byte("new"), ""); err == nil {
		t.Fatal("put with a cancelled context succeeded")
	}
	if got := read(t, b, "c/old"); got != "old" {
		t.Fatalf("after put with a cancelled context: %q", got)
	}
}

func testList(t *testing.T, b blobs.Bucket) {
	for _, k := range []string{"list/x/2", "list/x/1", "list/y/1", "list/x/3/deep/er", "list/xylophone", "listing", "other/1"} {
		put(t, b, k, k)
	}
	cases := map[string]string{
		"list/":   "list/x/1 list/x/2 list/x/3/deep/er list/xylophone list/y/1",
		"list/x/": "list/x/1 list/x/2 list/x/3/deep/er",
		// A prefix need not end at a slash.
		"list/x":   "list/x/1 list/x/2 list/x/3/deep/er list/xylophone",
		"list":     "list/x/1 list/x/2 list/x/3/deep/er list/xylophone list/y/1 listing",
		"list/x/3": "list/x/3/deep/er",
		"":         "list/x/1 list/x/2 list/x/3/deep/er list/xylophone list/y/1 listing other/1",
		"none/":    "",
		"list/z":   "",
		"list//":   "",
	}
	for prefix, want := range cases {
		if got := keys(list(t, b, prefix)); got != want {
			t.Errorf("list %q = %q, want %q", prefix, got, want)
		}
	}
	// Sizes are the objects' lengths.
	for _, e := range list(t, b, "") {
		if e.Size != int64(len(e.Key)) {
			t.Errorf("%s: size %d, want %d", e.Key, e.Size, len(e.Key))
		}
	}
	// An error from fn stops the listing and is returned.
	stop := errors.New("enough")
	n := 0
	err := b.List(ctx, "list/", func(string, int64) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List with a failing fn: %v after %d calls", err, n)
	}
	// fn may delete what it is given.
	err = b.List(ctx, "list/x/", func(k string, _ int64) error { return b.Delete(ctx, k) })
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(list(t, b, "list/")); got != "list/xylophone list/y/1" {
		t.Fatalf("after deleting while listing: %q", got)
	}
}

// Keys come back in byte order (S3's UTF-8 binary order), which differs
// from locale order in case and punctuation.
func testListByteOrder(t *testing.T, b blobs.Bucket) {
	want := []string{"o/B", "o/Z", "o/_", "o/a-b", "o/a.txt", "o/a/b", "o/a_c", "o/b", "o/é"}
	for i := len(want) - 1; i >= 0; i-- {
		put(t, b, want[i], "x")
	}
	if got := keys(list(t, b, "o/")); got != strings.Join(want, " ") {
		t.Fatalf("order = %q\n want %q", got, strings.Join(want, " "))
	}
}

// More keys than an adapter's page (tests give S3 small pages): each comes
// once, in order.
func testListMany(t *testing.T, b blobs.Bucket) {
	var want []string
	for i := range 40 {
		k := fmt.Sprintf("many/%02d/k", i)
		want = append(want, k)
		put(t, b, k, "v")
	}
	if got := keys(list(t, b, "many/")); got != strings.Join(want, " ") {
		t.Fatalf("list = %q", got)
	}
}

func testDeletePrefix(t *testing.T, b blobs.Bucket) {
	for _, k := range []string{"dep/1/a", "dep/1/b/c", "dep/1/b/d/e", "dep/10/keep", "dep/2/keep"} {
		put(t, b, k, "x")
	}
	if err := blobs.DeletePrefix(ctx, b, "dep/1/"); err != nil {
		t.Fatal(err)
	}
	if got := keys(list(t, b, "")); got != "dep/10/keep dep/2/keep" {
		t.Fatalf("after DeletePrefix: %q", got)
	}
	if err := blobs.DeletePrefix(ctx, b, "dep/1/"); err != nil {
		t.Fatalf("DeletePrefix of nothing: %v", err)
	}
	// The folder adapter keeps no empty folders: a new object where one
	// was works.
	put(t, b, "dep/1", "now an object")
	if got := read(t, b, "dep/1"); got != "now an object" {
		t.Fatalf("dep/1 = %q", got)
	}
}

func testInvalidKeys(t *testing.T, b blobs.Bucket) {
	bad := []string{
		"", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/./b", "a/../b", "../a",
		"a\\b", "a\x00b", "a\nb", "a\x7fb", "a\xffb",
		strings.Repeat("k", blobs.MaxKeyLen+1),
		"a/" + strings.Repeat("s", 256) + "/b",
	}
	for _, k := range bad {
		if err := blobs.WriteAll(ctx, b, k, []byte("x"), ""); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("put %q: %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Get(ctx, k); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("get %q: %v, want ErrInvalidKey", k, err)
		}
		if _, err := b.Exists(ctx, k); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("exists %q: %v, want ErrInvalidKey", k, err)
		}
		if err := b.Delete(ctx, k); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("delete %q: %v, want ErrInvalidKey", k, err)
		}
		if err := blobs.CheckKey(k); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v", k, err)
		}
	}
	if got := list(t, b, ""); len(got) != 0 {
		t.Fatalf("invalid keys stored: %v", got)
	}
}

func testUnusualKeys(t *testing.T, b blobs.Bucket) {
	long := strings.Repeat(strings.Repeat("s", 200)+"/", 5)
	long += strings.Repeat("t", blobs.MaxKeyLen-len(long))
	longSeg := strings.Repeat("u", 255) + "/v"
	good := []string{
		"a b/ü 日本/x+y=z@,;:!$&'()~*%20",
		".hidden/..dots/...",
		"-dash/_under",
		long,
		longSeg,
	}
	for _, k := range good {
		if err := blobs.CheckKey(k); err != nil {
			t.Fatalf("CheckKey(%q): %v", k, err)
		}
		put(t, b, k, "v:"+k)
		if got := read(t, b, k); got != "v:"+k {
			t.Fatalf("read %q = %q", k, got)
		}
	}
	if got := len(list(t, b, "")); got != len(good) {
		t.Fatalf("listed %d keys, want %d", got, len(good))
	}
}

// An object and a folder of objects with the same name: the folder adapter
// refuses the second with ErrInvalidKey, S3 stores both; either way no
// stored object is lost or changed.
func testObjectAndFolder(t *testing.T, b blobs.Bucket) {
	put(t, b, "c/a", "object")
	err := blobs.WriteAll(ctx, b, "c/a/b", []byte("below"), "")
	if err != nil && !errors.Is(err, blobs.ErrInvalidKey) {
		t.Fatalf("put below an object: %v", err)
	}
	if got := read(t, b, "c/a"); got != "object" {
		t.Fatalf("object after a put below it: %q", got)
	}
	put(t, b, "c/x/y", "inside")
	err = blobs.WriteAll(ctx, b, "c/x", []byte("over"), "")
	if err != nil && !errors.Is(err, blobs.ErrInvalidKey) {
		t.Fatalf("put over a folder: %v", err)
	}
	if got := read(t, b, "c/x/y"); got != "inside" {
		t.Fatalf("object in the folder after a put over it: %q", got)
	}
}

// chunky yields data in chunks of an odd size, and hides its length.
type chunky struct {
	r     io.Reader
	chunk int
}

func (c *chunky) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.chunk)]) }

func testLarge(t *testing.T, b blobs.Bucket) {
	// 3 MiB fits in one S3 part; 12 MiB takes three.
	for _, size := range []int{3<<20 + 123, 12<<20 + 7} {
		data := make([]byte, size)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("large/%d.bin", size)
		if err := b.Put(ctx, key, &chunky{bytes.NewReader(data), 77777}, "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
		got, err := blobs.ReadAll(ctx, b, key)
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(got) != sha256.Sum256(data) {
			t.Fatalf("%d bytes written, %d read, contents differ", len(data), len(got))
		}
		if l := list(t, b, key); len(l) != 1 || l[0].Size != int64(size) {
			t.Fatalf("listed %v", l)
		}
	}
}

// Concurrent puts to one key: readers always see one whole body, and the
// last state is one of them.
func testConcurrentPuts(t *testing.T, b blobs.Bucket) {
	const writers, rounds, size = 6, 4, 64 << 10
	body := func(w int) []byte { return bytes.Repeat([]byte{byte('A' + w)}, size+w) }
	whole := func(data []byte) bool {
		if len(data) < size {
			return false
		}
		w := int(data[0] - 'A')
		return w >= 0 && w < writers && bytes.Equal(data, body(w))
	}
	if err := blobs.WriteAll(ctx, b, "k", body(0), ""); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := blobs.ReadAll(ctx, b, "k")
			if err != nil || !whole(data) {
				readErr = fmt.Errorf("a reader saw %d bytes (%v), not a whole body", len(data), err)
				return
			}
		}
	}()
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := blobs.WriteAll(ctx, b, "k", body(w), ""); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatal(readErr)
	}
	data, err := blobs.ReadAll(ctx, b, "k")
	if err != nil || !whole(data) {
		t.Fatalf("final object: %d bytes, %v", len(data), err)
	}
	if got := keys(list(t, b, "")); got != "k" {
		t.Fatalf("list = %q", got)
	}
}
