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
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
)

// lake is a user's workload over the partitioned SF 0.01 data, as a ConfigMap would hold it: Hive
// partitions, file row numbers, and SQL written for DuckDB.
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
  - name: timestamp
    sql: SELECT CAST(l_shipdate AS TIMESTAMP) AS shipped FROM lineitem LIMIT 1
`

// TestUserWorkloadMatchesDuckDB runs a user's SQL workload on Spark and on DuckDB: the same answers,
// including SELECT * over a table with Hive columns and file_row_number, whose column order both
// engines must agree on. The last query's answer, a timestamp, has no canonical form: it fails with
// exit status 1, saying so, after the others (last, so that the session needs no second application).
func TestUserWorkloadMatchesDuckDB(t *testing.T) {
	w, err := workload.Parse([]byte(lake))
	if err != nil {
		t.Fatal(err)
	}
	data := tpch(t, duckdb.LayoutPartitioned)
	res, err := bench.Run(context.Background(), bench.Spec{Engine: engine(t), Data: data, Workload: resolve(t, w, data), Iterations: 1,
		Isolation: wire.IsolationSession, QueryTimeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]wire.QueryResult{}
	for _, q := range res.Queries {
		got[q.Name] = q
	}
	if q := got["timestamp"]; q.Status != wire.StatusFailed || q.ExitCode != 1 || !strings.Contains(q.StderrTail, "a timestamp has no canonical form") {
		t.Errorf("timestamp: %s, exit %d: %q; want Failed, exit 1, saying it has no canonical form", q.Status, q.ExitCode, q.StderrTail)
	}
	names := w.QueryNames()
	names = names[:len(names)-1]
	t.Setenv(duckdbEnv, "1")
	_, want := runAll(t, duckdbEngine(), resolve(t, w, data, names...), data)
	for _, name := range names {
		if got[name].Status != wire.StatusSucceeded {
			t.Errorf("%s: %s: %s", name, got[name].Status, got[name].StderrTail)
		}
		if got[name].Digest == "" || got[name].Digest != want[name].Digest || got[name].Rows == 0 {
			t.Errorf("%s: spark digest %s (%d rows), DuckDB %s (%d rows)", name, got[name].Digest, got[name].Rows, want[name].Digest, want[name].Rows)
		}
	}
	if got["by-batch"].Rows != 3 {
		t.Errorf("by-batch: %d rows, want one per lineitem partition (3)", got["by-batch"].Rows)
	}
}
