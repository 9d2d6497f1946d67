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

package peer

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/pqcache/pqcache/agent/s3serve"
	"github.com/pqcache/pqcache/cache/generations"
	"github.com/pqcache/pqcache/cache/manifest"
)

var fuzzKey = Key{ID: "pqcache-peer", Secret: "peer-secret-for-fuzzing"}

// emptySHA256 is the payload hash of a request without a body, which the S3 SDK sends for GET.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// sign signs r as a follower's S3 client does (path style, S3 does not escape the path twice).
func sign(t *testing.T, r *http.Request, at time.Time) {
	t.Helper()
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	creds := aws.Credentials{AccessKeyID: fuzzKey.ID, SecretAccessKey: fuzzKey.Secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, emptySHA256, "s3", Region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
}

// fuzzFiles is generation 1 of the dataset the handler fuzz serves.
var fuzzFiles = map[string]string{
	"a.parquet":       "PAR1 a PAR1",
	"b/c.bin":         strings.Repeat("0123456789", 10),
	"b/d e+ü.bin":     "odd key",
	"b/multipart.bin": "first part|second",
}

// publishFuzzGeneration publishes fuzzFiles as generation 1 of a root, with its object index.
func publishFuzzGeneration(f *testing.F) string {
	root := f.TempDir()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range fuzzFiles {
			if !yield(k) {
				return
			}
		}
	})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, k := range keys {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fuzzFiles[k]), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	entries := func(fn func(manifest.Entry) error) error {
		for _, k := range keys {
			e := manifest.Entry{Key: k, Size: int64(len(fuzzFiles[k])), LastModified: at, ETag: `"` + strconv.Itoa(len(k)) + `"`}
			if k == "b/multipart.bin" {
				e.Parts, e.ETag = []int64{11, 6}, `"0123-2"`
			}
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := generations.Publish(context.Background(), root, 1, entries, generations.Policy{Keep: 1, Index: true}, time.Now()); err != nil {
		f.Fatal(err)
	}
	return root
}

// FuzzServe sends the peer handler signed requests with any path, query and Range: what a
// follower, or anyone holding the key, can ask. Seeds are the requests the S3 SDK sends a peer
// (ListObjectsV2 pages, GetObject with a range or a part number, HeadObject).
//
// Properties: no request crashes the handler or makes it fail inside (500); a listing is XML whose
// keys are keys of the generation, under the prefix asked for, in order, at most max-keys of them,
// with a token when truncated; an object's body is the file's bytes that Content-Range names; an
// error is an S3 error document.
func FuzzServe(f *testing.F) {
	root := publishFuzzGeneration(f)
	s := &Server{Auth: fuzzKey, Roots: func(b string) (string, bool) { return root, b == "default.sales" }}
	f.Add(false, "", "list-type=2&prefix=1%2F&max-keys=2", "")
	f.Add(false, "", "list-type=2&prefix=1%2Fb%2F&continuation-token=MS9iL2MuYmlu", "")
	f.Add(false, "", "list-type=2&prefix=1%2F&start-after=1%2Fa.parquet&max-keys=1000", "")
	f.Add(false, "", "list-type=1&prefix=2%2F", "")
	f.Add(false, "1/b/c.bin", "", "bytes=10-19")
	f.Add(false, "1/b/c.bin", "", "bytes=95-")
	f.Add(true, "1/a.parquet", "", "")
	f.Add(false, "1/b/multipart.bin", "partNumber=2", "")
	f.Add(false, "1/b/d e+ü.bin", "partNumber=1", "bytes=0-0")
	f.Add(false, "2/a.parquet", "", "")
	f.Fuzz(func(t *testing.T, head bool, key, query, rng string) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		u := &url.URL{Scheme: "http", Host: "10.0.0.7:8090", Path: "/default.sales/" + key, RawQuery: query}
		r, err := http.NewRequestWithContext(context.Background(), method, u.String(), nil)
		if err != nil {
			return
		}
		if rng != "" {
			r.Header.Set("Range", rng)
		}
		sign(t, r, time.Now().UTC())
		r.RemoteAddr = "10.0.0.8:40000"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		checkAnswer(t, r, w)
	})
}

