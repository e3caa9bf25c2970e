package blobs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
)

// The same conformance checks run against every driver the product uses.

func TestFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "blobs")
	b, err := blobs.Open(context.Background(), blobs.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("folder not created: %v", err)
	}
	conformance(t, b)
}

func TestS3(t *testing.T) {
	endpoint := os.Getenv("AGENTPLANE_TEST_AWS_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTPLANE_TEST_AWS_ENDPOINT is not set: the S3 adapter must be tested in CI (scripts/emulators.sh starts fauxqs)")
		}
		t.Skip("AGENTPLANE_TEST_AWS_ENDPOINT is not set: start the emulators (scripts/emulators.sh) to test S3")
	}
	ctx := context.Background()
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
	opts := blobs.S3Options{Endpoint: endpoint, PathStyle: true}
	name := "agentplane-blobs-" + randHex(6)
	client := blobs.NewS3Client(cfg, opts)
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	// Cleanups run last-in first-out: objects, then the bucket handle,
	// then the bucket.
	t.Cleanup(func() {
		_, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
		if err != nil {
			t.Errorf("delete bucket: %v", err)
		}
	})
	b, err := blobs.Open(ctx, blobs.Config{Bucket: name, AWS: cfg, Endpoint: endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	conformance(t, b)
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := blobs.Open(ctx, blobs.Config{}); err == nil {
		t.Error("empty config: want an error")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.OpenDir(file); err == nil {
		t.Error("a file as folder: want an error")
	}
	if _, err := blobs.OpenS3(ctx, aws.Config{}, "", blobs.S3Options{}); err == nil {
		t.Error("no bucket name: want an error")
	}
	if blobs.IsNotFound(nil) || blobs.IsNotFound(errors.New("x")) {
		t.Error("IsNotFound of a plain error")
	}
}

func conformance(t *testing.T, b *blob.Bucket) {
	ctx := context.Background()
	prefix := "t-" + randHex(4) + "/"

	t.Run("write read overwrite", func(t *testing.T) {
		key := prefix + "a/one.txt"
		if err := b.WriteAll(ctx, key, []byte("first"), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		got, err := b.ReadAll(ctx, key)
		if err != nil || string(got) != "first" {
			t.Fatalf("read = %q, %v", got, err)
		}
		if err := b.WriteAll(ctx, key, []byte("second"), nil); err != nil {
			t.Fatal(err)
		}
		got, err = b.ReadAll(ctx, key)
		if err != nil || string(got) != "second" {
			t.Fatalf("read after overwrite = %q, %v", got, err)
		}
		attrs, err := b.Attributes(ctx, key)
		if err != nil || attrs.Size != 6 {
			t.Fatalf("attributes = %+v, %v", attrs, err)
		}
		ok, err := b.Exists(ctx, key)
		if err != nil || !ok {
			t.Fatalf("exists = %v, %v", ok, err)
		}
	})

	t.Run("not found", func(t *testing.T) {
		key := prefix + "missing"
		_, err := b.ReadAll(ctx, key)
		if !blobs.IsNotFound(err) {
			t.Errorf("read missing: %v, want not found", err)
		}
		_, err = b.Attributes(ctx, key)
		if !blobs.IsNotFound(err) {
			t.Errorf("attributes of missing: %v, want not found", err)
		}
		ok, err := b.Exists(ctx, key)
		if err != nil || ok {
			t.Errorf("exists missing = %v, %v", ok, err)
		}
	})

	t.Run("list by prefix", func(t *testing.T) {
		p := prefix + "list/"
		want := []string{p + "x/1", p + "x/2", p + "x/3", p + "y/1"}
		for _, k := range want {
			if err := b.WriteAll(ctx, k, []byte(k), nil); err != nil {
				t.Fatal(err)
			}
		}
		// A sibling whose name shares the prefix text must not be listed.
		if err := b.WriteAll(ctx, prefix+"listing", []byte("no"), nil); err != nil {
			t.Fatal(err)
		}
		got := list(t, b, &blob.ListOptions{Prefix: p})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("list %s = %v, want %v", p, got, want)
		}
		got = list(t, b, &blob.ListOptions{Prefix: p + "x/"})
		if fmt.Sprint(got) != fmt.Sprint(want[:3]) {
			t.Errorf("list x/ = %v", got)
		}
		got = list(t, b, &blob.ListOptions{Prefix: p, Delimiter: "/"})
		if fmt.Sprint(got) != fmt.Sprint([]string{p + "x/", p + "y/"}) {
			t.Errorf("list with delimiter = %v", got)
		}
		// Paging returns every key once.
		var paged []string
		tok := blob.FirstPageToken
		for {
			objs, next, err := b.ListPage(ctx, tok, 2, &blob.ListOptions{Prefix: p})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				paged = append(paged, o.Key)
			}
			if len(next) == 0 {
				break
			}
			tok = next
		}
		if fmt.Sprint(paged) != fmt.Sprint(want) {
			t.Errorf("paged list = %v", paged)
		}
	})

	t.Run("delete", func(t *testing.T) {
		key := prefix + "del"
		if err := b.WriteAll(ctx, key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ReadAll(ctx, key); !blobs.IsNotFound(err) {
			t.Errorf("read deleted: %v", err)
		}
		if got := list(t, b, &blob.ListOptions{Prefix: key}); len(got) != 0 {
			t.Errorf("deleted key listed: %v", got)
		}
	})

	t.Run("large object", func(t *testing.T) {
		key := prefix + "large.bin"
		data := make([]byte, 3<<20+123)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		// Stream it through the writer in odd-sized chunks, as an upload
		// handler would.
		w, err := b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyBuffer(w, bytes.NewReader(data), make([]byte, 77777)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := b.ReadAll(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("large object differs: %d bytes read, %d written", len(got), len(data))
		}
		r, err := b.NewRangeReader(ctx, key, 1<<20, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		part, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(part, data[1<<20:1<<20+10]) {
			t.Fatalf("range read = %x, %v", part, err)
		}
	})

	// Leave the bucket empty so the S3 test can delete it.
	t.Cleanup(func() {
		for _, k := range list(t, b, &blob.ListOptions{Prefix: prefix}) {
			if err := b.Delete(ctx, k); err != nil {
				t.Errorf("cleanup %s: %v", k, err)
			}
		}
	})
}

func list(t *testing.T, b *blob.Bucket, opts *blob.ListOptions) []string {
	t.Helper()
	var keys []string
	it := b.List(opts)
	for {
		o, err := it.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return fmt.Sprintf("%x", b)
}
