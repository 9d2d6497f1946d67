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

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/cache/watch"
	"github.com/pqcache/pqcache/test/s3test"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes into it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// watchLines parses what watch printed so far.
func watchLines(t *testing.T, out string) []watch.Line {
	var lines []watch.Line
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var w watch.Line
		if err := json.Unmarshal([]byte(l), &w); err != nil {
			t.Fatalf("watch printed a line that is not JSON: %q", l)
		}
		lines = append(lines, w)
	}
	return lines
}

// TestWatchAppliesVersitygwNotificationsWithoutListing runs `pqcache watch` with its webhook, and
// versitygw posting its bucket notifications there: a new object and a delete reach the directory
// by targeted syncs, with no LIST request.
func TestWatchAppliesVersitygwNotificationsWithoutListing(t *testing.T) {
	// versitygw posts a test event at start and refuses to start if the URL does not answer, so a
	// stand-in answers on the webhook's port until watch takes it over.
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	standIn := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ReadHeaderTimeout: time.Second}
	go func() { _ = standIn.Serve(ln) }()
	const token = "watch-test-token-0123456789"
	srv := s3test.StartWithArgs(t, "--event-webhook-url", fmt.Sprintf("http://%s/events/%s?token=%s", addr, watch.Key, token))
	_ = standIn.Close()
	srv.CreateBucket(t, "lake")
	srv.PutObject(t, "lake", "live/old.bin", []byte("before the watch"))
	useTestCredentials(t)
	dir := filepath.Join(t.TempDir(), "cache")

	ctx, cancel := context.WithCancel(t.Context())
	cmd := NewRootCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"watch", "s3://lake/live/", dir, "--endpoint", srv.Endpoint, "--path-style",
		"--webhook-listen", addr, "--webhook-token", token, "--webhook-query-token", "--window", "200ms", "--max-delay", "1s", "--resync", "0"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("watch: %v", err)
		}
	}()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if ok() {
				return
			}
		}
		t.Fatalf("waited 20s for %s; watch printed:\n%s", what, out.String())
	}
	exists := func(rel string) bool { _, err := os.Stat(filepath.Join(dir, rel)); return err == nil }
	waitFor("the initial sync", func() bool { return exists("old.bin") })

	srv.PutObject(t, "lake", "live/date=2026-12-03/new.bin", []byte("a new partition"))
	waitFor("the new object", func() bool { return exists("date=2026-12-03/new.bin") })
	if _, err := srv.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("lake"), Key: aws.String("live/old.bin")}); err != nil {
		t.Fatal(err)
	}
	waitFor("the delete", func() bool { return !exists("old.bin") })

	// The lag measurement of the benchmarks, against the same watch: every object it writes is published.
	store, err := s3store.New(ctx, s3store.Config{Bucket: "lake", Region: s3test.Region, Endpoint: srv.Endpoint, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	lag, err := watch.MeasureLag(ctx, store, "live/", dir, 20, 10, 4096, 20*time.Second)
	if err != nil || lag.Published != 10 || lag.P50 <= 0 || lag.Max < lag.P50 {
		t.Fatalf("the lag measurement: %v %+v", err, lag)
	}

	// Watch prints a sync's line once the sync has returned, a moment after its files appear.
	waitFor("the lag tool's syncs to be reported", func() bool {
		n := 0
		for _, l := range watchLines(t, out.String()) {
			if l.Trigger == "events" {
				n++
			}
		}
		return n >= 3
	})
	var events int
	for _, l := range watchLines(t, out.String()) {
		if l.Result != "Succeeded" {
			t.Errorf("a sync failed: %+v", l)
		}
		if l.Trigger != "events" {
			continue
		}
		events++
		if l.Requests.List != 0 || l.Changes == nil || l.Requests.Head != l.Changes.Applied || l.Requests.Get != l.Changes.Applied-l.Deleted {
			t.Errorf("a targeted sync: %+v (requests %+v, changes %+v), want no LIST, a HEAD per change and a GET per copy", l, l.Requests, l.Changes)
		}
	}
	if events < 3 {
		t.Fatalf("%d targeted syncs, want at least 3 (the new object, the delete, the lag tool's writes):\n%s", events, out.String())
	}
}
