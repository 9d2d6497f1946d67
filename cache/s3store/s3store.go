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
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache/integrity"
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
	// Credentials, if set, are used instead of the standard AWS chain (environment, profile, web
	// identity): a node agent syncs many Datasets in one process, each with its own Secret.
	Credentials *Credentials
	// Anonymous sends requests unsigned, and reads no credentials from anywhere: a Dataset that names
	// none, in a namespace that may not use this process's own identity (the environment, a profile,
	// web identity, the node's instance role), is not read with it. Credentials, if set, win.
	Anonymous bool
	// HTTPClient, if set, sends the requests: a process that builds a Store per sync shares one, and
	// with it its idle connections, instead of leaving a pool of them behind each sync. Nil means a
	// new NewHTTPClient(DefaultClientTimeouts).
	HTTPClient aws.HTTPClient
	// BodyFloor is the least a response body must deliver while it is waited for (floor.go); zero:
	// DefaultBodyFloor.
	BodyFloor BodyFloor
	// Client, if set, is used as is (tests); the fields above but Bucket are then ignored.
	Client *s3.Client
}

// Credentials are static keys. String never shows the secret.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

func (c Credentials) String() string {
	return "s3store.Credentials{AccessKeyID: " + c.AccessKeyID + "}"
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
	fast     *fastGetter // nil: every GET goes through the SDK
}

// New builds a Store. It makes no request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	reqs := &Requests{}
	count := func(o *s3.Options) {
		o.HTTPClient = &countingClient{next: o.HTTPClient, n: reqs, floor: cfg.BodyFloor}
		// Ask for checksums only where S3 requires them (S3-compatible stores differ). The sync engine
		// checks what the store vouches for itself (package integrity), piece by piece as the bytes
		// stream; the SDK's validation would hash whole-object GETs a second time.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
	}
	if cfg.Client != nil {
		return newStore(ctx, s3.New(cfg.Client.Options(), count), cfg.Bucket, reqs), nil
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
	if cfg.HTTPClient == nil {
		// A sync Job's one Store: the same timeouts and redirect rule as the agent's shared client.
		cfg.HTTPClient = NewHTTPClient(DefaultClientTimeouts)
	}
	opts = append(opts, config.WithHTTPClient(cfg.HTTPClient))
	if c := cfg.Credentials; c != nil {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	} else if cfg.Anonymous {
		opts = append(opts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
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
	}, count)
	return newStore(ctx, client, cfg.Bucket, reqs), nil
}

func newStore(ctx context.Context, client *s3.Client, bucket string, reqs *Requests) *Store {
	return &Store{client: client, bucket: bucket, requests: reqs, fast: newFastGetter(ctx, client.Options(), bucket)}
}

// Bucket is the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Requests returns the request counters.
func (s *Store) Requests() *Requests { return s.requests }

// listAhead is how many listing pages are fetched ahead of the one being merged, so that the next
// LIST's round trip overlaps the merge of the current page.
const listAhead = 2

// List calls fn with each page of objects under prefix, in key order, keys made relative to strip,
// leaving out those the listing refuses (ListPages).
func (s *Store) List(ctx context.Context, prefix, strip string, fn func([]plan.Object) error) error {
	return s.ListPages(ctx, prefix, strip, func(p Page) error { return fn(p.Objects) })
}

