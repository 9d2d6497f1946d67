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

package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// hostile is an S3 endpoint on 127.0.0.1 in front of the env's versitygw: it answers every
// ListObjectsV2 with list, and passes every other request through (signed for the hostile endpoint,
// which versitygw checks against the Host header the proxy keeps).
type hostile struct {
	url   string
	lists atomic.Int64 // ListObjectsV2 requests answered
	sent  atomic.Int64 // listing bytes written
}

// listAnswer answers one ListObjectsV2; upstream returns what versitygw lists for the same request.
type listAnswer func(h *hostile, w http.ResponseWriter, r *http.Request, upstream func() []byte)

func (e *env) hostile(list listAnswer) *hostile {
	e.t.Helper()
	up, err := url.Parse(e.srv.Endpoint)
	if err != nil {
		e.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	h := &hostile{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !r.URL.Query().Has("list-type") {
			proxy.ServeHTTP(w, r)
			return
		}
		h.lists.Add(1)
		list(h, w, r, func() []byte { return e.upstreamListing(r, up) })
	}))
	e.t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// upstreamListing sends r, as signed, to versitygw and returns its answer.
func (e *env) upstreamListing(r *http.Request, up *url.URL) []byte {
	e.t.Helper()
	u := *up
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		e.t.Error(err)
		return nil
	}
	req.Header, req.Host = r.Header.Clone(), r.Host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Error(err)
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		e.t.Errorf("upstream listing: %s %v: %s", resp.Status, err, b)
	}
	return b
}

// write sends a listing chunk and counts it.
func (h *hostile) write(w http.ResponseWriter, s string) error {
	n, err := io.WriteString(w, s)
	h.sent.Add(int64(n))
	return err
}

// syncVia runs one sync through the hostile endpoint.
func (e *env) syncVia(h *hostile) (*wire.SyncReport, error) {
	e.t.Helper()
	st, err := s3store.New(context.Background(), s3store.Config{Bucket: e.bucket,
		Client: e.srv.Client(func(o *s3.Options) { o.BaseEndpoint = aws.String(h.url) })})
	if err != nil {
		e.t.Fatal(err)
	}
	return cache.Sync(context.Background(), st, e.options(st.Requests()))
}

