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

package duckdb

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/bench/workload"
)

// testExtension builds the tpch extension into the test's temporary directory.
func testExtension(t *testing.T) string {
	t.Helper()
	ext := filepath.Join(t.TempDir(), "tpch.duckdb_extension")
	if err := BuildTPCHExtension(context.Background(), ext); err != nil {
		t.Fatal(err)
	}
	return ext
}

func TestTPCHExtensionLoads(t *testing.T) {
	ctx := context.Background()
	ext := testExtension(t)
	db, err := Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "LOAD '"+ext+"'"); err != nil {
		t.Fatalf("loading the tpch extension: %v", err)
	}
	if _, err := db.ExecContext(ctx, "CALL dbgen(sf=0.01)"); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM lineitem").Scan(&n); err != nil {
		t.Fatal(err)
	}
	t.Logf("lineitem rows at SF 0.01: %d", n)
}

// tpchRowCounts at SF 0.01, per the TPC-H specification's cardinalities (SF × base; nation and region
// fixed; lineitem as dbgen produces it).
var tpchRowCounts = map[string]int64{
	"customer": 1500, "lineitem": 60175, "nation": 25, "orders": 15000,
	"part": 2000, "partsupp": 8000, "region": 5, "supplier": 100,
}

func TestGenerateAndQueryBothLayouts(t *testing.T) {
	ctx := context.Background()
	ext := testExtension(t)
	answers := map[Layout][]string{}
	for _, layout := range []Layout{LayoutFlat, LayoutPartitioned} {
		dir := filepath.Join(t.TempDir(), string(layout))
		counts, err := Generate(ctx, GenOptions{Scale: 0.01, Out: dir, Layout: layout, RowsPerGroup: 4096, FilesPerTable: 3, Extension: ext, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(counts, tpchRowCounts) {
			t.Fatalf("%s row counts %v, want %v", layout, counts, tpchRowCounts)
		}
		if layout == LayoutPartitioned {
			parts, _ := filepath.Glob(filepath.Join(dir, "lineitem", "batch=*", "part.parquet"))
			if len(parts) != 3 {
				t.Fatalf("lineitem has %d partitions, want 3", len(parts))
			}
		}
		db, err := Open(2)
		if err != nil {
			t.Fatal(err)
		}
		if err := createViews(ctx, db, dir); err != nil {
			t.Fatal(err)
		}
		for q := 1; q <= 22; q++ {
			var out strings.Builder
			n, err := runQuery(ctx, db, q, &out)
			if err != nil {
				t.Fatalf("%s: %v", layout, err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if n == 0 || int64(len(lines)) != n {
				t.Fatalf("%s q%d returned %d rows (%d lines)", layout, q, n, len(lines))
			}
			sort.Strings(lines)
			answers[layout] = append(answers[layout], strings.Join(lines, "\n"))
		}
		db.Close()
	}
	for q := range 22 {
		if answers[LayoutFlat][q] != answers[LayoutPartitioned][q] {
			t.Errorf("q%d answers differ between layouts:\nflat:\n%s\npartitioned:\n%s", q+1, answers[LayoutFlat][q], answers[LayoutPartitioned][q])
		}
	}
	// Q1's four groups are a property of TPC-H data at every scale.
	q1 := answers[LayoutFlat][0]
	for _, prefix := range []string{"A|F|", "N|F|", "N|O|", "R|F|"} {
		if !strings.Contains(q1, prefix) {
			t.Errorf("q1 lacks the %s group:\n%s", prefix, q1)
		}
	}
}

// BenchmarkQueriesInOneConnection runs the 22 queries, warm, in one long-lived DuckDB connection: the
// baseline against which the runner's fresh process per query is compared. It needs generated data:
// PQCACHE_BENCH_DATA=DIR go test ./bench/duckdb -run '^$' -bench OneConnection -benchtime 3x
func BenchmarkQueriesInOneConnection(b *testing.B) {
	dir := os.Getenv("PQCACHE_BENCH_DATA")
	if dir == "" {
		b.Skip("set PQCACHE_BENCH_DATA to a directory written by pqcache datagen")
	}
	ctx := context.Background()
	db, err := Open(2)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := createViews(ctx, db, dir); err != nil {
		b.Fatal(err)
	}
	for q := 1; q <= 22; q++ {
		b.Run(fmt.Sprintf("q%02d", q), func(b *testing.B) {
			if _, err := runQuery(ctx, db, q, io.Discard); err != nil { // warm-up, as the runner does
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := runQuery(ctx, db, q, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOverlayReadsFreshPartitionsFromTheStagingDirectory moves one lineitem partition out of the
// "volume" into a "fresh" directory: with the overlay the answers are those of the whole data set;
// without it, they are not.
func TestOverlayReadsFreshPartitionsFromTheStagingDirectory(t *testing.T) {
	ctx := context.Background()
	ext := testExtension(t)
	volume := filepath.Join(t.TempDir(), "volume")
	if _, err := Generate(ctx, GenOptions{Scale: 0.01, Out: volume, Layout: LayoutPartitioned, FilesPerTable: 3, Extension: ext, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	q1 := func(dir, freshDir string, fresh []string) string {
		db, err := Open(2)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		w, err := workload.Builtin(workload.TPCH)
		if err != nil {
			t.Fatal(err)
		}
		qs, _ := w.Select([]string{"q1"})
		src := workload.Source{Data: workload.Dir(dir)}
		if freshDir != "" {
			src.Fresh, src.FreshPrefixes = workload.Dir(freshDir), fresh
		}
		r, err := workload.Resolve(ctx, w, qs, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := CreateTables(ctx, db, r); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if _, err := RunSQL(ctx, db, qs[0].SQL, &out); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	whole := q1(volume, "", nil)

	freshDir := filepath.Join(t.TempDir(), "fresh")
	part := filepath.Join("lineitem", "batch=2", "part.parquet")
	if err := os.MkdirAll(filepath.Dir(filepath.Join(freshDir, part)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(volume, part), filepath.Join(freshDir, part)); err != nil {
		t.Fatal(err)
	}
	if got := q1(volume, freshDir, []string{"lineitem/batch=2/"}); got != whole {
		t.Errorf("with the overlay q1 differs from the whole data:\n%s\nwant\n%s", got, whole)
	}
	if got := q1(volume, "", nil); got == whole {
		t.Error("without the fresh partition q1 should differ: the test would not see a missing overlay")
	}
}

// TestFileSizeAndRowGroupKnobs writes lineitem as many small files (the sized layout) with small row
// groups, and as one file with DuckDB's default groups, and reads the Parquet footers back.
func TestFileSizeAndRowGroupKnobs(t *testing.T) {
	ctx := context.Background()
	ext := testExtension(t)
	db, err := Open(2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// footer returns the files of lineitem, their largest size, and its row groups: count and largest.
	footer := func(dir string) (files int, largest int64, groups, maxRows int64) {
		paths, err := lineitemFiles(dir)
		if err != nil || len(paths) == 0 {
			t.Fatalf("lineitem files in %s: %v %v", dir, paths, err)
		}
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			largest = max(largest, st.Size())
		}
		q := fmt.Sprintf("SELECT count(DISTINCT (file_name, row_group_id)), max(row_group_num_rows) FROM parquet_metadata(%s)", "["+strings.Join(quoteAll(paths), ", ")+"]")
		if err := db.QueryRowContext(ctx, q).Scan(&groups, &maxRows); err != nil {
			t.Fatal(err)
		}
		return len(paths), largest, groups, maxRows
	}

	sized := filepath.Join(t.TempDir(), "sized")
	if _, err := Generate(ctx, GenOptions{Scale: 0.01, Out: sized, Layout: LayoutSized, FileSize: 256 << 10, RowsPerGroup: 2048, Extension: ext, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	files, largest, groups, maxRows := footer(sized)
	if files < 4 || largest > 2*256<<10 || maxRows > 2048 || groups < 60175/2048 {
		t.Errorf("sized: %d files, largest %d bytes, %d row groups of at most %d rows; want ≥ 4 files of about 256 KiB, groups of ≤ 2048 rows", files, largest, groups, maxRows)
	}
	flat := filepath.Join(t.TempDir(), "flat")
	if _, err := Generate(ctx, GenOptions{Scale: 0.01, Out: flat, Layout: LayoutFlat, Extension: ext, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	if files, _, groups, maxRows := footer(flat); files != 1 || groups != 1 || maxRows != 60175 {
		t.Errorf("flat: %d files, %d row groups of at most %d rows; want one file, one group of 60175 (DuckDB's default holds 122,880)", files, groups, maxRows)
	}
	if _, err := Generate(ctx, GenOptions{Scale: 0.01, Out: t.TempDir(), Layout: LayoutSized, Extension: ext}); err == nil {
		t.Error("the sized layout without a file size was accepted")
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = quote(s)
	}
	return out
}

// lineitemFiles lists lineitem's files as the tpch workload finds them.
func lineitemFiles(dir string) ([]string, error) {
	w, err := workload.Builtin(workload.TPCH)
	if err != nil {
		return nil, err
	}
	r, err := workload.Resolve(context.Background(), &workload.Workload{Tables: map[string]workload.Table{"lineitem": w.Tables["lineitem"]}}, nil, workload.Source{Data: workload.Dir(dir)})
	if err != nil {
		return nil, err
	}
	return r.Tables["lineitem"].Files, nil
}