// ListPages calls fn with each page of objects under prefix, in key order, keys made relative to
// strip. The listing is ListObjectsV2 only: no per-object HEAD. Pages are fetched up to listAhead
// ahead of fn; fn owns the page it is given. Objects the sync must not take (a key outside prefix, a
// negative size) come in the page's Refused. A listing that breaks the protocol (see
// ErrSourceMisbehaving) ends with an error.
func (s *Store) ListPages(ctx context.Context, prefix, strip string, fn func(Page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type page struct {
		pg  Page
		err error
	}
	pages := make(chan page, listAhead)
	go func() {
		defer close(pages)
		// A panic here (a bug that one store's answers reach) would end the whole process, and with it
		// every other sync it runs: it ends this listing with ErrPanicked instead.
		defer func() {
			if p := recover(); p != nil {
				err := fmt.Errorf("listing s3://%s/%s: %w: %v\n%s", s.bucket, prefix, ErrPanicked, p, debug.Stack())
				select {
				case pages <- page{err: err}:
				case <-ctx.Done():
				}
			}
		}()
		guard := newListGuard()
		for token, more := "", true; more; {
			lp, err := s.listPage(ctx, prefix, token)
			if err == nil {
				more, err = guard.more(len(lp.objects), lp.truncated, lp.next)
			}
			next := page{err: err}
			if err != nil {
				next.err, more = fmt.Errorf("listing s3://%s/%s: %w", s.bucket, prefix, err), false
			} else {
				next.pg = admit(lp.objects, prefix, strip)
			}
			select {
			case pages <- next:
			case <-ctx.Done():
				return
			}
			token = lp.next
		}
	}()
	for pg := range pages {
		if pg.err != nil {
			return pg.err
		}
		if err := fn(pg.pg); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// listFast sends one ListObjectsV2 through the lean path, retried as the SDK retries its own
// requests (the client's retryer: its attempts, which errors, its backoff with jitter): a 503
// SlowDown or a connection reset on one page of a long listing must not fail the sync, as S3 asks
// clients to retry them. A page that breaks the protocol (ErrSourceMisbehaving) is not retried: the
// same store answers it the same way.
func (s *Store) listFast(ctx context.Context, prefix, token string) (listPage, error) {
	retryer := s.client.Options().Retryer
	for attempt := 1; ; attempt++ {
		pg, err := s.fast.list(ctx, prefix, token)
		if err == nil || ctx.Err() != nil || errors.Is(err, ErrSourceMisbehaving) ||
			retryer == nil || attempt >= retryer.MaxAttempts() || !retryer.IsErrorRetryable(err) {
			return pg, err
		}
		delay, derr := retryer.RetryDelay(attempt, err)
		if derr != nil {
			return pg, err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return listPage{}, context.Cause(ctx)
		}
	}
}

// listPage sends one ListObjectsV2, through the lean path when there is one. Keys are listed whole.
func (s *Store) listPage(ctx context.Context, prefix, token string) (listPage, error) {
	if s.fast != nil {
		return s.listFast(ctx, prefix, token)
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix)}
	if token != "" {
		in.ContinuationToken = aws.String(token)
	}
	out, err := s.client.ListObjectsV2(ctx, in, func(o *s3.Options) { o.HTTPClient = cappedClient{next: o.HTTPClient} })
	var shape *xml.SyntaxError
	if errors.As(err, &shape) {
		return listPage{}, fmt.Errorf("%w: %w", errShape, err) // as the lean path's parser says it
	}
	if err != nil {
		return listPage{}, err
	}
	lp := listPage{truncated: aws.ToBool(out.IsTruncated), next: aws.ToString(out.NextContinuationToken)}
	lp.objects = make([]plan.Object, 0, len(out.Contents))
	for _, o := range out.Contents {
		lp.objects = append(lp.objects, object(o))
	}
	return lp, nil
}

// object is a listed object as the SDK reads it, its key whole.
func object(o types.Object) plan.Object {
	obj := plan.Object{
		Key:          aws.ToString(o.Key),
		Size:         aws.ToInt64(o.Size),
		LastModified: aws.ToTime(o.LastModified).UTC(),
		ETag:         aws.ToString(o.ETag),
		ChecksumType: string(o.ChecksumType),
	}
	if len(o.ChecksumAlgorithm) > 0 {
		obj.ChecksumAlgorithm = string(o.ChecksumAlgorithm[0])
	}
	return obj
}

// Describe returns what the store holds now under key, with one HEAD (no LIST): a targeted sync
// checks the keys S3 event notifications named this way, so that a stale or reordered event never wins
// over the object's current state. ok is false when the key does not exist. LastModified comes from
// an HTTP date, so it has whole seconds only (plan.Compare allows for that). ChecksumAlgorithm names
// the checksum the store keeps for the object, as a listing would.
func (s *Store) Describe(ctx context.Context, key, strip string) (plan.Object, bool, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		if Classify(err) == ClassNotFound {
			return plan.Object{}, false, nil
		}
		return plan.Object{}, false, fmt.Errorf("reading s3://%s/%s: %w", s.bucket, key, err)
	}
	obj := plan.Object{
		Key:          strings.TrimPrefix(key, strip),
		Size:         aws.ToInt64(out.ContentLength),
		LastModified: aws.ToTime(out.LastModified).UTC(),
		ETag:         aws.ToString(out.ETag),
		ChecksumType: string(out.ChecksumType),
	}
	sums := checksums(aws.ToString(out.ChecksumCRC64NVME), aws.ToString(out.ChecksumCRC32), aws.ToString(out.ChecksumCRC32C),
		aws.ToString(out.ChecksumSHA1), aws.ToString(out.ChecksumSHA256), string(out.ChecksumType))
	for _, a := range []integrity.Algorithm{integrity.CRC64NVME, integrity.CRC32C, integrity.CRC32, integrity.SHA256, integrity.SHA1} {
		if sums.Get(a) != "" {
			obj.ChecksumAlgorithm = string(a)
			break
		}
	}
	return obj, true, nil
}

// Range selects what a GET returns.
type Range struct {
	// Start and End select bytes [Start, End]; End < 0 means to the end of the object.
	Start, End int64
	// PartNumber, when > 0, selects one part of a multipart upload, exactly as uploaded (Start and
	// End are then ignored).
	PartNumber int32
}

// Whole is the Range of a whole object.
var Whole = Range{End: -1}

// Checksums are the checksums a store returned for a whole object, as it writes them (base64; a
// composite one ends in "-<parts>").
type Checksums struct {
	CRC64NVME, CRC32, CRC32C, SHA1, SHA256 string
	Type                                   integrity.ChecksumType
}

// Get returns the checksum of algorithm a, or "".
func (c Checksums) Get(a integrity.Algorithm) string {
	switch a {
	case integrity.CRC64NVME:
		return c.CRC64NVME
	case integrity.CRC32:
		return c.CRC32
	case integrity.CRC32C:
		return c.CRC32C
	case integrity.SHA1:
		return c.SHA1
	case integrity.SHA256:
		return c.SHA256
	}
	return ""
}

// GetInfo describes a GET response.
type GetInfo struct {
	// Encrypted is true when the store encrypts the object with SSE-KMS or SSE-C, whose ETags are not
	// an MD5 of the content.
	Encrypted bool
	// Start is the offset in the object of the body's first byte, and Length the body's length.
	Start, Length int64
	// PartsCount is the object's number of upload parts, on a GET of one part.
	PartsCount int32
	// Checksums the store vouches for, on a whole-object GET (the engine checks them: the SDK's own
	// validation is off, so that nothing is hashed twice).
	Checksums Checksums
}

// checksumMode asks for the object's checksums in the response headers without turning on the SDK's
// validation of them: the sync engine computes and checks checksums itself, piece by piece.
var checksumMode = s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-amz-checksum-mode", "ENABLED"))

// Get opens part of key (a byte range or an upload part, Range), only if its ETag is still etag. A
// whole-object GET also returns the object's checksums.
func (s *Store) Get(ctx context.Context, key, etag string, r Range) (io.ReadCloser, GetInfo, error) {
	if s.fast != nil {
		resp, err := s.fast.get(ctx, key, etag, r)
		if err != nil {
			return nil, GetInfo{}, fmt.Errorf("getting s3://%s/%s: %w", s.bucket, key, err)
		}
		info, err := s.fast.info(resp, r)
		if err != nil {
			_ = resp.Body.Close() // unread: the headers are what failed
			return nil, GetInfo{}, fmt.Errorf("getting s3://%s/%s: %w", s.bucket, key, err)
		}
		return resp.Body, info, nil
	}
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	var opts []func(*s3.Options)
	switch {
	case r.PartNumber > 0:
		in.PartNumber = aws.Int32(r.PartNumber)
	case r.Start == 0 && r.End < 0:
		opts = append(opts, checksumMode)
	case r.End < 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.Start))
	default:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", r.Start, r.End))
	}
	out, err := s.client.GetObject(ctx, in, opts...)
	if err != nil {
		return nil, GetInfo{}, fmt.Errorf("getting s3://%s/%s: %w", s.bucket, key, err)
	}
	info := GetInfo{
		Encrypted:  encrypted(aws.ToString(out.SSECustomerAlgorithm), string(out.ServerSideEncryption)),
		Length:     aws.ToInt64(out.ContentLength),
		PartsCount: aws.ToInt32(out.PartsCount),
		Checksums: checksums(aws.ToString(out.ChecksumCRC64NVME), aws.ToString(out.ChecksumCRC32), aws.ToString(out.ChecksumCRC32C),
			aws.ToString(out.ChecksumSHA1), aws.ToString(out.ChecksumSHA256), string(out.ChecksumType)),
	}
	if info.Start, err = startOf(aws.ToString(out.ContentRange), r); err != nil {
		_ = out.Body.Close() // unread: the headers are what failed
		return nil, GetInfo{}, fmt.Errorf("getting s3://%s/%s: %w", s.bucket, key, err)
	}
	return out.Body, info, nil
}

