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
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/cache/table/delta"
)

// TestGenerateDeltaTablesWithAHistory: the delta layout writes every table as a Delta table whose log
// (read by cache/table/delta, as a sync reads it) has an append per batch, an overwrite that keeps
// every row and a delete of every 100th row of the last batch; the files each version names hold
// its rows, and the folder holds the files of every version.
func TestGenerateDeltaTablesWithAHistory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	counts, err := Generate(ctx, GenOptions{Scale: 0.01, Out: dir, Layout: LayoutDelta, FilesPerTable: 4, Extension: testExtension(t), Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "lineitem")
	log := deltaLog(t, root)
	fetch := func(_ context.Context, key string) (io.ReadCloser, error) { return os.Open(filepath.Join(root, key)) }
	rowsAt := func(v int64) (int64, int) {
		snap, err := delta.At(ctx, log, v, fetch, delta.Limits{})
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		var files []string
		for _, f := range snap.Files {
			files = append(files, quote(filepath.Join(root, f.Key)))
		}
		db, err := Open(1)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM read_parquet(["+strings.Join(files, ", ")+"])").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n, len(files)
	}
	latest, err := delta.Latest(ctx, log, fetch, delta.Limits{})
	if err != nil || latest.Version != 5 {
		t.Fatalf("newest version %d, %v; want 5 (4 appends, an overwrite, a delete)", latest.Version, err)
	}
	if n, files := rowsAt(0); files != 1 || n >= counts["lineitem"] {
		t.Errorf("version 0: %d rows in %d files, want the first batch's", n, files)
	}
	if n, files := rowsAt(4); files != 4 || n != counts["lineitem"] {
		t.Errorf("version 4 (after the overwrite): %d rows in %d files, want all %d in 4", n, files, counts["lineitem"])
	}
	n, files := rowsAt(5)
	if files != 4 || n >= counts["lineitem"] || n < counts["lineitem"]*99/100 {
		t.Errorf("version 5 (after the delete): %d rows in %d files, want about 1%% of a batch fewer than %d", n, files, counts["lineitem"])
	}
	parquet, _ := filepath.Glob(filepath.Join(root, "*.parquet"))
	if len(parquet) != 6 {
		t.Errorf("lineitem's folder holds %d Parquet files, want 6: 4 batches and the 2 rewrites", len(parquet))
	}
	if region := deltaLog(t, filepath.Join(dir, "region")); len(region) != 1 {
		t.Errorf("region (one batch) has %d commits, want 1", len(region))
	}
}

// deltaLog lists a local table's _delta_log as a sync lists it.
func deltaLog(t *testing.T, root string) []delta.LogObject {
	t.Helper()
	var log []delta.LogObject
	err := filepath.WalkDir(filepath.Join(root, "_delta_log"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		log = append(log, delta.LogObject{Key: filepath.ToSlash(rel), Size: fi.Size()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return log
}
