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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/cache"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/hostiles3"
	"github.com/pqcache/pqcache/test/testfiles"
)

// The tests in this file sync from test/hostiles3, an S3 endpoint that misbehaves on demand,
// the way a Dataset's sync does (cache.OptionsFromArgs from the Dataset's arguments, a Store with
// NewHTTPClient's timeouts): first a good copy, then, with the endpoint hostile, a sync that must
// fail with a clear reason, within a deadline, in bounded memory, leaving the good copy as it was.
// hostile_test.go covers the listing's bounds one by one, in front of versitygw.

// The clients' timeouts in these tests: short, so that a slowloris fails in seconds.
var hostileTimeouts = s3store.ClientTimeouts{Dial: 2 * time.Second, TLSHandshake: 2 * time.Second, ResponseHeader: time.Second}

// hostileEnv is a hostile endpoint with a good copy of its bucket's prefix in dir.
type hostileEnv struct {
	t   *testing.T
	srv *hostiles3.Server
	dir string
	v1  map[string][]byte // the good copy
	// floor is what the store's bodies must deliver (zero: the default, 1 MiB a minute).
	floor s3store.BodyFloor
}

const (
	hostileBucket = "lake"
	hostilePrefix = "sales/"
)

// newHostileEnv starts the endpoint, well-behaved, puts three objects and syncs the good copy; then
// it changes one object and adds one, so that the next sync has objects to GET.
func newHostileEnv(t *testing.T) *hostileEnv {
	srv, err := hostiles3.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.Interval = 200 * time.Millisecond
	h := &hostileEnv{t: t, srv: srv, dir: filepath.Join(t.TempDir(), "cache"), v1: map[string][]byte{
		"a.bin":           testfiles.Random(100<<10, 1),
		"b/c.bin":         testfiles.Random(3<<10, 2),
		"b/d.parquet.bin": []byte("third"),
	}}
	for k, v := range h.v1 {
		srv.Put(hostileBucket, hostilePrefix+k, v)
	}
	if rep, err := h.sync(30 * time.Second); err != nil {
		t.Fatalf("good sync: %v %+v", err, rep)
	}
	h.expectGoodCopy()
	srv.Put(hostileBucket, hostilePrefix+"a.bin", testfiles.Random(100<<10, 3))
	srv.Put(hostileBucket, hostilePrefix+"e.bin", testfiles.Random(50<<10, 4))
	return h
}