// checksums gathers a response's checksum fields (values as the store writes them).
func checksums(crc64nvme, crc32, crc32c, sha1, sha256, typ string) Checksums {
	return Checksums{CRC64NVME: crc64nvme, CRC32: crc32, CRC32C: crc32c, SHA1: sha1, SHA256: sha256, Type: integrity.ChecksumType(typ)}
}

// encrypted reports whether a response's encryption fields say SSE-C or SSE-KMS, whose ETags are not
// an MD5 of the bytes.
func encrypted(sseCustomerAlgorithm, sse string) bool {
	return sseCustomerAlgorithm != "" || sse == string(types.ServerSideEncryptionAwsKms) || sse == string(types.ServerSideEncryptionAwsKmsDsse)
}

// startOf returns the object offset of a response body's first byte: from its Content-Range
// ("bytes START-END/TOTAL"), or the range asked for when there is none.
func startOf(contentRange string, r Range) (int64, error) {
	if contentRange == "" {
		if r.PartNumber > 0 {
			return 0, nil
		}
		return r.Start, nil
	}
	rest, ok := strings.CutPrefix(contentRange, "bytes ")
	dash := strings.IndexByte(rest, '-')
	if !ok || dash < 0 {
		return 0, fmt.Errorf("unexpected Content-Range %q", contentRange)
	}
	return strconv.ParseInt(rest[:dash], 10, 64)
}

