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

package s3store

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	"github.com/aws/smithy-go/encoding/httpbinding"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/pqcache/pqcache/cache/plan"
)

// fastGetter sends GetObject requests without the SDK's middleware stack. A sync of small objects is
// one GET per object, and the SDK's GetObject costs ~100 µs of CPU per request here (its
// middlewares, endpoint rules, metrics, response deserialisation): on this kind of machine that is a
// third of a bare client's CPU for 64 KiB objects. The fast path resolves the bucket's endpoint once
// with the SDK's own resolver, signs each request with the SDK's SigV4 signer and credentials, and
// sends it through the SDK's HTTP client (same transport, CA bundle, proxy and request counting).
// Configurations it does not cover (S3 Express, SigV4A, access points, accelerate...) keep the SDK.
type fastGetter struct {
	http interface {
		Do(*http.Request) (*http.Response, error)
	}
	creds  aws.CredentialsProvider
	signer *v4.Signer
	region string
	name   string // signing name
	base   url.URL
}

// emptySHA256 is the payload hash of a request without a body.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// newFastGetter returns the fast path for bucket with the client's options, or nil when the
// configuration needs something it does not do.
func newFastGetter(ctx context.Context, o s3.Options, bucket string) *fastGetter {
	if o.UseAccelerate || o.UseARNRegion || strings.HasSuffix(bucket, "--x-s3") || o.Credentials == nil || o.HTTPClient == nil || o.EndpointResolverV2 == nil {
		return nil
	}
	fips := o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled
	dual := o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled
	ep, err := o.EndpointResolverV2.ResolveEndpoint(ctx, s3.EndpointParameters{
		Bucket: aws.String(bucket), Region: aws.String(o.Region), Endpoint: o.BaseEndpoint,
		ForcePathStyle: aws.Bool(o.UsePathStyle), UseFIPS: aws.Bool(fips), UseDualStack: aws.Bool(dual),
		Accelerate: aws.Bool(false), UseGlobalEndpoint: aws.Bool(false),
	})
	if err != nil {
		return nil
	}
	f := &fastGetter{http: o.HTTPClient, creds: o.Credentials, signer: v4.NewSigner(), region: o.Region, name: "s3", base: ep.URI}
	if schemes, ok := smithyauth.GetAuthOptions(&ep.Properties); ok && len(schemes) > 0 {
		// The endpoint rules name schemes "sigv4"; the auth resolver "aws.auth#sigv4".
		if id := schemes[0].SchemeID; id != "sigv4" && id != smithyauth.SchemeIDSigV4 {
			return nil
		}
		if n, ok := smithyhttp.GetSigV4SigningName(&schemes[0].SignerProperties); ok {
			f.name = n
		}
		if r, ok := smithyhttp.GetSigV4SigningRegion(&schemes[0].SignerProperties); ok {
			f.region = r
		}
	}
	if f.name != "s3" || f.base.RawQuery != "" {
		return nil
	}
	return f
}

// get sends one GetObject: what Store.Get does through the SDK.
func (f *fastGetter) get(ctx context.Context, key, etag string, r Range) (*http.Response, error) {
	h := http.Header{}
	if etag != "" {
		h.Set("If-Match", etag)
	}
	query := ""
	switch {
	case r.PartNumber > 0:
		query = "partNumber=" + strconv.Itoa(int(r.PartNumber))
	case r.Start == 0 && r.End < 0:
		h.Set("X-Amz-Checksum-Mode", "ENABLED")
	case r.End < 0:
		h.Set("Range", fmt.Sprintf("bytes=%d-", r.Start))
	default:
		h.Set("Range", fmt.Sprintf("bytes=%d-%d", r.Start, r.End))
	}
	return f.send(ctx, key, query, h)
}

// info reads a GET response's headers as Store.Get reports them.
func (f *fastGetter) info(resp *http.Response, r Range) (GetInfo, error) {
	h := resp.Header
	info := GetInfo{
		Encrypted: encrypted(h.Get("X-Amz-Server-Side-Encryption-Customer-Algorithm"), h.Get("X-Amz-Server-Side-Encryption")),
		Length:    resp.ContentLength,
		Checksums: checksums(h.Get("X-Amz-Checksum-Crc64nvme"), h.Get("X-Amz-Checksum-Crc32"), h.Get("X-Amz-Checksum-Crc32c"),
			h.Get("X-Amz-Checksum-Sha1"), h.Get("X-Amz-Checksum-Sha256"), h.Get("X-Amz-Checksum-Type")),
	}
	if pc := h.Get("X-Amz-Mp-Parts-Count"); pc != "" {
		n, err := strconv.ParseInt(pc, 10, 32)
		if err != nil {
			return info, fmt.Errorf("unexpected x-amz-mp-parts-count %q", pc)
		}
		info.PartsCount = int32(n)
	}
	var err error
	info.Start, err = startOf(h.Get("Content-Range"), r)
	return info, err
}

