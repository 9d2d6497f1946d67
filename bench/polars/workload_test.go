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

package polars

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
)

// lake is a user's workload over the partitioned SF 0.01 data, as a ConfigMap would hold it: Hive
// partitions, file row numbers, SQL that Polars runs through its SQL interface, and one Polars form.
const lake = `
name: lake
tables:
  lineitem: {path: lineitem, hive: true, fileRowNumber: true}
  orders: {path: "orders/batch=*/*.parquet", hive: true}
  customer: {path: customer}
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
`

// TestUserWorkloadMatchesDuckDB runs the user's workload on Polars (its SQL through Polars' SQL
// interface, and the Polars form) and on DuckDB: the same answers, including SELECT * over a table
// with Hive columns and file_row_number, whose column order both engines must agree on.
func TestUserWorkloadMatchesDuckDB(t *testing.T) {
	w, err := workload.Parse([]byte(lake))
	if err != nil {
		t.Fatal(err)
	}
	data := tpch(t, duckdb.LayoutPartitioned)
	r := resolve(t, w, data)
	got := run(t, engine(t), r, data)
	t.Setenv(duckdbEnv, "1")
	want := run(t, duckdbEngine(), r, data)
	for _, name := range w.QueryNames() {
		if got[name].Digest == "" || got[name].Digest != want[name].Digest || got[name].Rows == 0 {
			t.Errorf("%s: polars digest %s (%d rows), DuckDB %s (%d rows)", name, got[name].Digest, got[name].Rows, want[name].Digest, want[name].Rows)
		}
	}
	if got["by-batch"].Rows != 3 {
		t.Errorf("by-batch: %d rows, want one per lineitem partition (3)", got["by-batch"].Rows)
	}
}

// TestFailingQueries: a query that cannot run or whose answer has no canonical form fails with exit
// status 1 and says why; bench records it and goes on to the next query.
func TestFailingQueries(t *testing.T) {
	w, err := workload.Parse([]byte(`
name: broken
tables:
  lineitem: {path: lineitem}
queries:
  - name: datetime
    polars: |
      def query(t):
          return t["lineitem"].select(pl.col("l_shipdate").cast(pl.Datetime)).head(1)
  - name: python-error
    polars: |
      def query(t):
          return t["lineitem"].select(no_such_name)
  - name: not-lazy
    polars: |
      def query(t):
          return t["lineitem"].head(1).collect()
  - name: sql-error
    sql: SELECT no_such_column FROM lineitem
  - name: fine
    sql: SELECT count(*) AS n FROM lineitem
`))
	if err != nil {
		t.Fatal(err)
	}
	data := tpch(t, duckdb.LayoutFlat)
	res, err := bench.Run(context.Background(), bench.Spec{Engine: engine(t), Data: data, Workload: resolve(t, w, data), Iterations: 1, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"datetime":     "a Datetime has no canonical form",
		"python-error": "NameError",
		"not-lazy":     "want a polars.LazyFrame",
		"sql-error":    "no_such_column",
	}
	for _, q := range res.Queries {
		if q.Name == "fine" {
			if q.Status != wire.StatusSucceeded || q.Rows != 1 {
				t.Errorf("fine: %s, %d rows: %s", q.Status, q.Rows, q.StderrTail)
			}
			continue
		}
		if q.Status != wire.StatusFailed || q.ExitCode != 1 || !strings.Contains(q.StderrTail, want[q.Name]) {
			t.Errorf("%s: %s, exit %d: %q; want Failed, exit 1, saying %q", q.Name, q.Status, q.ExitCode, q.StderrTail, want[q.Name])
		}
	}
}

// TestUsageErrors: run.py's own mistakes of invocation exit with status 2, before any query runs.
func TestUsageErrors(t *testing.T) {
	e := engine(t)
	data := tpch(t, duckdb.LayoutFlat)
	file := filepath.Join(t.TempDir(), "workload.json")
	if err := resolve(t, tpchWorkload(t), data, "q6").Write(file); err != nil {
		t.Fatal(err)
	}
	runPy := filepath.Join(e.Dir, "run.py")
	for name, args := range map[string][]string{
		"an unknown query":   {runPy, "--workload", file, "--query", "q99"},
		"an unknown engine":  {runPy, "--workload", file, "--query", "q6", "--engine", "gpu"},
		"no workload file":   {runPy, "--workload", filepath.Join(t.TempDir(), "missing.json"), "--query", "q6"},
		"a missing argument": {runPy, "--workload", file},
	} {
		out, err := exec.CommandContext(t.Context(), e.Python, args...).CombinedOutput()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit status 2: %s", name, err, out)
		}
	}
	// The same file and query run.
	if out, err := exec.CommandContext(t.Context(), e.Python, runPy, "--workload", file, "--query", "q6").Output(); err != nil || !strings.HasPrefix(string(out), "1193053.") {
		t.Errorf("q6: %v: %q", err, out)
	}
}
