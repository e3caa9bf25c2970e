package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3API is the part of the S3 client the adapter uses (*s3.Client).
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(ctx context.Context, in *s3.UploadPartInput, optFns ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(ctx context.Context, in *s3.AbortMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// S3Options tunes the S3 adapter and its client.
type S3Options struct {
	// Endpoint overrides the service endpoint (LocalStack, an emulator);
	// empty means AWS's. An endpoint also turns off the SDK's default
	// request checksums, which third-party S3 servers reject.
	Endpoint string
	// PathStyle uses path-style addressing (http://host/bucket/key), which
	// emulators need since they do not serve bucket subdomains.
	PathStyle bool
	// PartSize is the size of a multipart upload's parts, and so the most
	// memory one Put holds (default and minimum 5 MiB, S3's smallest part).
	// A body that fits in one part is sent with one PutObject.
	PartSize int
	// ListPageSize is how many keys one ListObjectsV2 request asks for
	// (default 1000, S3's most).
	ListPageSize int
}

// MinPartSize is S3's smallest part of a multipart upload (but the last).
const MinPartSize = 5 << 20

// maxParts is S3's largest number of parts in one upload.
const maxParts = 10000

// S3Bucket is the S3 adapter of the Bucket port.
type S3Bucket struct {
	api    S3API
	bucket string
	o      S3Options
}

var _ Bucket = (*S3Bucket)(nil)

// NewS3 returns the adapter for bucket through api (a client from
// NewS3Client, or any S3API).
func NewS3(api S3API, bucket string, o S3Options) (*S3Bucket, error) {
	if bucket == "" {
		return nil, errors.New("blobs: S3 bucket name is required")
	}
	if api == nil {
		return nil, errors.New("blobs: an S3 client is required")
	}
	if o.PartSize < MinPartSize {
		o.PartSize = MinPartSize
	}
	if o.ListPageSize <= 0 || o.ListPageSize > 1000 {
		o.ListPageSize = 1000
	}
	return &S3Bucket{api: api, bucket: bucket, o: o}, nil
}

// OpenS3 returns the adapter for bucket with a client built by NewS3Client.
func OpenS3(cfg aws.Config, bucket string, o S3Options) (*S3Bucket, error) {
	return NewS3(NewS3Client(cfg, o), bucket, o)
}

// NewS3Client builds the S3 client OpenS3 uses; tests and set-up code use it
// to create buckets on emulators.
func NewS3Client(cfg aws.Config, o S3Options) *s3.Client {
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		so.UsePathStyle = o.PathStyle
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
			// Since s3 v1.73 the SDK adds CRC32 checksums by default, which
			// many S3-compatible servers reject; AWS itself does not need them.
			so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
}

// Put implements Bucket. A body that fits in one part goes up with one
// PutObject; a larger one as a multipart upload, one part in memory at a
// time, aborted on any failure so that the old object stays.
func (b *S3Bucket) Put(ctx context.Context, key string, r io.Reader, contentType string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	var ct *string
	if contentType != "" {
		ct = aws.String(contentType)
	}
	r = ctxReader{ctx, r}
	// Most objects are small: read a little first, and take a whole part
	// of memory only for a body that does not fit in it.
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(r, buf)
	if err == nil {
		part := make([]byte, b.o.PartSize)
		copy(part, buf)
		var m int
		m, err = io.ReadFull(r, part[n:])
		buf, n = part, n+m
	}
	switch err {
	case nil:
		return b.multipart(ctx, key, ct, r, buf)
	case io.EOF, io.ErrUnexpectedEOF:
	default:
		return err
	}
	_, err = b.api.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), ContentType: ct,
		Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
	})
	if err != nil {
		return fmt.Errorf("blobs: put %s: %w", key, err)
	}
	return nil
}

// multipart uploads buf, a full first part, and the rest of r, reusing
// buf for each part.
func (b *S3Bucket) multipart(ctx context.Context, key string, ct *string, r io.Reader, buf []byte) (err error) {
	up, err := b.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), ContentType: ct,
	})
	if err != nil {
		return fmt.Errorf("blobs: put %s: start upload: %w", key, err)
	}
	defer func() {
		if err != nil {
			// Abort even when ctx was cancelled: an unfinished upload
			// keeps its parts (and costs) until aborted.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_, _ = b.api.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(b.bucket), Key: aws.String(key), UploadId: up.UploadId,
			})
		}
	}()
	var parts []types.CompletedPart
	part := buf
	for n := int32(1); ; n++ {
		out, err := b.api.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(b.bucket), Key: aws.String(key), UploadId: up.UploadId, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part))),
		})
		if err != nil {
			return fmt.Errorf("blobs: put %s: part %d: %w", key, n, err)
		}
		// S3 takes the ETag with or without its quotes; the XML encoder
		// would write them as &#34;, which some S3-compatible servers do
		// not decode.
		parts = append(parts, types.CompletedPart{
			ETag: aws.String(strings.Trim(aws.ToString(out.ETag), `"`)), PartNumber: aws.Int32(n),
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
			ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
		})
		k, err := io.ReadFull(r, buf)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return err
		}
		if k == 0 {
			break
		}
		part = buf[:k]
		if n == maxParts {
			return fmt.Errorf("blobs: put %s: more than %d parts of %d bytes", key, maxParts, b.o.PartSize)
		}
	}
	_, err = b.api.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return fmt.Errorf("blobs: put %s: complete upload: %w", key, err)
	}
	return nil
}

// notFound reports whether err is S3's answer for a missing object.
func notFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var re *smithyhttp.ResponseError
	return errors.As(err, &nsk) || errors.As(err, &nf) ||
		(errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound)
}

// Get implements Bucket.
func (b *S3Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	out, err := b.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if notFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: get %s: %w", key, err)
	}
	return out.Body, nil
}

// Exists implements Bucket.
func (b *S3Bucket) Exists(ctx context.Context, key string) (bool, error) {
	if err := CheckKey(key); err != nil {
		return false, err
	}
	_, err := b.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("blobs: head %s: %w", key, err)
	}
	return true, nil
}

// Delete implements Bucket.
func (b *S3Bucket) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	_, err := b.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	if err != nil && !notFound(err) {
		return fmt.Errorf("blobs: delete %s: %w", key, err)
	}
	return nil
}

// List implements Bucket, a page of ListObjectsV2 at a time (S3 returns
// keys in byte order).
func (b *S3Bucket) List(ctx context.Context, prefix string, fn func(string, int64) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), MaxKeys: aws.Int32(int32(b.o.ListPageSize))}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	p := s3.NewListObjectsV2Paginator(b.api, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("blobs: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			if err := fn(aws.ToString(o.Key), aws.ToInt64(o.Size)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close implements Bucket; the client needs no closing.
func (b *S3Bucket) Close() error { return nil }
