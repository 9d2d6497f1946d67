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

package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/bench/queries"
)

// The built-in workloads.
const (
	// TPCH is the 22 PDS-H queries over the eight TPC-H tables, q1 to q22 (`pqcache datagen`).
	TPCH = "tpch"
	// Scan is projection, selective filters and counts over lineitem as one big file and as many
	// small files (`pqcache datagen --layout scan`): what a layout costs each engine.
	Scan = "scan"
	// Paging reads fixed-size pages of one large file, by LIMIT/OFFSET and by row-number ranges
	// aligned to its row groups (`pqcache datagen --layout scan`).
	Paging = "paging"
)

// Builtins names the built-in workloads.
var Builtins = []string{TPCH, Scan, Paging}

// Builtin returns a built-in workload.
func Builtin(name string) (*Workload, error) {
	switch name {
	case TPCH:
		return tpch()
	case Scan:
		return scan(), nil
	case Paging:
		return paging(), nil
	}
	return nil, fmt.Errorf("no built-in workload %q: the built-ins are %s", name, strings.Join(Builtins, ", "))
}

// tpch is the 22 PDS-H queries, each with its Polars form.
func tpch() (*Workload, error) {
	w := &Workload{Name: TPCH, Tables: map[string]Table{}}
	for _, t := range queries.Tables {
		w.Tables[t] = Table{Path: t}
	}
	for n := 1; n <= queries.Count; n++ {
		sql, err := queries.SQL(n)
		if err != nil {
			return nil, err
		}
		pl, err := queries.Polars(n)
		if err != nil {
			return nil, err
		}
		w.Queries = append(w.Queries, Query{Name: TPCHQuery(n), SQL: sql, Polars: pl})
	}
	return w, nil
}

// TPCHQuery names PDS-H query n: q1 to q22.
func TPCHQuery(n int) string { return "q" + strconv.Itoa(n) }

// Where `pqcache datagen --layout scan` writes lineitem as one file and as many small ones.
const (
	ScanOnePath  = "scan/one/lineitem.parquet"
	ScanManyPath = "scan/many/lineitem"
	// PageRows is a page of the paging workload: DuckDB's default row group, so that pages by row
	// number align to the row groups `pqcache datagen` writes.
	PageRows = 122880
)

func scan() *Workload {
	w := &Workload{Name: Scan, Tables: map[string]Table{
		"lineitem_one":  {Path: ScanOnePath},
		"lineitem_many": {Path: ScanManyPath},
	}}
	for _, layout := range []string{"one", "many"} {
		t := "lineitem_" + layout
		w.Queries = append(w.Queries,
			Query{Name: "count-" + layout, SQL: "SELECT count(*) AS n FROM " + t,
				Polars: fmt.Sprintf("def query(t):\n    return t[%q].select(pl.len().alias(\"n\"))\n", t)},
			Query{Name: "filter-" + layout,
				SQL: "SELECT count(*) AS n, sum(l_extendedprice) AS revenue FROM " + t + "\n" +
					"WHERE l_shipdate >= DATE '1996-01-01' AND l_shipdate < DATE '1996-02-01'\n" +
					"  AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
				Polars: fmt.Sprintf(`def query(t):
    return (
        t[%q]
        .filter(
            (pl.col("l_shipdate") >= date(1996, 1, 1))
            & (pl.col("l_shipdate") < date(1996, 2, 1))
            & pl.col("l_discount").is_between(0.05, 0.07)
            & (pl.col("l_quantity") < 24)
        )
        .select(pl.len().alias("n"), pl.col("l_extendedprice").sum().alias("revenue"))
    )
`, t)},
			Query{Name: "project-" + layout,
				SQL: "SELECT l_orderkey, l_partkey, l_suppkey, l_extendedprice FROM " + t + "\n" +
					"WHERE l_returnflag = 'R' AND l_shipmode = 'AIR' AND l_quantity > 48",
				Polars: fmt.Sprintf(`def query(t):
    return (
        t[%q]
        .filter((pl.col("l_returnflag") == "R") & (pl.col("l_shipmode") == "AIR") & (pl.col("l_quantity") > 48))
        .select("l_orderkey", "l_partkey", "l_suppkey", "l_extendedprice")
    )
`, t)},
		)
	}
	return w
}

func paging() *Workload {
	w := &Workload{Name: Paging, Tables: map[string]Table{"lineitem": {Path: ScanOnePath, FileRowNumber: true}}}
	for _, page := range []int{0, 2, 4} {
		from, to := page*PageRows, (page+1)*PageRows
		cols := "l_orderkey, l_linenumber, l_extendedprice, l_shipdate"
		w.Queries = append(w.Queries,
			Query{Name: fmt.Sprintf("offset-page-%d", page),
				SQL: fmt.Sprintf("SELECT %s FROM lineitem LIMIT %d OFFSET %d", cols, PageRows, from),
				Polars: fmt.Sprintf("def query(t):\n    return t[\"lineitem\"].slice(%d, %d).select(%s)\n",
					from, PageRows, quoteCols(cols))},
			Query{Name: fmt.Sprintf("rownum-page-%d", page),
				SQL: fmt.Sprintf("SELECT %s FROM lineitem WHERE file_row_number >= %d AND file_row_number < %d", cols, from, to),
				Polars: fmt.Sprintf("def query(t):\n    return t[\"lineitem\"].filter((pl.col(\"file_row_number\") >= %d) & (pl.col(\"file_row_number\") < %d)).select(%s)\n",
					from, to, quoteCols(cols))},
		)
	}
	return w
}

// quoteCols turns "a, b" into `"a", "b"` for Python.
func quoteCols(cols string) string {
	parts := strings.Split(cols, ", ")
	for i, p := range parts {
		parts[i] = strconv.Quote(p)
	}
	return strings.Join(parts, ", ")
}
