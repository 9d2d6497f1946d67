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
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/pqcache/pqcache/bench/canon"
	"github.com/pqcache/pqcache/bench/queries"
	"github.com/pqcache/pqcache/bench/workload"
)

// Layout is how generated tables are laid out as Parquet files.
type Layout string

const (
	// LayoutFlat writes one file per table: DIR/<table>.parquet.
	LayoutFlat Layout = "flat"
	// LayoutPartitioned writes DIR/<table>/batch=<n>/part.parquet, the layout in which refreshing a
	// cache re-fetches one partition rather than a table.
	LayoutPartitioned Layout = "partitioned"
	// LayoutSized writes DIR/<table>/data_<n>.parquet, files of about GenOptions.FileSize bytes each:
	// many small files, or a few large ones, whatever the table's size.
	LayoutSized Layout = "sized"
	// LayoutDelta writes each table as a Delta Lake table DIR/<table>/ with a history: an append per
	// batch, an overwrite and a delete (deltagen.go).
	LayoutDelta Layout = "delta"
)

// GenOptions configure data generation.
type GenOptions struct {
	Scale         float64
	Out           string
	Layout        Layout
	RowsPerGroup  int   // Parquet row group size; 0 means DuckDB's default (122,880)
	FilesPerTable int   // batches per table in the partitioned layout (small tables get one)
	FileSize      int64 // target bytes per file in the sized layout (DuckDB may exceed it slightly)
	// ScanFileSize, when positive, also writes lineitem for the scan and paging workloads: as one
	// file (scan/one/lineitem.parquet, in row groups of workload.PageRows) and as many small files of
	// about this size each (scan/many/lineitem/).
	ScanFileSize int64
	Extension    string
	Threads      int
}

// minGenFileSize is the smallest file size the sized layout and the scan files take.
const minGenFileSize = 64 << 10

// ParseLayout reads a layout's name.
func ParseLayout(name string) (Layout, error) {
	switch l := Layout(name); l {
	case LayoutFlat, LayoutPartitioned, LayoutSized, LayoutDelta:
		return l, nil
	}
	return "", fmt.Errorf("layout %q: want flat, partitioned, sized or delta", name)
}

// Check says what is wrong with the options, as the flags of `pqcache datagen` name them.
func (o GenOptions) Check() error {
	switch {
	case o.Out == "":
		return errors.New("--out is required")
	case (o.FileSize != 0) != (o.Layout == LayoutSized):
		return errors.New("--file-size goes with --layout sized, and --layout sized needs it")
	case o.FileSize != 0 && o.FileSize < minGenFileSize:
		return fmt.Errorf("--file-size %d: want a size of at least 64Ki, e.g. 16Mi", o.FileSize)
	case o.ScanFileSize != 0 && o.ScanFileSize < minGenFileSize:
		return fmt.Errorf("--scan %d: want a size of at least 64Ki, e.g. 1Mi", o.ScanFileSize)
	}
	return nil
}