// apiError is an S3 error response: it satisfies smithy.APIError and carries the HTTP status, as the
// SDK's errors do, so that Classify reads both alike.
type apiError struct {
	XMLName xml.Name `xml:"Error"`
	Code    string   `xml:"Code"`
	Message string   `xml:"Message"`
	status  int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("https response error StatusCode: %d, api error %s: %s", e.status, e.Code, e.Message)
}
func (e *apiError) ErrorCode() string    { return e.Code }
func (e *apiError) ErrorMessage() string { return e.Message }
func (e *apiError) HTTPStatusCode() int  { return e.status }
func (e *apiError) ErrorFault() smithy.ErrorFault {
	if e.status >= 500 {
		return smithy.FaultServer
	}
	return smithy.FaultClient
}

// maxErrorBody is how much of an error answer is read; maxErrorText, how much of an S3 error
// document's code and message an error keeps.
const (
	maxErrorBody = 64 << 10
	maxErrorText = 256
)

// responseError is the error of a non-2xx answer. S3's own error document (<Error> with a Code) gives
// its code and message. Any other answer is told by its status code and length only, never echoed:
// an endpoint is any host a tenant names, the error lands in the tenant's Dataset status, and the
// answer may be another service's page (an internal console, a metadata service).
func responseError(resp *http.Response) error {
	e := &apiError{status: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if xml.Unmarshal(body, e) == nil && e.Code != "" {
		e.Code, e.Message = clip(e.Code), clip(e.Message)
		return e
	}
	e.Code = map[int]string{
		http.StatusNotFound: "NotFound", http.StatusPreconditionFailed: "PreconditionFailed",
		http.StatusForbidden: "AccessDenied", http.StatusRequestedRangeNotSatisfiable: "InvalidRange",
	}[resp.StatusCode]
	if e.Code == "" {
		e.Code = http.StatusText(resp.StatusCode)
	}
	n := fmt.Sprintf("%d bytes", len(body))
	if len(body) == maxErrorBody {
		n = fmt.Sprintf("at least %d bytes", len(body))
	}
	e.Message = fmt.Sprintf("an answer of %s that is not an S3 error document (not shown)", n)
	return e
}

// clip cuts s to maxErrorText bytes, on a rune boundary.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// send signs and sends a GET of the bucket's URL with path (relative to the bucket, "" for the
// bucket) and query, and returns the response when its status is 2xx.
func (f *fastGetter) send(ctx context.Context, path, query string, h http.Header) (*http.Response, error) {
	u := f.base
	if path != "" {
		p := strings.TrimSuffix(u.Path, "/") + "/" + path
		u.Path, u.RawPath = p, httpbinding.EscapePath(p, false)
	} else if u.Path == "" {
		u.Path = "/"
	}
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	// No transparent gzip: the bytes must be the object's, as counted by Content-Length.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds, err := f.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("getting credentials: %w", err)
	}
	if creds.AccessKeyID != "" { // anonymous credentials sign nothing
		if err := f.signer.SignHTTP(ctx, creds, req, emptySHA256, f.name, f.region, time.Now().UTC(),
			func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
			return nil, fmt.Errorf("signing: %w", err)
		}
	}
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer func() { _ = resp.Body.Close() }() // an error document, only read
		return nil, responseError(resp)
	}
	return resp, nil
}

// listPage is one ListObjectsV2 response.
type listPage struct {
	objects   []plan.Object
	truncated bool
	next      string
}

// list sends one ListObjectsV2 and parses its response with parseList: the SDK's XML deserialiser
// costs ~12 µs of CPU per listed object here, a second of CPU per 100,000 objects of an unchanged
// sync that has nothing else to do. Keys are listed whole (Store.List makes them relative); the body
// is decoded as it arrives, up to MaxListPageBytes.
func (f *fastGetter) list(ctx context.Context, prefix, token string) (listPage, error) {
	q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
	if token != "" {
		q.Set("continuation-token", token)
	}
	resp, err := f.send(ctx, "", strings.ReplaceAll(q.Encode(), "+", "%20"), nil)
	if err != nil {
		return listPage{}, err
	}
	defer func() { _ = resp.Body.Close() }() // only read
	return readList(resp.Body, "")
}