func checkAnswer(t *testing.T, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	switch code := w.Code; {
	case code == http.StatusInternalServerError || code == http.StatusForbidden:
		t.Fatalf("%s %s: %d %s", r.Method, r.URL, code, w.Body)
	case code >= 400 && r.Method == http.MethodGet:
		var e struct{ Code, Message string }
		if err := xml.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code == "" {
			t.Fatalf("%s %s: %d with %q, not an S3 error (%v)", r.Method, r.URL, code, w.Body, err)
		}
	case code >= 400:
	case strings.TrimPrefix(r.URL.Path, "/default.sales") == "/":
		checkListing(t, r, w.Body.Bytes())
	default:
		checkObject(t, r, w)
	}
}

func checkListing(t *testing.T, r *http.Request, body []byte) {
	t.Helper()
	var res s3serve.ListResult
	if err := xml.Unmarshal(body, &res); err != nil {
		t.Fatalf("%s: listing %q: %v", r.URL, body, err)
	}
	prefix := r.URL.Query().Get("prefix")
	if res.KeyCount != len(res.Contents) || res.KeyCount > res.MaxKeys || res.MaxKeys > s3serve.MaxKeys {
		t.Fatalf("%s: %d keys listed, KeyCount %d, MaxKeys %d", r.URL, len(res.Contents), res.KeyCount, res.MaxKeys)
	}
	if res.IsTruncated && res.NextContinuationToken == "" {
		t.Fatalf("%s: truncated without a continuation token", r.URL)
	}
	for i, e := range res.Contents {
		k, ok := strings.CutPrefix(e.Key, "1/")
		if _, known := fuzzFiles[k]; !ok || !known || !strings.HasPrefix(e.Key, prefix) || i > 0 && e.Key <= res.Contents[i-1].Key {
			t.Fatalf("%s: listed %q (prefix %q, after %v)", r.URL, e.Key, prefix, res.Contents[:i])
		}
		if e.Size != int64(len(fuzzFiles[k])) {
			t.Fatalf("%s: %q listed with size %d", r.URL, e.Key, e.Size)
		}
	}
}

func checkObject(t *testing.T, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/default.sales/"), "/")
	content, ok := fuzzFiles[key]
	if !ok {
		t.Fatalf("%s %s: %d for an object that does not exist", r.Method, r.URL, w.Code)
	}
	n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
	if err != nil || n < 0 || r.Method == http.MethodGet && n != int64(w.Body.Len()) {
		t.Fatalf("%s %s: Content-Length %q, body of %d bytes", r.Method, r.URL, w.Header().Get("Content-Length"), w.Body.Len())
	}
	start, want := int64(0), int64(len(content))
	if w.Code == http.StatusPartialContent {
		var end, size int64
		if _, err := fmtSscanRange(w.Header().Get("Content-Range"), &start, &end, &size); err != nil ||
			size != int64(len(content)) || start < 0 || end < start || end >= size || end-start+1 != n {
			t.Fatalf("%s %s: Content-Range %q, Content-Length %d", r.Method, r.URL, w.Header().Get("Content-Range"), n)
		}
		want = n
	} else if w.Code != http.StatusOK || n != want {
		t.Fatalf("%s %s: %d, Content-Length %d of %d", r.Method, r.URL, w.Code, n, want)
	}
	if r.Method == http.MethodGet && w.Body.String() != content[start:start+want] {
		t.Fatalf("%s %s: %q, want %q", r.Method, r.URL, w.Body, content[start:start+want])
	}
}

// fmtSscanRange reads "bytes START-END/SIZE".
func fmtSscanRange(h string, start, end, size *int64) (int, error) {
	return fmt.Sscanf(h, "bytes %d-%d/%d", start, end, size)
}
