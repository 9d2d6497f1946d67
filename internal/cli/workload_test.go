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
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// tpchData writes TPC-H at scale (0.01 unless a test needs more rows), partitioned, with the scan
// layouts, and returns its directory.
func tpchData(t *testing.T, scale string) string {
	t.Helper()
	ext := filepath.Join(t.TempDir(), "tpch.duckdb_extension")
	if err := duckdb.BuildTPCHExtension(context.Background(), ext); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tpch")
	if out, err := run(t, "datagen", "--scale", scale, "--out", dir, "--layout", "partitioned", "--files-per-table", "2", "--scan", "64Ki", "--tpch-extension", ext); err != nil {
		t.Fatalf("datagen: %v\n%s", err, out)
	}
	return dir
}

// TestDuckDBReadsS3 runs the 22 PDS-H queries with the embedded DuckDB over s3:// (httpfs, against a
// real versitygw) and over the same files on disk, and over a mixed input (one partition from the
// bucket): the same answers each time, with no region named anywhere, as for a Dataset without one.
func TestDuckDBReadsS3(t *testing.T) {
	if os.Getenv("PQCACHE_HTTPFS_EXTENSION") == "" {
		t.Fatal("PQCACHE_HTTPFS_EXTENSION is not set: run `make httpfs-extension` (make test sets it)")
	}
	dir := tpchData(t, "0.01")
	srv := s3test.Start(t)
	useTestCredentials(t)
	s3flags := []string{"--endpoint", srv.Endpoint, "--region", s3test.Region, "--path-style"}
	if out, err := run(t, append([]string{"s3", "put", dir, "s3://lake/tpch/"}, s3flags...)...); err != nil {
		t.Fatalf("s3 put: %v\n%s", err, out)
	}
	want := benchDigests(t, "--engine", "duckdb", "--threads", "2", "--data", dir)
	if len(want) != 22 {
		t.Fatalf("%d queries ran on disk", len(want))
	}
	// As a BenchRun's Job reads a Dataset that names no region: no --region, no AWS_REGION.
	t.Setenv("AWS_REGION", "")
	s3flags = []string{"--endpoint", srv.Endpoint, "--path-style"}
	for name, args := range map[string][]string{
		"s3":           {"--data", "s3://lake/tpch"},
		"mixed-direct": {"--data", dir, "--fresh-data", "s3://lake/tpch/", "--fresh-prefix", "lineitem/batch=1/"},
	} {
		got := benchDigests(t, append(append([]string{"--engine", "duckdb", "--threads", "2", "--duckdb-setting", "prefetch_all_parquet_files=true"}, args...), s3flags...)...)
		for q, d := range want {
			if got[q] != d {
				t.Errorf("%s: %s over %s, want %s as on disk", name, q, got[q], d)
			}
		}
	}
}

// userWorkload is a workload as a user keeps it in a ConfigMap: their own names for the tables, one
// a glob, one a folder of Hive partitions, and one query with a Polars form.
const userWorkload = `apiVersion: v1
kind: ConfigMap
metadata: {name: my-queries}
data:
  workload.yaml: |
    name: lake
    tables:
      facts: {path: "lineitem/batch=*/*.parquet"}
      orders: {path: orders, hive: true}
      nation: {path: nation}
    queries:
      - name: revenue-by-flag
        sql: SELECT l_returnflag, sum(l_extendedprice) AS revenue FROM facts GROUP BY l_returnflag ORDER BY 1
      - name: orders-per-batch
        sql: SELECT batch, count(*) AS n FROM orders GROUP BY batch ORDER BY batch
      - name: nations
        sql: SELECT n_name FROM nation WHERE n_regionkey = 1
        polars: |
          def query(t):
              return t["nation"].filter(pl.col("n_regionkey") == 1).select("n_name")
`

