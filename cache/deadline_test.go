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
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/testfiles"
)

// slowEndpoint is an S3 endpoint on 127.0.0.1 in front of the env's versitygw that answers slowly
// but never stalls long enough for a client timeout: each listing after listDelay, and every other
// body trickled at bytesPerSecond.
func (e *env) slowEndpoint(listDelay time.Duration, bytesPerSecond int) string {
	e.t.Helper()
	up, err := url.Parse(e.srv.Endpoint)
	if err != nil {
		e.t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1 // each trickled chunk goes out at once
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Query().Has("list-type") {
			return nil
		}
		resp.Body = &trickle{ReadCloser: resp.Body, ctx: resp.Request.Context(), chunk: max(1, bytesPerSecond/10)}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("list-type") {
			select {
			case <-time.After(listDelay):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// trickle reads chunk bytes every 100 ms.
type trickle struct {
	io.ReadCloser
	ctx   context.Context
	chunk int
}

func (t *trickle) Read(p []byte) (int, error) {
	select {
	case <-time.After(100 * time.Millisecond):
	case <-t.ctx.Done():
		return 0, t.ctx.Err()
	}
	return t.ReadCloser.Read(p[:min(len(p), t.chunk)])
}

// syncWithDeadline runs one sync through endpoint with deadline d.
func (e *env) syncWithDeadline(endpoint string, d cache.Deadline) (*wire.SyncReport, time.Duration, error) {
	e.t.Helper()
	st, err := s3store.New(context.Background(), s3store.Config{Bucket: e.bucket,
		Client: e.srv.Client(func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint) })})
	if err != nil {
		e.t.Fatal(err)
	}
	opts := e.options(st.Requests())
	opts.Deadline = d
	start := time.Now()
	rep, err := cache.Sync(context.Background(), st, opts)
	return rep, time.Since(start), err
}

// expectDeadline asserts that a sync stopped at its deadline, soon after it, and left the good copy.
func (e *env) expectDeadline(rep *wire.SyncReport, err error, took, within time.Duration) {
	e.t.Helper()
	if !errors.Is(err, cache.ErrSyncDeadline) {
		e.t.Fatalf("sync returned %v, want ErrSyncDeadline", err)
	}
	if rep.Reason != wire.ReasonSyncDeadlineExceeded || rep.Result != wire.ResultFailed {
		e.t.Errorf("report: result %q reason %q, want Failed, %s", rep.Result, rep.Reason, wire.ReasonSyncDeadlineExceeded)
	}
	if took > within {
		e.t.Errorf("the sync took %s, want it stopped within %s", took, within)
	}
	e.expectGoodCopy()
}

// TestACopyPastItsDeadlineStops: an endpoint that trickles a 256 KiB object at 20 KiB/s (13 s)
// stops the sync at its transfer deadline, max(floor 500 ms, 256 KiB at 1 MiB/s), not at the end
// of the trickle; the good copy stays, and the new file is not published.
func TestACopyPastItsDeadlineStops(t *testing.T) {
	e := goodCopy(t)
	e.put("big.bin", testfiles.Random(256<<10, 3))
	endpoint := e.slowEndpoint(0, 20<<10)
	rep, took, err := e.syncWithDeadline(endpoint, cache.Deadline{List: time.Minute, TransferFloor: 500 * time.Millisecond, MinBytesPerSecond: 1 << 20})
	e.expectDeadline(rep, err, took, 5*time.Second)
	e.expectAbsent("big.bin")
}

// TestAListingPastItsDeadlineStops: an endpoint that takes 3 s per listing page stops the sync at
// its listing deadline (300 ms); a.bin, gone from the bucket, is not pruned.
func TestAListingPastItsDeadlineStops(t *testing.T) {
	e := goodCopy(t)
	e.remove("a.bin")
	endpoint := e.slowEndpoint(3*time.Second, 1<<30)
	rep, took, err := e.syncWithDeadline(endpoint, cache.Deadline{List: 300 * time.Millisecond})
	e.expectDeadline(rep, err, took, 2*time.Second)
}

// TestTransferDeadlineGrowsWithBytes: the copies get the floor, or the bytes at the minimum rate.
func TestTransferDeadlineGrowsWithBytes(t *testing.T) {
	d := cache.Deadline{TransferFloor: time.Minute, MinBytesPerSecond: 1 << 20}
	for _, tc := range []struct {
		need int64
		want time.Duration
	}{{0, time.Minute}, {30 << 20, time.Minute}, {600 << 20, 10 * time.Minute}, {1 << 62, math.MaxInt64}} {
		if got := d.Transfer(tc.need); got != tc.want {
			t.Errorf("Transfer(%d) = %s, want %s", tc.need, got, tc.want)
		}
	}
	if got := (cache.Deadline{}).Transfer(100 << 30); got != 100<<30/cache.DefaultMinBytesPerSecond*time.Second {
		t.Errorf("default Transfer(100 GiB) = %s", got)
	}
}
