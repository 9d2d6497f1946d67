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

package enginetest

// The data the cases read, the workloads they run, and the runs themselves.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
)

// The SF 0.01 data sets, generated once per test binary under dataRoot.
var (
	dataOnce sync.Once
	dataRoot string
	dataDirs map[duckdb.Layout]string
	dataErr  error
)

// TPCH is the directory of TPC-H at SF 0.01 in layout (flat, or partitioned: three files per large
// table). The partitioned directory also holds the typed table (TypedDir) that Lake reads.
func TPCH(t *testing.T, layout duckdb.Layout) string {
	t.Helper()
	dataOnce.Do(func() { dataErr = generate() })
	if dataErr != nil {
		t.Fatalf("generating SF 0.01: %v", dataErr)
	}
	dir, ok := dataDirs[layout]
	if !ok {
		t.Fatalf("no %s data: flat and partitioned only", layout)
	}
	return dir
}

// generate writes both layouts and the typed table under a new dataRoot, with the tpch extension of
// $PQCACHE_TPCH_EXTENSION (make test: bin/tpch.duckdb_extension), else one linked here.
func generate() error {
	root, err := os.MkdirTemp("", "pqcache-enginetest-")
	if err != nil {
		return err
	}
	dataRoot = root
	ctx := context.Background()
	ext, err := duckdb.TPCHExtension("")
	if err != nil {
		ext = filepath.Join(root, "tpch.duckdb_extension")
		if err := duckdb.BuildTPCHExtension(ctx, ext); err != nil {
			return err
		}
	}
	dirs := map[duckdb.Layout]string{}
	for _, l := range []duckdb.Layout{duckdb.LayoutFlat, duckdb.LayoutPartitioned} {
		dirs[l] = filepath.Join(root, string(l))
		if _, err := duckdb.Generate(ctx, duckdb.GenOptions{Scale: 0.01, Out: dirs[l], Layout: l, FilesPerTable: 3, Extension: ext, Threads: 2}); err != nil {
			return err
		}
	}
	if err := writeTyped(ctx, filepath.Join(dirs[duckdb.LayoutPartitioned], TypedDir)); err != nil {
		return fmt.Errorf("writing the typed table: %w", err)
	}
	dataDirs = dirs
	return nil
}