const listStart = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>data</Name><Prefix>tpch/</Prefix><MaxKeys>1000</MaxKeys>`

func listEntry(key string, size int64) string {
	return fmt.Sprintf(`<Contents><Key>%s</Key><LastModified>2026-12-02T19:27:26.000Z</LastModified><ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>`, key, size)
}

// goodCopy syncs two files straight from versitygw: the last good copy that a hostile listing must
// leave as it is.
func goodCopy(t *testing.T) *env {
	e := newEnv(t)
	e.put("a.bin", []byte("first"))
	e.put("b/c.bin", []byte("second"))
	e.mustSync(nil)
	return e
}

func (e *env) expectGoodCopy() {
	e.t.Helper()
	e.expectFile("a.bin", []byte("first"))
	e.expectFile("b/c.bin", []byte("second"))
	e.expectVerified()
}

// expectMisbehaving asserts that a sync failed with SourceMisbehaving and left the good copy alone.
func (e *env) expectMisbehaving(rep *wire.SyncReport, err error, says string) {
	e.t.Helper()
	if !errors.Is(err, s3store.ErrSourceMisbehaving) || !strings.Contains(err.Error(), says) {
		e.t.Fatalf("sync returned %v, want ErrSourceMisbehaving saying %q", err, says)
	}
	if rep.Reason != wire.ReasonSourceMisbehaving || rep.Result != wire.ResultFailed {
		e.t.Fatalf("report: result %q reason %q, want Failed, %s", rep.Result, rep.Reason, wire.ReasonSourceMisbehaving)
	}
	e.expectGoodCopy()
}

// TestEndlessListingBodyIsCut: a listing body that never ends is read up to MaxListPageBytes and no
// further. (The server stops at four times the cap, with a valid end: read whole, it would be an
// empty listing, and the sync would prune the good copy.)
func TestEndlessListingBodyIsCut(t *testing.T) {
	e := goodCopy(t)
	const limit = 4 * s3store.MaxListPageBytes
	h := e.hostile(func(h *hostile, w http.ResponseWriter, _ *http.Request, _ func() []byte) {
		pad := strings.Repeat(" ", 64<<10)
		if h.write(w, listStart+"<IsTruncated>false</IsTruncated>") != nil {
			return
		}
		for h.sent.Load() < limit {
			if h.write(w, pad) != nil {
				return // the client stopped reading
			}
		}
		_ = h.write(w, "</ListBucketResult>")
	})
	rep, err := e.syncVia(h)
	e.expectMisbehaving(rep, err, "over 16777216 bytes")
	if n := h.sent.Load(); n >= limit {
		t.Errorf("the server wrote %d bytes: the client read the whole body", n)
	}
}

// TestRepeatedContinuationTokenEndsTheListing: a listing whose pages, after the real first one, each
// list a new key but always give the same continuation token would go on for ever. (The server ends
// after 200 pages: followed to the end, the sync would try to copy 200 keys that do not exist.)
func TestRepeatedContinuationTokenEndsTheListing(t *testing.T) {
	e := goodCopy(t)
	const again = `<IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>`
	h := e.hostile(func(h *hostile, w http.ResponseWriter, _ *http.Request, upstream func() []byte) {
		n := h.lists.Load()
		if n == 1 {
			doc := string(upstream())
			if !strings.Contains(doc, "<IsTruncated>false</IsTruncated>") {
				t.Errorf("unexpected upstream listing: %s", doc)
			}
			_ = h.write(w, strings.Replace(doc, "<IsTruncated>false</IsTruncated>", again, 1))
			return
		}
		more := again
		if n >= 200 {
			more = `<IsTruncated>false</IsTruncated>`
		}
		_ = h.write(w, listStart+listEntry(fmt.Sprintf("tpch/z/%04d.bin", n), 1)+more+"</ListBucketResult>")
	})
	rep, err := e.syncVia(h)
	e.expectMisbehaving(rep, err, `continuation token "again" came back`)
	if n := h.lists.Load(); n != 2 {
		t.Errorf("%d listing requests, want 2 (the token came back on the second)", n)
	}
}

// TestEndlessEmptyPagesEndTheListing: empty pages that say more follow, each with a new token, end
// the listing after MaxEmptyListPages of them. (The server ends after 1,000: followed to the end,
// the listing would be empty, and the sync would prune the good copy.)
func TestEndlessEmptyPagesEndTheListing(t *testing.T) {
	e := goodCopy(t)
	h := e.hostile(func(h *hostile, w http.ResponseWriter, _ *http.Request, _ func() []byte) {
		n := h.lists.Load()
		more := fmt.Sprintf(`<IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken>`, n)
		if n >= 1000 {
			more = `<IsTruncated>false</IsTruncated>`
		}
		_ = h.write(w, listStart+more+"</ListBucketResult>")
	})
	rep, err := e.syncVia(h)
	e.expectMisbehaving(rep, err, "more than 100 empty pages in a row")
	if n, want := h.lists.Load(), int64(s3store.MaxEmptyListPages+1); n != want {
		t.Errorf("%d listing requests, want %d", n, want)
	}
}

// TestRefusedListedObjects: a key outside the listed prefix (which the prefix trim would leave whole,
// publishing it under its full key) and an object with a negative size (which would lower the
// free-space check) are refused and reported as hostile keys; the rest of the sync goes on.
func TestRefusedListedObjects(t *testing.T) {
	for _, tc := range []struct {
		name, inject, failed string
		first                bool // inject before the listed objects, else after
	}{
		{"key outside the prefix", listEntry("other/escape.bin", 7), "other/escape.bin", true},
		{"key beside the prefix", listEntry("tpch-other/escape.bin", 7), "tpch-other/escape.bin", true},
		// Listed last, its whole key sorts after the others' relative keys: nothing else would notice.
		{"key outside the prefix, listed last", listEntry("zzz/escape.bin", 7), "zzz/escape.bin", false},
		{"negative size", listEntry("tpch/z-negative.bin", -5), "z-negative.bin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := goodCopy(t)
			e.put("d.bin", []byte("new since the good copy"))
			h := e.hostile(func(h *hostile, w http.ResponseWriter, _ *http.Request, upstream func() []byte) {
				doc := upstream()
				at := bytes.Index(doc, []byte("</ListBucketResult>"))
				if tc.first {
					at = bytes.Index(doc, []byte("<Contents>"))
				}
				if at < 0 {
					t.Errorf("unexpected upstream listing: %s", doc)
					return
				}
				_ = h.write(w, string(doc[:at])+tc.inject+string(doc[at:]))
			})
			rep, err := e.syncVia(h)
			if !errors.Is(err, cache.ErrFilesFailed) {
				t.Fatalf("sync returned %v, want ErrFilesFailed", err)
			}
			var failed []string
			for _, f := range rep.Failed {
				failed = append(failed, f.Key)
			}
			if rep.Reason != wire.ReasonHostileKeys || rep.FilesFailed != 1 || !slices.Equal(failed, []string{tc.failed}) {
				t.Fatalf("report: reason %q failed %d %v, want %s and [%s]", rep.Reason, rep.FilesFailed, failed, wire.ReasonHostileKeys, tc.failed)
			}
			if rep.FilesCopied != 1 {
				t.Errorf("copied %d files, want 1 (d.bin)", rep.FilesCopied)
			}
			e.expectFile("d.bin", []byte("new since the good copy"))
			e.expectAbsent(tc.failed)
			e.expectGoodCopy()
		})
	}
}

// TestKeysThatDifferOnlyByCaseAreRefused: two keys equal but for case would be one file on a
// case-insensitive volume; the later one is refused as a hostile key, and the rest of the sync goes on.
func TestKeysThatDifferOnlyByCaseAreRefused(t *testing.T) {
	e := newEnv(t)
	upper, lower, other := testfiles.Parquet(t, 200, 100, 1), testfiles.Parquet(t, 200, 100, 2), testfiles.Parquet(t, 200, 100, 3)
	e.put("t/A.parquet", upper)
	e.put("t/a.parquet", lower)
	e.put("t/b.parquet", other)
	rep, err := e.sync(nil)
	if !errors.Is(err, cache.ErrFilesFailed) || rep.Reason != wire.ReasonHostileKeys || rep.FilesCopied != 2 || rep.FilesFailed != 1 {
		t.Fatalf("sync: %v, report %+v", err, rep)
	}
	if f := rep.Failed[0]; f.Key != "t/a.parquet" || !strings.Contains(f.Error, "case-insensitive") {
		t.Fatalf("failure: %+v", f)
	}
	e.expectFile("t/A.parquet", upper)
	e.expectAbsent("t/a.parquet")
	e.expectFile("t/b.parquet", other)
	e.expectVerified()
}

// TestAListingThatFailsMidwayDeletesNothing: a key gone from the bucket is deleted only once the
// whole listing has been read. Here page 1 is versitygw's own listing (without a.bin, removed from
// the bucket), said to be truncated; page 2 comes after the publisher's batching delay and breaks the
// protocol (truncated, no token). Deleting as the merge finds keys gone would have removed a.bin by
// then, from a listing that never ended.
func TestAListingThatFailsMidwayDeletesNothing(t *testing.T) {
	e := goodCopy(t)
	e.remove("a.bin")
	h := e.hostile(func(h *hostile, w http.ResponseWriter, _ *http.Request, upstream func() []byte) {
		if h.lists.Load() == 1 {
			doc := string(upstream())
			if !strings.Contains(doc, "<IsTruncated>false</IsTruncated>") || strings.Contains(doc, "a.bin") {
				t.Errorf("unexpected upstream listing: %s", doc)
			}
			_ = h.write(w, strings.Replace(doc, "<IsTruncated>false</IsTruncated>",
				`<IsTruncated>true</IsTruncated><NextContinuationToken>page2</NextContinuationToken>`, 1))
			return
		}
		time.Sleep(time.Second) // past the publisher's delay: a delete sent to it is published by now
		_ = h.write(w, listStart+`<IsTruncated>true</IsTruncated></ListBucketResult>`)
	})
	rep, err := e.syncVia(h)
	e.expectMisbehaving(rep, err, "gives no continuation token")
	if rep.FilesDeleted != 0 {
		t.Errorf("the report says %d files deleted", rep.FilesDeleted)
	}
}
