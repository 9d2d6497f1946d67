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
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/cache/s3store"
	"github.com/pqcache/pqcache/test/s3test"
)

// TestBenchDuringRefresh runs the PDS-H queries with DuckDB while the run rewrites a quarter of the
// files it reads every second: over s3:// (the bucket changing under the queries; a query may fail on
// a file that changed between two of its reads, and no other way) and over a volume's current
// generation that a sync loop keeps refreshing from the bucket. The digests are the idle run's, the run rewrote files, and on the volume syncs published new generations while every query
// read the one generation held at the start.
func TestBenchDuringRefresh(t *testing.T) {
	if os.Getenv("PQCACHE_HTTPFS_EXTENSION") == "" {
		t.Fatal("PQCACHE_HTTPFS_EXTENSION is not set: run `make httpfs-extension` (make test sets it)")
	}
	dir := tpchData(t, "0.01")
	srv := s3test.Start(t)
	useTestCredentials(t)
	s3flags := []string{"--endpoint", srv.Endpoint, "--path-style"}
	if out, err := run(t, append([]string{"s3", "put", dir, "s3://lake/tpch/"}, s3flags...)...); err != nil {
		t.Fatalf("s3 put: %v\n%s", err, out)
	}
	idle := benchDigests(t, "--engine", "duckdb", "--threads", "2", "--data", dir)
	refresh := []string{"--during-refresh", "--refresh-percent", "25", "--refresh-every", "1s"}

	t.Run("s3", func(t *testing.T) {
		res := benchDuringRefresh(t, append(append([]string{"--data", "s3://lake/tpch"}, refresh...), s3flags...))
		assertDigestsOrChangedUnder(t, res, idle)
		if r := res.Refresh; r == nil || r.Rewrites == 0 || r.Error != "" || r.Files == 0 {
			t.Fatalf("refresh %+v: want rewrites and no error", r)
		}
	})

	t.Run("volume", func(t *testing.T) {
		cache := filepath.Join(t.TempDir(), "cache")
		syncOnce := func() error {
			_, err := run(t, append([]string{"sync", "s3://lake/tpch/", cache, "--progress", "none"}, s3flags...)...)
			return err
		}
		if err := syncOnce(); err != nil {
			t.Fatal(err)
		}
		// The Dataset's syncs, as a schedule or events would run them, for as long as the queries run.
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var syncErr error
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := syncOnce(); err != nil {
					syncErr = err
					return
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
		res := benchDuringRefresh(t, append(append([]string{"--data", filepath.Join(cache, ".pqcache", "generations", "current"),
			"--refresh-source", "s3://lake/tpch/"}, refresh...), s3flags...))
		cancel()
		wg.Wait()
		if syncErr != nil {
			t.Fatalf("sync during the run: %v", syncErr)
		}
		assertDigests(t, res, idle)
		r := res.Refresh
		if r == nil || r.Rewrites == 0 || r.Error != "" {
			t.Fatalf("refresh %+v: want rewrites and no error", r)
		}
		if r.ReadGeneration != 1 || r.FirstGeneration != 1 || r.LastGeneration <= r.FirstGeneration {
			t.Fatalf("generations: read %d, first %d, last %d: want generation 1 read throughout while syncs published newer ones",
				r.ReadGeneration, r.FirstGeneration, r.LastGeneration)
		}
		// Every query read the held generation's tree, whole: the data the run names is that tree.
		if want := filepath.Join(cache, ".pqcache", "generations", strconv.FormatInt(r.ReadGeneration, 10)); res.Data != want {
			t.Fatalf("the queries read %s, want the held generation %s", res.Data, want)
		}
	})
}

// TestRefreshRefusedWithoutWriteAccess: against a store that refuses writes, the refresher stops at
// its first rewrite and says why, so that a run cannot pass for one measured during refreshes.
func TestRefreshRefusedWithoutWriteAccess(t *testing.T) {
	srv := s3test.StartWithArgs(t, "--readonly")
	// versitygw's posix backend: a bucket is a directory, an object a file.
	if err := os.MkdirAll(filepath.Join(srv.Root, "lake", "tpch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(srv.Root, "lake", "tpch", "a.parquet"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := s3store.New(context.Background(), s3store.Config{Bucket: "lake", Client: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	rf := bench.Refresher{Store: store, Keys: []string{"tpch/a.parquet"}, Percent: 100, Every: time.Second, Classify: s3store.Classify}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := rf.Run(ctx)
	if res.Rewrites != 0 || res.Error == "" || res.ErrorReason == "" || ctx.Err() != nil {
		t.Fatalf("refresh on a read-only store: %+v", res)
	}
	t.Logf("refused: %s: %s", res.ErrorReason, res.Error)
}

// benchDuringRefresh runs bench with args and returns its JSON result.
func benchDuringRefresh(t *testing.T, args []string) wire.BenchResult {
	t.Helper()
	out, err := run(t, append([]string{"bench", "--engine", "duckdb", "--threads", "2", "--iterations", "1", "--warmups", "0", "--json", "-"}, args...)...)
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	var res wire.BenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// assertDigests checks that every query succeeded with the idle run's digest.
// assertDigestsOrChangedUnder is assertDigests for queries that read the bucket while it changes: a
// query may fail because a file it was reading changed between two of its requests (DuckDB compares
// each response's ETag with the first; the rewrite keeps the bytes but not the ETag), which is what
// reading a changing bucket straight costs and what a volume's generations spare. Any other failure,
// and any answer other than the idle one, fails the test, and most queries must succeed.
func assertDigestsOrChangedUnder(t *testing.T, res wire.BenchResult, idle map[string]string) {
	t.Helper()
	changed := checkDigests(t, res, idle, func(q wire.QueryResult) bool {
		return strings.Contains(q.StderrTail, "this likely means the remote file has changed")
	})
	if changed > len(res.Queries)/2 {
		t.Errorf("%d of %d queries failed on files that changed under them: want most to succeed", changed, len(res.Queries))
	}
}

// assertDigests fails unless every query succeeded with the idle run's digest.
func assertDigests(t *testing.T, res wire.BenchResult, idle map[string]string) {
	t.Helper()
	checkDigests(t, res, idle, func(wire.QueryResult) bool { return false })
}

// checkDigests fails t for each query that did not succeed with the idle run's digest, except the
// failed ones excused says may fail; it returns how many were excused.
func checkDigests(t *testing.T, res wire.BenchResult, idle map[string]string, excused func(wire.QueryResult) bool) int {
	t.Helper()
	if len(res.Queries) != len(idle) {
		t.Fatalf("%d queries ran, %d idle", len(res.Queries), len(idle))
	}
	n := 0
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded && excused(q) {
			t.Logf("%s: failed on a file that changed under it: %s", q.Name, q.StderrTail)
			n++
			continue
		}
		if q.Status != wire.StatusSucceeded || q.Digest != idle[q.Name] {
			t.Errorf("%s: %s digest %s, want %s as idle (%s)", q.Name, q.Status, q.Digest, idle[q.Name], q.StderrTail)
		}
	}
	return n
}