// sync runs one sync as a Dataset's, with a deadline.
func (h *hostileEnv) sync(deadline time.Duration) (*wire.SyncReport, error) {
	h.t.Helper()
	args := wire.SyncArgs{Source: "s3://" + hostileBucket + "/" + hostilePrefix, Dir: h.dir,
		SyncOptions: wire.SyncOptions{S3Access: wire.S3Access{Endpoint: h.srv.URL(), PathStyle: true, Region: "us-east-1"}}}.WithDefaults()
	cfg, opts, err := cache.OptionsFromArgs(args)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg.Credentials = &s3store.Credentials{AccessKeyID: "anyone", SecretAccessKey: "anything"}
	cfg.HTTPClient = s3store.NewHTTPClient(hostileTimeouts)
	cfg.BodyFloor = h.floor
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	st, err := s3store.New(ctx, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	opts.Requests = st.Requests()
	return cache.Sync(ctx, st, opts)
}

// expectGoodCopy asserts the cache holds the good copy, file by file, and verifies.
func (h *hostileEnv) expectGoodCopy() { h.expectIntact(false) }

// expectIntact asserts that every file of the good copy is there, as it was or (with partial, for a
// listing that failed after a good page, whose files the sync published as it went) as the store
// holds it now, that no other file is, and that the copy verifies.
func (h *hostileEnv) expectIntact(partial bool) {
	h.t.Helper()
	check := func(k string, want []byte, absent bool) {
		h.t.Helper()
		got, err := os.ReadFile(filepath.Join(h.dir, k))
		if absent && os.IsNotExist(err) {
			return
		}
		if err != nil {
			h.t.Fatalf("reading cached %s: %v", k, err)
		}
		now, _ := h.srv.Object(hostileBucket, hostilePrefix+k)
		if !bytes.Equal(got, want) && (!partial || !bytes.Equal(got, now)) {
			h.t.Fatalf("cached %s: %d bytes, sha %s; want the good copy's %d bytes, sha %s", k, len(got), sum(got), len(want), sum(want))
		}
	}
	for k, want := range h.v1 {
		check(k, want, false)
	}
	if partial {
		now, _ := h.srv.Object(hostileBucket, hostilePrefix+"e.bin")
		check("e.bin", now, true)
	} else if _, err := os.Stat(filepath.Join(h.dir, "e.bin")); !os.IsNotExist(err) {
		h.t.Fatalf("e.bin, new since the good copy, is cached (stat: %v)", err)
	}
	r, err := cache.Verify(h.dir)
	if err != nil || !r.OK() {
		h.t.Fatalf("verify: %v %+v", err, r)
	}
}

// heapPeak samples the Go heap every 20 ms while run runs, and returns how far it grew above the
// heap at the start (after a GC).
func heapPeak(run func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	run()
	close(stop)
	wg.Wait()
	return peak - min(base, peak)
}

// hostileCase is one behaviour and what the sync must make of it.
type hostileCase struct {
	rule hostiles3.Rule
	// reason the report gives, and a piece of the error.
	reason, says string
	// within is how soon the sync must end; deadline is its context's.
	within, deadline time.Duration
	// heap bounds the Go heap's growth during the sync (0: not measured).
	heap uint64
	// partial: the listing fails after a good first page, whose files the sync may publish.
	partial bool
	// floor, if set, is the store's bodies' floor in this case (the default's minute, shortened).
	floor s3store.BodyFloor
}

// quickFloor holds bodies to 1 KiB a second: the endpoint's byte every 200 ms falls under it.
var quickFloor = s3store.BodyFloor{Window: time.Second, Bytes: 1 << 10}

// hostileCases are the behaviours that fail the whole sync, and those that fail the changed files.
var hostileCases = map[string]hostileCase{
	"endless listing body": {rule: hostiles3.Rule{Behaviour: hostiles3.EndlessBody, Op: hostiles3.OpList},
		reason: wire.ReasonSourceMisbehaving, says: "over 16777216 bytes", within: 15 * time.Second, heap: 64 << 20},
	"huge listing document": {rule: hostiles3.Rule{Behaviour: hostiles3.HugeDocument, Op: hostiles3.OpList},
		reason: wire.ReasonSourceMisbehaving, says: "over 16777216 bytes", within: 15 * time.Second, heap: 64 << 20},
	"listing headers never sent": {rule: hostiles3.Rule{Behaviour: hostiles3.SlowHeaders, Op: hostiles3.OpList},
		reason: wire.ReasonSyncFailed, says: "timeout awaiting response headers", within: 25 * time.Second},
	"listing body a byte at a time": {rule: hostiles3.Rule{Behaviour: hostiles3.SlowBody, Op: hostiles3.OpList},
		reason: wire.ReasonSourceTooSlow, says: "sends too slowly", within: 15 * time.Second, floor: quickFloor},
	"listing shorter than its Content-Length": {rule: hostiles3.Rule{Behaviour: hostiles3.LongLength, Op: hostiles3.OpList},
		reason: wire.ReasonSyncFailed, says: "unexpected EOF", within: 25 * time.Second},
	"listing longer than its Content-Length": {rule: hostiles3.Rule{Behaviour: hostiles3.ShortLength, Op: hostiles3.OpList},
		reason: wire.ReasonSourceMisbehaving, says: "does not parse as a listing", within: 15 * time.Second},
	"listing cut mid-body": {rule: hostiles3.Rule{Behaviour: hostiles3.Truncated, Op: hostiles3.OpList},
		reason: wire.ReasonSyncFailed, says: "unexpected EOF", within: 25 * time.Second},
	"redirect loop": {rule: hostiles3.Rule{Behaviour: hostiles3.RedirectLoop},
		reason: wire.ReasonSyncFailed, says: "more than 3 redirects", within: 25 * time.Second},
	"redirect to another host": {rule: hostiles3.Rule{Behaviour: hostiles3.RedirectAway},
		reason: wire.ReasonSyncFailed, says: "to another host", within: 25 * time.Second},
	"500 storm": {rule: hostiles3.Rule{Behaviour: hostiles3.Storm500},
		reason: wire.ReasonSyncFailed, says: "InternalError", within: 25 * time.Second},
	"503 storm": {rule: hostiles3.Rule{Behaviour: hostiles3.Storm503},
		reason: wire.ReasonSyncFailed, says: "SlowDown", within: 25 * time.Second},
	"repeated continuation token": {rule: hostiles3.Rule{Behaviour: hostiles3.RepeatToken, Op: hostiles3.OpList},
		reason: wire.ReasonSourceMisbehaving, says: `continuation token "again" came back`, within: 15 * time.Second, partial: true},
	"endless empty pages": {rule: hostiles3.Rule{Behaviour: hostiles3.EndlessPages, Op: hostiles3.OpList},
		reason: wire.ReasonSourceMisbehaving, says: "empty pages in a row", within: 15 * time.Second},
	"GET headers never sent": {rule: hostiles3.Rule{Behaviour: hostiles3.SlowHeaders, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "timeout awaiting response headers", within: 40 * time.Second},
	"GET body a byte at a time": {rule: hostiles3.Rule{Behaviour: hostiles3.SlowBody, Op: hostiles3.OpGet},
		reason: wire.ReasonSourceTooSlow, says: "sends too slowly", within: 20 * time.Second, floor: quickFloor},
	// The default floor is a minute's: only the sync's deadline ends a body that trickles in less.
	"listing body a byte at a time, under the deadline": {rule: hostiles3.Rule{Behaviour: hostiles3.SlowBody, Op: hostiles3.OpList},
		reason: wire.ReasonSyncFailed, says: "context deadline exceeded", within: 6 * time.Second, deadline: 3 * time.Second},
	"GET longer than its Content-Length": {rule: hostiles3.Rule{Behaviour: hostiles3.ShortLength, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "", within: 25 * time.Second},
	"GET shorter than its Content-Length": {rule: hostiles3.Rule{Behaviour: hostiles3.LongLength, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "", within: 25 * time.Second},
	"GET cut mid-body": {rule: hostiles3.Rule{Behaviour: hostiles3.Truncated, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "", within: 25 * time.Second},
	"GET endless body": {rule: hostiles3.Rule{Behaviour: hostiles3.EndlessBody, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "", within: 25 * time.Second, heap: 64 << 20},
	"GET body that is not the listed object": {rule: hostiles3.Rule{Behaviour: hostiles3.WrongChecksum, Op: hostiles3.OpGet},
		reason: wire.ReasonSyncFailed, says: "", within: 25 * time.Second},
}

// TestHostileEndpoint: every behaviour of the hostile endpoint fails the sync with its reason, in
// time and in bounded memory, and leaves the good copy as it was.
func TestHostileEndpoint(t *testing.T) {
	for name, tc := range hostileCases {
		t.Run(name, func(t *testing.T) {
			h := newHostileEnv(t)
			h.floor = tc.floor
			h.srv.Set(hostileBucket, tc.rule)
			deadline := cmpOr(tc.deadline, 2*tc.within)
			var (
				rep *wire.SyncReport
				err error
			)
			start := time.Now()
			grew := heapPeak(func() { rep, err = h.sync(deadline) })
			took := time.Since(start)
			t.Logf("%s: %v after %v, heap +%d MiB; report %s %s; server wrote %d body bytes in %d bad answers",
				tc.rule.Behaviour, errorText(err, rep), took.Round(time.Millisecond), grew>>20, rep.Result, rep.Reason,
				h.srv.Stats.BodyBytes.Load(), h.srv.Stats.Hostile.Load())
			if err == nil || rep.Result != wire.ResultFailed {
				t.Fatalf("sync succeeded: %+v", rep)
			}
			if rep.Reason != tc.reason || !strings.Contains(errorText(err, rep), tc.says) {
				t.Errorf("sync failed with %v, reason %q; want reason %q saying %q", errorText(err, rep), rep.Reason, tc.reason, tc.says)
			}
			if took > tc.within {
				t.Errorf("the sync took %v, want at most %v", took, tc.within)
			}
			if tc.heap > 0 && grew > tc.heap {
				t.Errorf("the heap grew %d MiB during the sync, want at most %d MiB", grew>>20, tc.heap>>20)
			}
			if n := h.srv.Stats.Away.Load(); n > 0 {
				t.Errorf("%d requests followed a redirect to another host", n)
			}
			h.expectIntact(tc.partial)
		})
	}
}

// errorText is the sync's error and its failed files' errors.
func errorText(err error, rep *wire.SyncReport) string {
	var b strings.Builder
	b.WriteString(err.Error())
	for _, f := range rep.Failed {
		b.WriteString("; " + f.Key + ": " + f.Error)
	}
	return b.String()
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// TestHostileEndpointRefusedKeys: keys outside the prefix and negative sizes are refused one by one,
// with HostileKeys; the rest of the sync, the changed and the new object, goes on.
func TestHostileEndpointRefusedKeys(t *testing.T) {
	for _, tc := range []struct {
		b       hostiles3.Behaviour
		refused string
	}{
		{hostiles3.OutsidePrefix, hostiles3.OutsideKey},
		{hostiles3.NegativeSize, hostiles3.NegativeKey},
	} {
		t.Run(string(tc.b), func(t *testing.T) {
			h := newHostileEnv(t)
			h.srv.Set(hostileBucket, hostiles3.Rule{Behaviour: tc.b, Op: hostiles3.OpList})
			rep, err := h.sync(30 * time.Second)
			if !errors.Is(err, cache.ErrFilesFailed) || rep.Reason != wire.ReasonHostileKeys || rep.FilesFailed != 1 || rep.Failed[0].Key != tc.refused {
				t.Fatalf("sync: %v, report %+v", err, rep)
			}
			if rep.FilesCopied != 2 {
				t.Errorf("copied %d files, want 2 (a.bin, e.bin)", rep.FilesCopied)
			}
			if _, err := os.Stat(filepath.Join(h.dir, tc.refused)); !os.IsNotExist(err) {
				t.Errorf("the refused key is cached (stat: %v)", err)
			}
			r, err := cache.Verify(h.dir)
			if err != nil || !r.OK() {
				t.Fatalf("verify: %v %+v", err, r)
			}
		})
	}
}