// TestUserWorkloadFromAConfigMap runs a user's workload, read from a ConfigMap manifest, with DuckDB
// and with Python Polars (its SQL through Polars' SQL interface, and the Polars form): the same
// answers, query by query. A table the data lacks stops the run before any query, naming it.
func TestUserWorkloadFromAConfigMap(t *testing.T) {
	dir := tpchData(t, "0.01")
	cm := filepath.Join(t.TempDir(), "my-queries.yaml")
	if err := os.WriteFile(cm, []byte(userWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "bench", "--engine", "duckdb", "--workload", cm, "--data", dir, "--iterations", "1", "--warmups", "0", "--threads", "2", "--json", "-")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, out)
	}
	var res wire.BenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	digests := map[string]string{}
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			t.Errorf("%s: %s %s", q.Name, q.Status, q.StderrTail)
		}
		rows[q.Name] = q.Rows
		digests[q.Name] = q.Digest
	}
	// Three return flags; the two batches (the Hive column); the five nations of region 1.
	if res.Workload != "lake" || len(res.Queries) != 3 || rows["revenue-by-flag"] != 3 || rows["orders-per-batch"] != 2 || rows["nations"] != 5 {
		t.Fatalf("workload %q, rows %v", res.Workload, rows)
	}

	// The same manifest on Python Polars: every query, and each one's answer DuckDB's.
	got := benchDigests(t, "--engine", "polars", "--polars-dir", checkoutPolarsDir(t), "--workload", cm, "--data", dir, "--threads", "2")
	if len(got) != len(digests) {
		t.Errorf("Polars ran %d queries %v, DuckDB %d", len(got), got, len(digests))
	}
	for name, want := range digests {
		if want == "" || got[name] != want {
			t.Errorf("%s: polars digest %q, DuckDB %q", name, got[name], want)
		}
	}

	// The same workload over data without its facts: refused before any query, the table named, and
	// the summary a controller reads says why.
	empty := t.TempDir()
	report := filepath.Join(t.TempDir(), "summary")
	_, err = run(t, "bench", "--engine", "duckdb", "--workload", cm, "--data", empty, "--report-file", report)
	if err == nil || !strings.Contains(err.Error(), "facts (lineitem/batch=*/*.parquet)") {
		t.Fatalf("a workload over missing tables: %v", err)
	}
	data, _ := os.ReadFile(report)
	summary, err := wire.DecodeBenchSummary(string(data))
	if err != nil || summary.ErrorReason != wire.ReasonMissingTables || !strings.Contains(summary.Error, "nation (nation)") || len(summary.Queries) != 0 {
		t.Fatalf("summary %+v (%v)", summary, err)
	}
}

// TestBuiltinPagingOnBothEngines runs the built-in paging workload on DuckDB and on Python Polars over
// SF 0.1's lineitem as one file (600,572 rows: pages 0 and 2 full, page 4 partial): each query's
// answer is the same on both engines, and a page by LIMIT/OFFSET is the page by file_row_number.
func TestBuiltinPagingOnBothEngines(t *testing.T) {
	w, err := workload.Builtin(workload.Paging)
	if err != nil {
		t.Fatal(err)
	}
	dir := tpchData(t, "0.1")
	want := benchDigests(t, "--engine", "duckdb", "--workload", workload.Paging, "--data", dir, "--threads", "2")
	got := benchDigests(t, "--engine", "polars", "--polars-dir", checkoutPolarsDir(t), "--workload", workload.Paging, "--data", dir, "--threads", "2")
	if len(want) != len(w.Queries) || len(got) != len(w.Queries) {
		t.Errorf("DuckDB ran %d queries, Polars %d, want %d", len(want), len(got), len(w.Queries))
	}
	for _, name := range w.QueryNames() {
		if d := want[name]; d == "" || strings.HasSuffix(d, "-0") || got[name] != d {
			t.Errorf("%s: polars digest %q, DuckDB %q (want equal, and a page with rows)", name, got[name], d)
		}
	}
	for _, page := range []string{"0", "2", "4"} {
		if off, num := want["offset-page-"+page], want["rownum-page-"+page]; off != num {
			t.Errorf("page %s: by offset %s, by file_row_number %s", page, off, num)
		}
	}
}
