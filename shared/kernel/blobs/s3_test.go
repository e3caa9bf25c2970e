package blobs_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/blobs/blobtest"
)

// awsEndpoint is the emulator scripts/emulators.sh started. Without it the
// test skips, except under CI, where a skip would hide the adapter.
func awsEndpoint(t *testing.T) string {
	e := os.Getenv("AGENTPLANE_TEST_AWS_ENDPOINT")
	if e == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTPLANE_TEST_AWS_ENDPOINT is not set: the S3 adapter must be tested in CI (scripts/emulators.sh starts fauxqs)")
		}
		t.Skip("AGENTPLANE_TEST_AWS_ENDPOINT is not set: start the emulators (scripts/emulators.sh) to test S3")
	}
	return e
}

func TestS3Conformance(t *testing.T) {
	endpoint := awsEndpoint(t)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	// Small list pages, so that listing pages through ListObjectsV2.
	opts := blobs.S3Options{Endpoint: endpoint, PathStyle: true, ListPageSize: 7}
	client := blobs.NewS3Client(cfg, opts)
	blobtest.Run(t, func(t *testing.T) blobs.Bucket {
		name := "agentplane-blobs-" + strings.ToLower(rand.Text()[:10])
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatalf("create bucket: %v", err)
		}
		b, err := blobs.NewS3(client, name, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := blobs.DeletePrefix(ctx, b, ""); err != nil {
				t.Errorf("empty bucket: %v", err)
			}
			if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
				t.Errorf("delete bucket: %v", err)
			}
		})
		return b
	}, blobtest.Skip("fauxqs sorts keys with localeCompare, not in byte order as S3 does", "ListByteOrder"))
}

func TestS3Errors(t *testing.T) {
	if _, err := blobs.OpenS3(aws.Config{}, "", blobs.S3Options{}); err == nil {
		t.Error("no bucket name: want an error")
	}
	if _, err := blobs.NewS3(nil, "b", blobs.S3Options{}); err == nil {
		t.Error("no client: want an error")
	}
	// A missing bucket is an error, not a missing object.
	endpoint := awsEndpoint(t)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	b, err := blobs.OpenS3(cfg, "agentplane-no-such-bucket", blobs.S3Options{Endpoint: endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := blobs.WriteAll(ctx, b, "k", []byte("x"), ""); err == nil {
		t.Error("put into a missing bucket succeeded")
	}
	if err := b.List(ctx, "", func(string, int64) error { return nil }); err == nil {
		t.Error("list of a missing bucket succeeded")
	}
}

// fakeS3 records multipart uploads; parts are read and dropped.
type fakeS3 struct {
	blobs.S3API
	mu                     sync.Mutex
	created, aborted, done int
	parts                  []int
	failPart               int
	puts                   int
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts++
	return &s3.PutObjectOutput{}, nil
}

func (f *fakeS3) CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created++
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("u1")}, nil
}

func (f *fakeS3) UploadPart(_ context.Context, in *s3.UploadPartInput, _ ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	n, _ := io.Copy(io.Discard, in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(*in.PartNumber) == f.failPart {
		return nil, errors.New("part refused")
	}
	f.parts = append(f.parts, int(n))
	return &s3.UploadPartOutput{ETag: aws.String("e")}, nil
}

func (f *fakeS3) CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done++
	return &s3.CompleteMultipartUploadOutput{}, nil
}

func (f *fakeS3) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.aborted++
	return &s3.AbortMultipartUploadOutput{}, nil
}

// zeros is a stream of unknown length.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// A body of unknown length streams as parts: the adapter holds about one
// part in memory, however large the body.
func TestS3PutStreamsInParts(t *testing.T) {
	f := &fakeS3{}
	b, err := blobs.NewS3(f, "b", blobs.S3Options{})
	if err != nil {
		t.Fatal(err)
	}
	const size = 64<<20 + 5
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := b.Put(ctx, "big", &zeros{size}, ""); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if f.created != 1 || f.done != 1 || f.aborted != 0 || f.puts != 0 {
		t.Fatalf("created %d, completed %d, aborted %d, puts %d", f.created, f.done, f.aborted, f.puts)
	}
	total := 0
	for i, n := range f.parts {
		total += n
		if n > blobs.MinPartSize || (i < len(f.parts)-1 && n != blobs.MinPartSize) {
			t.Errorf("part %d: %d bytes", i+1, n)
		}
	}
	if total != size {
		t.Fatalf("uploaded %d bytes of %d", total, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*blobs.MinPartSize {
		t.Errorf("allocated %d MiB to stream %d MiB", alloc>>20, size>>20)
	}

	// A small body is one PutObject.
	if err := b.Put(ctx, "small", strings.NewReader("tiny"), ""); err != nil || f.puts != 1 {
		t.Fatalf("small put: %v, %d PutObject calls", err, f.puts)
	}

	// A failed part aborts the upload.
	f = &fakeS3{failPart: 2}
	b, _ = blobs.NewS3(f, "b", blobs.S3Options{})
	if err := b.Put(ctx, "big", &zeros{3 * blobs.MinPartSize}, ""); err == nil {
		t.Fatal("put with a failing part succeeded")
	}
	if f.aborted != 1 || f.done != 0 {
		t.Fatalf("after a failed part: aborted %d, completed %d", f.aborted, f.done)
	}
}