// Head returns the checksums the store keeps for key, only if its ETag is still etag: a ranged or
// part GET carries none, so a download in pieces asks once.
func (s *Store) Head(ctx context.Context, key, etag string) (Checksums, bool, error) {
	in := &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := s.client.HeadObject(ctx, in)
	if err != nil {
		return Checksums{}, false, fmt.Errorf("reading checksums of s3://%s/%s: %w", s.bucket, key, err)
	}
	return checksums(aws.ToString(out.ChecksumCRC64NVME), aws.ToString(out.ChecksumCRC32), aws.ToString(out.ChecksumCRC32C),
			aws.ToString(out.ChecksumSHA1), aws.ToString(out.ChecksumSHA256), string(out.ChecksumType)),
		encrypted(aws.ToString(out.SSECustomerAlgorithm), string(out.ServerSideEncryption)), nil
}

// Error classes, for retries. The classes that are also the reason a Dataset reports are that
// reason, wire.ReasonAccessDenied, wire.ReasonNoSuchBucket and wire.ReasonInvalidCredentials, so that
// the sync passes them on as they are.
const (
	ClassPreconditionFailed = "PreconditionFailed"
	ClassNotFound           = "NotFound"
	// ClassInvalidRange: the object is shorter than the bytes asked for (it changed in place, or the
	// listing was wrong); asking again will not help.
	ClassInvalidRange = "InvalidRange"
)

// Classify maps an S3 error to one of the classes above or one of the three wire reasons, or "" for
// anything else (network errors, 5xx after retries).
func Classify(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "PreconditionFailed":
			return ClassPreconditionFailed
		case "NoSuchKey", "NotFound":
			return ClassNotFound
		case "AccessDenied", "AllAccessDisabled", "AccountProblem":
			return wire.ReasonAccessDenied
		case "NoSuchBucket":
			return wire.ReasonNoSuchBucket
		case "InvalidRange":
			return ClassInvalidRange
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
			return wire.ReasonInvalidCredentials
		}
	}
	if errors.Is(err, ErrSourceTooSlow) {
		return wire.ReasonSourceTooSlow
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
	n     *Requests
	floor BodyFloor
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
	resp, err := c.next.Do(guardRedirects(r))
	if err == nil && resp.Body != nil {
		resp.Body = floored(resp.Body, c.floor)
	}
	return resp, err
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
