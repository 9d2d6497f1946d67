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

package s3serve

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxSkew is how far a request's signing time may be from the server's clock, as in S3.
const MaxSkew = 15 * time.Minute

// AmzDateFormat is the layout of X-Amz-Date.
const AmzDateFormat = "20060102T150405Z"

// Refusal is why a request is refused, in S3's terms: the status, the error code and a message for
// the client. Verify and the servers' lookups return one; WriteRefusal writes it.
type Refusal struct {
	Status  int
	Code    string
	Message string
}

func (e *Refusal) Error() string { return e.Code + ": " + e.Message }

// Refuse returns a 403 Refusal with code and message.
func Refuse(code, message string) *Refusal {
	return &Refusal{Status: http.StatusForbidden, Code: code, Message: message}
}

// Lookup returns the secret of an access key ID, or an error (a *Refusal says which S3 error to
// answer) when the key is unknown or no longer valid at signedAt.
type Lookup func(accessKeyID string, signedAt time.Time) (secret string, err error)

// Verifier checks AWS Signature Version 4 signatures in the Authorization header, as S3 does.
type Verifier struct {
	// Lookup finds the secret of the request's access key.
	Lookup Lookup
	// Region, when set, is the only region a request may be signed for; else the credential scope's
	// region is taken as it is (readers sign for their own bucket's region).
	Region string
	// Now is the server's clock; nil means time.Now.
	Now func() time.Time
}

// Verify checks r's signature: it signs the same request again, over exactly the headers the client
// said it signed, with the key's secret, and compares the signatures in constant time. It returns what
// the Authorization header says, or a *Refusal.
func (v Verifier) Verify(r *http.Request) (Authorization, error) {
	auth, err := ParseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return auth, Refuse("AccessDenied", err.Error())
	}
	at, err := time.Parse(AmzDateFormat, r.Header.Get("X-Amz-Date"))
	if err != nil {
		return auth, Refuse("AccessDenied", "the request has no valid X-Amz-Date")
	}
	if skew := v.now().Sub(at); skew > MaxSkew || skew < -MaxSkew {
		return auth, Refuse("RequestTimeTooSkewed", fmt.Sprintf("the request was signed %s from this server's clock", skew.Round(time.Second)))
	}
	region, err := v.scopeRegion(auth, at)
	if err != nil {
		return auth, err
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return auth, Refuse("AccessDenied", "the request has no X-Amz-Content-Sha256 header")
	}
	if r.Header.Get("X-Amz-Security-Token") != "" && !slices.Contains(auth.SignedHeaders, "x-amz-security-token") {
		return auth, Refuse("AccessDenied", "the security token is not among the signed headers")
	}
	secret, err := v.Lookup(auth.AccessKey, at)
	if err != nil {
		return auth, err
	}
	again := signedCopy(r, auth.SignedHeaders)
	creds := aws.Credentials{AccessKeyID: auth.AccessKey, SecretAccessKey: secret}
	// A signer per request: the SDK's signers cache derived keys by access key ID and region, not
	// by secret, so a shared one could check a request against another secret's key.
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, again, payload, "s3", region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		return auth, fmt.Errorf("signing the request again: %w", err)
	}
	want, err := ParseAuthorization(again.Header.Get("Authorization"))
	if err != nil {
		return auth, err
	}
	if subtle.ConstantTimeCompare([]byte(want.Signature), []byte(auth.Signature)) != 1 {
		return auth, Refuse("SignatureDoesNotMatch", "the signature does not match the request and the access key's secret")
	}
	return auth, nil
}

// scopeRegion checks the credential scope, date/REGION/s3/aws4_request, and returns its region.
func (v Verifier) scopeRegion(auth Authorization, at time.Time) (string, error) {
	date, rest, _ := strings.Cut(auth.Scope, "/")
	region, service, _ := strings.Cut(rest, "/")
	if date != at.Format("20060102") || service != "s3/aws4_request" || region == "" {
		return "", Refuse("AuthorizationHeaderMalformed", "the credential scope is not date/region/s3/aws4_request for the request's date")
	}
	if v.Region != "" && region != v.Region {
		return "", Refuse("AuthorizationHeaderMalformed", "the credential scope's region is not "+v.Region)
	}
	return region, nil
}

func (v Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// signedCopy is r with only the headers the client signed (host and content-length are the
// request's own).
func signedCopy(r *http.Request, signed []string) *http.Request {
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	c := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}, ContentLength: r.ContentLength}
	for _, name := range signed {
		if name == "host" || name == "content-length" {
			continue
		}
		if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
			c.Header[http.CanonicalHeaderKey(name)] = v
		}
	}
	return c.WithContext(r.Context())
}

// Authorization is what an AWS4-HMAC-SHA256 Authorization header says.
type Authorization struct {
	AccessKey, Scope, Signature string
	SignedHeaders               []string
}

// ParseAuthorization reads an AWS4-HMAC-SHA256 Authorization header.
func ParseAuthorization(h string) (Authorization, error) {
	var a Authorization
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, errNotSigned
	}
	for _, field := range strings.Split(rest, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch name {
		case "Credential":
			a.AccessKey, a.Scope, _ = strings.Cut(value, "/")
		case "SignedHeaders":
			a.SignedHeaders = strings.Split(value, ";")
		case "Signature":
			a.Signature = value
		}
	}
	if a.AccessKey == "" || a.Scope == "" || a.Signature == "" || len(a.SignedHeaders) == 0 {
		return a, errIncomplete
	}
	return a, nil
}

var (
	errNotSigned  = errors.New("the request is not signed with AWS Signature Version 4")
	errIncomplete = errors.New("incomplete Authorization header")
)