// Generate writes TPC-H data at opts.Scale as Parquet and returns each table's row count.
func Generate(ctx context.Context, opts GenOptions) (map[string]int64, error) {
	if opts.Scale <= 0 {
		return nil, fmt.Errorf("scale factor %v must be positive", opts.Scale)
	}
	if opts.FilesPerTable < 1 {
		opts.FilesPerTable = 1
	}
	if opts.Layout == LayoutSized && opts.FileSize <= 0 {
		return nil, fmt.Errorf("the sized layout needs a file size")
	}
	db, err := Open(opts.Threads)
	if err != nil {
		return nil, err
	}
	// An in-memory database: the Parquet files are complete when each COPY returns, so closing it
	// loses nothing.
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1) // the generated tables live in this one in-memory database's connection
	if _, err := db.ExecContext(ctx, "LOAD "+quote(opts.Extension)); err != nil {
		return nil, fmt.Errorf("loading the tpch extension %s: %w", opts.Extension, err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("CALL dbgen(sf=%s)", strconv.FormatFloat(opts.Scale, 'f', -1, 64))); err != nil {
		return nil, fmt.Errorf("generating TPC-H data: %w", err)
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	copyOpts := "FORMAT parquet, COMPRESSION zstd"
	if opts.RowsPerGroup > 0 {
		copyOpts += fmt.Sprintf(", ROW_GROUP_SIZE %d", opts.RowsPerGroup)
	}
	counts := map[string]int64{}
	for _, t := range queries.Tables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			return nil, err
		}
		counts[t] = n
		if opts.Layout == LayoutSized {
			// DuckDB starts a new file in the directory when one passes FILE_SIZE_BYTES.
			sized := fmt.Sprintf("%s, FILE_SIZE_BYTES %d", copyOpts, opts.FileSize)
			if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (%s)", t, quote(filepath.Join(opts.Out, t)), sized)); err != nil {
				return nil, fmt.Errorf("writing %s: %w", t, err)
			}
			continue
		}
		batches := opts.FilesPerTable
		if n < 10_000 {
			batches = 1 // nation, region, tiny scales: one file
		}
		if opts.Layout == LayoutDelta {
			if err := writeDeltaTable(ctx, db, opts.Out, t, n, batches, copyOpts); err != nil {
				return nil, fmt.Errorf("writing %s as a Delta table: %w", t, err)
			}
			continue
		}
		if opts.Layout != LayoutPartitioned {
			if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (%s)", t, quote(filepath.Join(opts.Out, t+".parquet")), copyOpts)); err != nil {
				return nil, fmt.Errorf("writing %s: %w", t, err)
			}
			continue
		}
		for b := range batches {
			dir := filepath.Join(opts.Out, t, fmt.Sprintf("batch=%d", b))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			// Contiguous ranges of the generation order, so each batch is like a day's load.
			q := fmt.Sprintf("COPY (SELECT * FROM %s WHERE rowid * %d // %d = %d) TO %s (%s)", t, batches, max(n, 1), b, quote(filepath.Join(dir, "part.parquet")), copyOpts)
			if _, err := db.ExecContext(ctx, q); err != nil {
				return nil, fmt.Errorf("writing %s batch %d: %w", t, b, err)
			}
		}
	}
	if opts.ScanFileSize > 0 {
		if err := writeScanLayouts(ctx, db, opts.Out, opts.ScanFileSize); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// writeScanLayouts writes lineitem as one big file and as many small ones (see GenOptions).
func writeScanLayouts(ctx context.Context, db *sql.DB, out string, fileSize int64) error {
	one := filepath.Join(out, filepath.FromSlash(workload.ScanOnePath))
	many := filepath.Join(out, filepath.FromSlash(workload.ScanManyPath))
	for _, dir := range []string{filepath.Dir(one), filepath.Dir(many)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM lineitem) TO %s (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE %d)", quote(one), workload.PageRows)); err != nil {
		return fmt.Errorf("writing %s: %w", one, err)
	}
	// DuckDB starts a new file in the directory when one passes FILE_SIZE_BYTES.
	if _, err := db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM lineitem) TO %s (FORMAT parquet, COMPRESSION zstd, FILE_SIZE_BYTES %d)", quote(many), fileSize)); err != nil {
		return fmt.Errorf("writing %s: %w", many, err)
	}
	return nil
}

// EachRow calls fn with every row of rows, each value in its canonical form (package canon; a
// DECIMAL keeps its exact digits). fn may keep nothing of fields: the slice is reused.
func EachRow(rows *sql.Rows, fn func(fields []string) error) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	fields := make([]string, len(cols))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			fields[i] = format(v)
		}
		if err := fn(fields); err != nil {
			return err
		}
	}
	return rows.Err()
}

// format is canon.Value with DuckDB's DECIMAL, whose exact digits it keeps.
func format(v any) string {
	if d, ok := v.(duckdb.Decimal); ok {
		return canon.Decimal(d.Value, int(d.Scale))
	}
	return canon.Value(v)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
