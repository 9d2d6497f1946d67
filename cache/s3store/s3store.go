/*
Copyright 2026 The pqcache Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package s3store is pqcache's S3 client: paginated listing, conditional ranged GETs, request
// counting and error classification, over aws-sdk-go-v2. Credentials come from the standard AWS chain
// (environment, shared config, web identity for IRSA and Pod Identity); an endpoint and path-style
// addressing serve S3-compatible stores.
package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/pqcache/pqcache/cache/plan"
)

// Config says which store to reach and how.
type Config struct {
	Bucket string
	// Region; empty uses the AWS configuration, or us-east-1.
	Region string
	// Endpoint of an S3-compatible store; empty means AWS.
	Endpoint string
	// PathStyle addresses buckets as endpoint/bucket.
	PathStyle bool
	// MaxAttempts per request, retries included (the SDK's standard retryer: exponential backoff with
	// jitter on 5xx, throttling such as SlowDown, and transient network errors). 0 means 5.
	MaxAttempts int
	// Client, if set, is used as is (tests); the fields above but Bucket are then ignored.
	Client *s3.Client
}

// Requests counts the HTTP requests sent, retries included, by kind.
type Requests struct {
	List, Get, Head, Other atomic.Int64
}

// Store is one bucket.
type Store struct {
	client   *s3.Client
	bucket   string
	requests *Requests
}

// New builds a Store. It makes no request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	reqs := &Requests{}
	count := func(o *s3.Options) { o.HTTPClient = &countingClient{next: o.HTTPClient, n: reqs} }
	if cfg.Client != nil {
		return &Store{client: s3.New(cfg.Client.Options(), count), bucket: cfg.Bucket, requests: reqs}, nil
	}
	attempts := cfg.MaxAttempts
	if attempts == 0 {
		attempts = 5
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				// The client-side retry quota would fail requests outright after a burst of connection
				// errors; the sync bounds its own concurrency and attempts instead.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// Ask for checksums only where S3 requires them (S3-compatible stores differ), but validate
		// any checksum a full-object GET returns.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported
		// Ranged GETs never carry a full-object checksum; the sync verifies those itself.
		o.DisableLogOutputChecksumValidationSkipped = true
	}, count)
	return &Store{client: client, bucket: cfg.Bucket, requests: reqs}, nil
}

// Bucket is the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Requests returns the request counters.
func (s *Store) Requests() *Requests { return s.requests }

// List calls fn with each page of objects under prefix, in key order, keys made relative to strip.
// The listing is ListObjectsV2 only: no per-object HEAD.
func (s *Store) List(ctx context.Context, prefix, strip string, fn func([]plan.Object) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)})
	page := make([]plan.Object, 0, 1000)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing s3://%s/%s: %w", s.bucket, prefix, err)
		}
		page = page[:0]
		for _, o := range out.Contents {
			key := aws.ToString(o.Key)
			page = append(page, plan.Object{
				Key:          strings.TrimPrefix(key, strip),
				Size:         aws.ToInt64(o.Size),
				LastModified: aws.ToTime(o.LastModified).UTC(),
				ETag:         aws.ToString(o.ETag),
			})
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// Stat lists exactly one key, to re-plan an object that changed after the listing: it costs one LIST,
// like the listing, and returns the same fields.
func (s *Store) Stat(ctx context.Context, key, strip string) (plan.Object, bool, error) {
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(key), MaxKeys: aws.Int32(1)})
	if err != nil {
		return plan.Object{}, false, fmt.Errorf("listing s3://%s/%s: %w", s.bucket, key, err)
	}
	if len(out.Contents) == 0 || aws.ToString(out.Contents[0].Key) != key {
		return plan.Object{}, false, nil
	}
	o := out.Contents[0]
	return plan.Object{Key: strings.TrimPrefix(key, strip), Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified).UTC(), ETag: aws.ToString(o.ETag)}, true, nil
}

// GetInfo describes a GET response.
type GetInfo struct {
	// Encrypted is true when the store encrypts the object with SSE-KMS or SSE-C, whose ETags are not
	// an MD5 of the content.
	Encrypted bool
	// ChecksumValidated is true when the response carries a full-object checksum that the SDK checks
	// as the body is read (a read error reports a mismatch).
	ChecksumValidated bool
}

// Get opens the bytes [start, end] of key, only if its ETag is still etag; end < 0 reads the whole
// object, with the store's checksum validated by the SDK when the store has one.
func (s *Store) Get(ctx context.Context, key, etag string, start, end int64) (io.ReadCloser, GetInfo, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	if end >= 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", start, end))
	} else {
		in.ChecksumMode = types.ChecksumModeEnabled
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, GetInfo{}, fmt.Errorf("getting s3://%s/%s: %w", s.bucket, key, err)
	}
	info := GetInfo{
		Encrypted: out.SSECustomerAlgorithm != nil ||
			out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse,
		// Composite (per-part) checksums of multipart uploads are not validated by the SDK.
		ChecksumValidated: end < 0 && out.ChecksumType != types.ChecksumTypeComposite &&
			(out.ChecksumCRC64NVME != nil || out.ChecksumCRC32C != nil || out.ChecksumCRC32 != nil || out.ChecksumSHA256 != nil || out.ChecksumSHA1 != nil),
	}
	return out.Body, info, nil
}

// Error classes, for retries and for the reason a Dataset reports.
const (
	ClassPreconditionFailed = "PreconditionFailed"
	ClassNotFound           = "NotFound"
	ClassAccessDenied       = "AccessDenied"
	ClassNoSuchBucket       = "NoSuchBucket"
	ClassInvalidCredentials = "InvalidCredentials"
)

// Classify maps an S3 error to one of the classes above, or "" for anything else (network errors,
// 5xx after retries).
func Classify(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "PreconditionFailed":
			return ClassPreconditionFailed
		case "NoSuchKey", "NotFound":
			return ClassNotFound
		case "AccessDenied", "AllAccessDisabled", "AccountProblem":
			return ClassAccessDenied
		case "NoSuchBucket":
			return ClassNoSuchBucket
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
			return ClassInvalidCredentials
		}
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed {
		return ClassPreconditionFailed
	}
	return ""
}

// countingClient counts requests by kind at the HTTP layer, below the SDK's retries, so that every
// attempt is counted.
type countingClient struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	n *Requests
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	switch {
	case r.Method == http.MethodHead:
		c.n.Head.Add(1)
	case r.Method == http.MethodGet && r.URL.Query().Has("list-type"):
		c.n.List.Add(1)
	case r.Method == http.MethodGet:
		c.n.Get.Add(1)
	default:
		c.n.Other.Add(1)
	}
	return c.next.Do(r)
}

// EnsureBucket creates the bucket unless it exists and is ours. Loading data (pqcache s3 put) needs it;
// the sync never creates anything in the store.
func (s *Store) EnsureBucket(ctx context.Context) error {
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("creating bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Put uploads size bytes from body as key in one PUT.
func (s *Store) Put(ctx context.Context, key string, body io.ReadSeeker, size int64) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), Body: body, ContentLength: aws.Int64(size),
	})
	if err != nil {
		return fmt.Errorf("putting s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// Delete removes key. Deleting a key that does not exist succeeds, as in S3.
func (s *Store) Delete(ctx context.Context, key string) error {
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("deleting s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}
