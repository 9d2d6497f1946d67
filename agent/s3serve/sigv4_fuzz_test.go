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
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// fuzzID and fuzzSecret are the one key the fuzz targets' verifier knows.
const (
	fuzzID     = "AKIDFUZZ"
	fuzzSecret = "secret-for-fuzzing"
)

// emptySHA256 is the payload hash of a request without a body, which S3 SDKs send for GET.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// lookupOf knows one key.
func lookupOf(id, secret string) Lookup {
	return func(got string, _ time.Time) (string, error) {
		if got != id {
			return "", Refuse("InvalidAccessKeyId", "unknown access key")
		}
		return secret, nil
	}
}

// signFor signs r as an S3 client does (path style, the path not escaped twice), for region and
// with the session token, if any, among the signed headers.
func signFor(t *testing.T, r *http.Request, region, token string, at time.Time) {
	t.Helper()
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds := aws.Credentials{AccessKeyID: fuzzID, SecretAccessKey: fuzzSecret, SessionToken: token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, emptySHA256, "s3", region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseAuthorization: whatever Authorization header a request carries, a header that parses
// names an access key, a scope, signed headers and a signature, and says the same when written
// again. Seeds are headers the AWS SDK writes and their broken forms.
func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=pqcache-peer/20260102/pqcache/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-date,Signature=abc")
	f.Add("AWS4-HMAC-SHA256 Credential=/x, SignedHeaders=, Signature=")
	f.Add("AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=")
	f.Add("AWS4-HMAC-SHA256 Signature=a=b, Credential=a/b/c, SignedHeaders=;;, Credential=c/d")
	f.Fuzz(func(t *testing.T, h string) {
		a, err := ParseAuthorization(h)
		if err != nil {
			return
		}
		if a.AccessKey == "" || strings.Contains(a.AccessKey, "/") || a.Scope == "" || a.Signature == "" || len(a.SignedHeaders) == 0 {
			t.Fatalf("%q parsed as %+v", h, a)
		}
		again := "AWS4-HMAC-SHA256 Credential=" + a.AccessKey + "/" + a.Scope + ", SignedHeaders=" + strings.Join(a.SignedHeaders, ";") +
			", Signature=" + a.Signature
		b, err := ParseAuthorization(again)
		if err != nil || !slices.Equal(b.SignedHeaders, a.SignedHeaders) || b.AccessKey != a.AccessKey || b.Scope != a.Scope || b.Signature != a.Signature {
			t.Fatalf("%q parsed as %+v, written again as %q: %+v, %v", h, a, again, b, err)
		}
	})
}

// FuzzVerify: a request signed with the key, for any region and with or without a session token,
// sent over the wire (written and read back as HTTP/1.1), verifies, whatever its path, query and
// extra signed header; the same request with one byte of its signature changed, a query parameter
// added after signing, another date, another session token, or signed with another secret, is
// refused; a verifier bound to one region refuses the others.
func FuzzVerify(f *testing.F) {
	f.Add("/default.sales/1/day=1/part-0.parquet", "partNumber=2", "Range", "bytes=0-9", "pqcache", "", uint8(3))
	f.Add("/default.sales", "list-type=2&prefix=1%2F&max-keys=2&continuation-token=MS9h", "If-Match", `"abc"`, "us-east-1", "", uint8(0))
	f.Add("/default.sales/1/blob with space/ü.bin", "", "X-Amz-Checksum-Mode", "ENABLED", "eu-west-1", "pqcache-pin/v1;s=job-1", uint8(63))
	f.Add("/default.sales/1/a%2Fb+c", "x=1&x=2&y", "", "", "pqcache", "tok", uint8(200))
	f.Add("/lake/tpch/lineitem/l_shipdate=1995-01-01/part-0.parquet", "", "Range", "bytes=-8", "us-east-1", "", uint8(9))
	f.Fuzz(func(t *testing.T, path, query, header, value, region, token string, flip uint8) {
		u, err := url.Parse("http://10.0.0.7:8090" + path)
		if err != nil || !strings.HasPrefix(path, "/") || region == "" || strings.ContainsAny(region, "/ \t\r\n,;=") {
			return
		}
		u.RawQuery = query
		r, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
		if err != nil {
			return
		}
		if header != "" {
			r.Header.Set(header, value)
		}
		signFor(t, r, region, token, time.Now().UTC())
		got, ok := overTheWire(r)
		if !ok || header != "" && !slices.Equal(got.Header.Values(header), r.Header.Values(header)) ||
			got.Header.Get("X-Amz-Security-Token") != token {
			return // not something HTTP/1.1 carries (a header name with a space, a value with a newline)
		}
		v := Verifier{Lookup: lookupOf(fuzzID, fuzzSecret)}
		if _, err := v.Verify(got); err != nil {
			t.Fatalf("a request signed with the key, %s %s (%v), is refused: %v", got.Method, got.RequestURI, got.Header, err)
		}
		auth := got.Header.Get("Authorization")
		i := len(auth) - 1 - int(flip)%64
		tampered := auth[:i] + string(auth[i]^1) + auth[i+1:]
		for _, change := range []func(*http.Request){
			func(c *http.Request) { c.Header.Set("Authorization", tampered) },
			func(c *http.Request) { c.URL.RawQuery += "&x-fuzz=1" },
			func(c *http.Request) { c.Header.Set("X-Amz-Date", "20260102T030405Z") },
			func(c *http.Request) { c.Header.Set("X-Amz-Security-Token", token+"x") },
			func(c *http.Request) { c.Header.Del("X-Amz-Content-Sha256") },
		} {
			c := got.Clone(context.Background())
			change(c)
			if _, err := v.Verify(c); err == nil {
				t.Fatalf("a changed request verifies: %s %s %v", c.Method, c.URL, c.Header)
			}
		}
		if _, err := (Verifier{Lookup: lookupOf(fuzzID, "another")}).Verify(got); err == nil {
			t.Fatal("a request verifies with another secret")
		}
		other := "pqcache"
		if region == other {
			other = "us-east-1"
		}
		var refusal *Refusal
		if _, err := (Verifier{Lookup: lookupOf(fuzzID, fuzzSecret), Region: other}).Verify(got); !errors.As(err, &refusal) {
			t.Fatalf("a request signed for %s verifies, or fails without a refusal, with a verifier for %s: %v", region, other, err)
		}
	})
}

// overTheWire writes r as a client sends it and reads it as a server does.
func overTheWire(r *http.Request) (*http.Request, bool) {
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		return nil, false
	}
	got, err := http.ReadRequest(bufio.NewReader(&buf))
	if err != nil {
		return nil, false
	}
	got.RemoteAddr = "10.0.0.8:40000"
	return got, true
}
