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

package spark

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// putTree puts every Parquet file under dir into bucket of srv, under prefix.
func putTree(t *testing.T, srv *s3test.Server, bucket, prefix, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		srv.PutObject(t, bucket, prefix+filepath.ToSlash(rel), body)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// inBucket is r with its files under dir read from url instead (s3://bucket/prefix, where putTree
// put them): all of them, or those under the given prefixes (relative to dir), as a mixed-direct
// input reads its fresh partitions from the bucket and the rest from the volume.
func inBucket(r *workload.Resolved, dir, url string, s3 wire.S3Access, prefixes ...string) *workload.Resolved {
	out := *r
	out.S3 = &s3
	out.Tables = map[string]workload.ResolvedTable{}
	for name, table := range r.Tables {
		files := make([]string, len(table.Files))
		for i, f := range table.Files {
			rel, _ := filepath.Rel(dir, f)
			rel = filepath.ToSlash(rel)
			files[i] = f
			if len(prefixes) == 0 || slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(rel, p) }) {
				files[i] = strings.TrimSuffix(url, "/") + "/" + rel
			}
		}
		table.Files = files
		out.Tables[name] = table
	}
	return &out
}

// TestReadsFromS3 uploads SF 0.01 (partitioned: three files per large table) to a real versitygw on
// 127.0.0.1 and runs the 22 queries over s3a:// in one Spark application, with the endpoint, path
// style and credentials a BenchRun's Job gives: DuckDB's answers, and the bytes crossed the loopback
// (the queries' network reads, as the runner counts them standalone). The lineitem table is
// mixed-direct (one partition from the volume, the rest from the bucket), so one table reads both.
func TestReadsFromS3(t *testing.T) {
	e := engine(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	partitioned := tpch(t, duckdb.LayoutPartitioned)
	putTree(t, srv, "tpch", "sf0.01/", partitioned)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_CA_BUNDLE", "")
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	w := tpchWorkload(t)
	local := resolve(t, w, partitioned)
	var fresh []string
	for name := range local.Tables {
		if name != "lineitem" {
			fresh = append(fresh, name+"/")
		}
	}
	fresh = append(fresh, "lineitem/batch=1/", "lineitem/batch=2/")
	r := inBucket(local, partitioned, "s3://tpch/sf0.01", access, fresh...)
	if files := r.Tables["lineitem"].Files; !slices.ContainsFunc(files, func(f string) bool { return !strings.HasPrefix(f, "s3://") }) {
		t.Fatalf("the mixed lineitem table reads nothing from the volume: %v", files)
	}

	start := time.Now()
	// Standalone, the bucket is on 127.0.0.1: its bytes cross the loopback (with Py4J's between
	// Python and the JVM, which in a pod stay on lo, outside the count).
	onLoopback := func(s *bench.Spec) { s.NetInterfaces = netdev.Interfaces{Only: []string{netdev.Loopback}} }
	res, got := runAll(t, e, r, "s3://tpch/sf0.01", onLoopback)
	t.Logf("Spark local[2], 22 queries over s3a:// in one application: %s", time.Since(start).Round(time.Second))
	assertSameAnswers(t, "spark over s3a://", got, w.QueryNames())
	t.Logf("network reads over the loopback: %d bytes", res.NetworkReadBytes)
	if res.NetworkReadBytes == 0 {
		t.Error("no network reads counted over s3a://: the JVM's reads were not seen")
	}
}
