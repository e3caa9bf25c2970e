// Package blobs opens the object store as a portable gocloud.dev
// *blob.Bucket: a local folder (fileblob) when running on one machine, S3
// (s3blob over aws-sdk-go-v2) on AWS, LocalStack or an emulator. Domain
// packages use the *blob.Bucket API directly; this package only chooses and
// configures the driver, and maps the not-found error.
package blobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Config says which object store to open.
type Config struct {
	// Dir is a local folder, created when missing. It is used when Bucket is
	// empty.
	Dir string
	// Bucket is the S3 bucket name; when set, S3 is used.
	Bucket string
	// AWS is the SDK configuration (region, credentials) for S3.
	AWS aws.Config
	// Endpoint overrides the S3 endpoint (LocalStack, an emulator). An
	// endpoint also turns off the SDK's default request checksums, which
	// third-party S3 servers reject.
	Endpoint string
	// PathStyle uses path-style addressing (http://host/bucket/key), which
	// emulators need since they do not serve bucket subdomains.
	PathStyle bool
}

// Open opens the bucket c describes.
func Open(ctx context.Context, c Config) (*blob.Bucket, error) {
	if c.Bucket != "" {
		return OpenS3(ctx, c.AWS, c.Bucket, S3Options{Endpoint: c.Endpoint, PathStyle: c.PathStyle})
	}
	if c.Dir == "" {
		return nil, errors.New("blobs: either a folder or an S3 bucket is required")
	}
	return OpenDir(c.Dir)
}

// OpenDir opens a bucket stored in a local folder, creating it when missing.
func OpenDir(dir string) (*blob.Bucket, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("blobs: create %s: %w", abs, err)
	}
	b, err := fileblob.OpenBucket(abs, &fileblob.Options{
		DirFileMode: 0o755,
		// fileblob writes into a temporary file and renames it into place.
		// The system temp folder is preferred (partial files never show up
		// in listings), but a rename cannot cross file systems, so fall back
		// to temporary files next to the data when it would.
		NoTempDir: !sameFileSystem(os.TempDir(), abs),
	})
	if err != nil {
		return nil, fmt.Errorf("blobs: open %s: %w", abs, err)
	}
	return b, nil
}

// sameFileSystem reports whether a file can be renamed from dir a to dir b.
func sameFileSystem(a, b string) bool {
	f, err := os.CreateTemp(a, "agentplane-probe-*")
	if err != nil {
		return false
	}
	src := f.Name()
	f.Close()
	defer os.Remove(src)
	dst := filepath.Join(b, filepath.Base(src))
	if err := os.Rename(src, dst); err != nil {
		return false
	}
	os.Remove(dst)
	return true
}

// S3Options tunes the S3 client for non-AWS endpoints.
type S3Options struct {
	// Endpoint overrides the service endpoint; empty means AWS's.
	Endpoint string
	// PathStyle uses path-style addressing.
	PathStyle bool
}

// OpenS3 opens an S3 bucket through s3blob.
func OpenS3(ctx context.Context, cfg aws.Config, bucket string, o S3Options) (*blob.Bucket, error) {
	if bucket == "" {
		return nil, errors.New("blobs: S3 bucket name is required")
	}
	client := NewS3Client(cfg, o)
	opts := &s3blob.Options{}
	if o.Endpoint != "" {
		// s3blob's transfer manager has its own checksum setting that takes
		// precedence over the client's.
		opts.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	}
	b, err := s3blob.OpenBucket(ctx, client, bucket, opts)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	return b, nil
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

// IsNotFound reports whether err means the object does not exist, for every
// driver.
func IsNotFound(err error) bool {
	return err != nil && gcerrors.Code(err) == gcerrors.NotFound
}