// TPCHWorkload is the built-in tpch workload: the 22 queries, each with SQL and a Polars form.
func TPCHWorkload(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Builtin(workload.TPCH)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// ValuesQuery is Lake's query of the typed table.
const ValuesQuery = "values"

// lake is a user's workload over the partitioned data, as a ConfigMap would hold it: Hive partitions,
// file row numbers, SQL written for DuckDB, one query with a Polars form too, and the typed table.
const lake = `
name: lake
tables:
  lineitem: {path: lineitem, hive: true, fileRowNumber: true}
  orders: {path: "orders/batch=*/*.parquet", hive: true}
  customer: {path: customer}
  typed: {path: typed}
queries:
  - name: star
    sql: SELECT * FROM lineitem WHERE file_row_number < 3
  - name: by-batch
    sql: |
      SELECT batch, count(*) AS n, sum(l_extendedprice) AS revenue, max(file_row_number) AS last_row
      FROM lineitem GROUP BY batch ORDER BY batch
  - name: join
    sql: |
      SELECT o_orderpriority, count(*) AS lines, avg(l_quantity) AS avg_qty
      FROM orders JOIN lineitem ON o_orderkey = l_orderkey
      WHERE l_shipdate > DATE '1995-03-15'
      GROUP BY o_orderpriority ORDER BY o_orderpriority
  - name: segments
    sql: |
      SELECT c_mktsegment, count(*) AS customers, min(c_acctbal) AS lowest
      FROM customer WHERE c_name LIKE 'Customer#00000%' GROUP BY c_mktsegment
  - name: page
    sql: |
      SELECT l_orderkey, l_linenumber, l_shipdate FROM lineitem
      WHERE batch = 1 AND file_row_number >= 100 AND file_row_number < 110
    polars: |
      def query(t):
          return (
              t["lineitem"]
              .filter((pl.col("batch") == 1) & pl.col("file_row_number").is_between(100, 109))
              .filter(pl.col("l_shipdate") > date(1990, 1, 1) + timedelta(days=1))
              .select("l_orderkey", "l_linenumber", "l_shipdate")
          )
  - name: values
    sql: SELECT f64, f32, dec, s, i, d, b FROM typed
`

// Lake is a user's workload over the partitioned data: SELECT * over a table with Hive columns and
// file_row_number (whose column order every engine must agree on), a group per partition, a join,
// a LIKE, a query with a Polars form beside its SQL, and ValuesQuery over the typed table.
func Lake(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Parse([]byte(lake))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// Resolve resolves workload w (all its queries, or those named) against a local directory, as
// pqcache bench does before any query runs.
func Resolve(t *testing.T, w *workload.Workload, dir string, names ...string) *workload.Resolved {
	t.Helper()
	queries, err := w.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	r, err := workload.Resolve(context.Background(), w, queries, workload.Source{Data: workload.Dir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Without is r without the files whose path contains part ("lineitem/batch=1/").
func Without(r *workload.Resolved, part string) *workload.Resolved {
	out := *r
	out.Tables = map[string]workload.ResolvedTable{}
	for name, table := range r.Tables {
		table.Files = slices.DeleteFunc(slices.Clone(table.Files), func(f string) bool { return strings.Contains(f, "/"+part) })
		out.Tables[name] = table
	}
	return &out
}

// Bench runs spec and returns its result; a query that failed is a result, only a failed run fails
// the test.
func Bench(t *testing.T, spec bench.Spec) *wire.BenchResult {
	t.Helper()
	res, err := bench.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// RunWorkload runs spec and returns the run and its results by query name, failing the test for each
// query that did not succeed.
func RunWorkload(t *testing.T, spec bench.Spec) (*wire.BenchResult, map[string]wire.QueryResult) {
	t.Helper()
	res := Bench(t, spec)
	out := map[string]wire.QueryResult{}
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			t.Errorf("%s %s over %s: %s (exit %d): %s", spec.Engine.Name(), q.Name, spec.Data, q.Status, q.ExitCode, q.StderrTail)
		}
		out[q.Name] = q
	}
	return res, out
}

// Answers are DuckDB's answers to r over data: the reference every engine's are compared with.
func Answers(t *testing.T, r *workload.Resolved, data string) map[string]wire.QueryResult {
	t.Helper()
	_, out := RunWorkload(t, bench.Spec{Engine: DuckDB(), Data: data, Workload: r, Iterations: 1, QueryTimeout: defaultTimeout})
	return out
}

// DuckDB's answers to the 22 TPC-H queries over the flat data, computed once per test binary.
var (
	tpchMu      sync.Mutex
	tpchAnswers map[string]wire.QueryResult
)

// TPCHAnswers are DuckDB's answers to the 22 TPC-H queries (answers do not depend on the layout).
func TPCHAnswers(t *testing.T) map[string]wire.QueryResult {
	t.Helper()
	tpchMu.Lock()
	defer tpchMu.Unlock()
	if tpchAnswers == nil {
		data := TPCH(t, duckdb.LayoutFlat)
		answers := Answers(t, Resolve(t, TPCHWorkload(t), data), data)
		if len(answers) != 22 || slices.ContainsFunc(slices.Collect(maps.Values(answers)), func(q wire.QueryResult) bool { return q.Status != wire.StatusSucceeded }) {
			t.Fatal("DuckDB did not answer every TPC-H query")
		}
		tpchAnswers = answers
	}
	return tpchAnswers
}

// AssertAnswers fails for each of names whose digest or row count in got is not want's.
func AssertAnswers(t *testing.T, what string, got, want map[string]wire.QueryResult, names []string) {
	t.Helper()
	for _, q := range names {
		if got[q].Digest == "" || got[q].Digest != want[q].Digest || got[q].Rows != want[q].Rows {
			t.Errorf("%s %s: digest %s (%d rows), DuckDB %s (%d rows)", q, what, got[q].Digest, got[q].Rows, want[q].Digest, want[q].Rows)
		}
	}
}

// AssertTPCHAnswers fails for each TPC-H query of names whose answer in got is not DuckDB's.
func AssertTPCHAnswers(t *testing.T, what string, got map[string]wire.QueryResult, names []string) {
	t.Helper()
	AssertAnswers(t, what, got, TPCHAnswers(t), names)
}
