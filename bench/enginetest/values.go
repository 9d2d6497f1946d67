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

// The typed table: a column of each type the canonical format spells, written to Parquet, which an
// engine must print as bench/canon does.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/canon"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
)

// TypedDir is the typed table's directory in the partitioned data.
const TypedDir = "typed"

// typedColumns are the typed table's columns, as Go values (nil: NULL): doubles and floats near half
// a cent, extreme and random, with NaN and the infinities; decimals as their exact digits; strings
// with every character the format escapes; the extreme integers; dates at both ends of the range;
// booleans. A column shorter than the table is NULL below its values.
func typedColumns() (f64, f32, dec, s, i, d, b []any) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, v := range []float64{0, math.Copysign(0, -1), 0.125, -0.125, 2.675, 1.005, 1.0 / 3, -0.001, 1e-7, 5e-3, 4.999999e-3, 1.5e21,
		123456789.125, 56586554400.7312, 0.07, 100, -2.5e-5, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		f64 = append(f64, v)
	}
	for range 500 {
		f64 = append(f64, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(24)-6)))
	}
	for _, v := range []float64{0.1, 0.125, 2.675, 1.005, 16777217, 3.4e38, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1)} {
		f32 = append(f32, float32(v))
	}
	for range 300 {
		f32 = append(f32, float32((rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(16)-4))))
	}
	for _, v := range []string{"0", "17", "-17.005", "11604.9298", "116049.2450", "-0.0049", "0.995", "99.9951", "-0.0050"} {
		dec = append(dec, v)
	}
	for range 300 {
		dec = append(dec, strconv.FormatInt(rng.Int64N(2e12)-1e12, 10)+"."+fmt.Sprintf("%04d", rng.IntN(10000)))
	}
	for _, v := range []string{"plain", "a|b", `back\slash`, "line\nbreak\r", "", "ünïcode|"} {
		s = append(s, v)
	}
	for _, v := range []int64{0, -7, 42, math.MinInt64, math.MaxInt64} {
		i = append(i, v)
	}
	for _, v := range [][3]int{{1995, 3, 15}, {1970, 1, 1}, {2000, 2, 29}, {1, 1, 1}, {9999, 12, 31}} {
		d = append(d, time.Date(v[0], time.Month(v[1]), v[2], 0, 0, 0, 0, time.UTC))
	}
	return f64, f32, dec, s, i, d, []any{true, false}
}

// decColumn is the typed table's DECIMAL column, whose values are their digits.
const decColumn = 2

// typedRows are the typed table's rows.
func typedRows() [][]any {
	f64, f32, dec, s, i, d, b := typedColumns()
	cols := [][]any{f64, f32, dec, s, i, d, b}
	n := 0
	for _, c := range cols {
		n = max(n, len(c)+1) // every column has a NULL
	}
	rows := make([][]any, n)
	for r := range rows {
		rows[r] = make([]any, len(cols))
		for c, col := range cols {
			if r < len(col) {
				rows[r][c] = col[r]
			}
		}
	}
	return rows
}

// typedLines are the typed table's rows as bench/canon prints them: what every engine must print.
func typedLines() []string {
	var lines []string
	for _, row := range typedRows() {
		fields := make([]string, len(row))
		for c, v := range row {
			fields[c] = canon.Value(v)
			if dec, ok := v.(string); ok && c == decColumn {
				fields[c] = canon.Round(dec)
			}
		}
		lines = append(lines, canon.Row(fields))
	}
	return lines
}

// writeTyped writes the typed table to dir/values.parquet with DuckDB: DOUBLE, FLOAT, DECIMAL(18,4)
// (exact from its digits), VARCHAR, BIGINT, DATE and BOOLEAN columns.
func writeTyped(ctx context.Context, dir string) (err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	db, err := duckdb.Open(2)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE typed (f64 DOUBLE, f32 FLOAT, dec DECIMAL(18,4), s VARCHAR, i BIGINT, d DATE, b BOOLEAN)"); err != nil {
		return err
	}
	for _, row := range typedRows() {
		for c, v := range row {
			if day, ok := v.(time.Time); ok {
				row[c] = day.Format(time.DateOnly)
			}
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO typed VALUES (?, ?, CAST(? AS DECIMAL(18,4)), ?, ?, CAST(? AS DATE), ?)", row...); err != nil {
			return fmt.Errorf("inserting %v: %w", row, err)
		}
	}
	_, err = db.ExecContext(ctx, "COPY typed TO '"+strings.ReplaceAll(filepath.Join(dir, "values.parquet"), "'", "''")+"' (FORMAT parquet)")
	return err
}

// checkValues fails unless q, the engine's answer to ValuesQuery, is the typed table as bench/canon
// prints it: the digest bench computes of those lines. On a difference it runs the query again to
// name the lines that differ.
func checkValues(t *testing.T, e Engine, q wire.QueryResult, r *workload.Resolved, data string) {
	t.Helper()
	want := typedLines()
	rows, digest := canonDigest(t, want)
	if q.Status == wire.StatusSucceeded && q.Digest == digest && q.Rows == rows {
		return
	}
	t.Errorf("%s: %s, digest %s (%d rows); bench/canon's lines digest %s (%d rows)", ValuesQuery, q.Status, q.Digest, q.Rows, digest, rows)
	got, err := engineRows(t, e.Engine, r, data, ValuesQuery)
	if err != nil {
		t.Fatal(err)
	}
	missing, extra := difference(want, got), difference(got, want)
	t.Errorf("%d lines of bench/canon's not printed by %s, e.g. %q; %d printed not bench/canon's, e.g. %q",
		len(missing), e.Engine.Name(), missing[:min(len(missing), 10)], len(extra), extra[:min(len(extra), 10)])
}

// difference is the lines of a that are not in b.
func difference(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}

// canonDigest is the row count and digest bench computes of lines printed by an engine: here by cat.
func canonDigest(t *testing.T, lines []string) (int64, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "rows.txt")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &workload.Resolved{Workload: "canon", Queries: []workload.Query{{Name: "rows", SQL: "-"}}}
	res := Bench(t, bench.Spec{Engine: bench.CommandEngine{Args: []string{"cat", file}}, Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	if q := res.Queries[0]; q.Status != wire.StatusSucceeded {
		t.Fatalf("digesting bench/canon's lines: %s: %s", q.Status, q.StderrTail)
	}
	return res.Queries[0].Rows, res.Queries[0].Digest
}

// engineRows runs query of r on e directly and returns the lines it printed.
func engineRows(t *testing.T, e bench.Engine, r *workload.Resolved, data, query string) ([]string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "workload.json")
	if err := r.Write(file); err != nil {
		return nil, err
	}
	cmd, err := e.Command(t.Context(), bench.Invocation{Query: query, Queries: []string{query}, Workload: file, Data: data})
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", e.Name(), query, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	return slices.DeleteFunc(lines, func(l string) bool { return l == wire.QueryDelimiter }), nil
}
