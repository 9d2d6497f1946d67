//go:build cgo

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

// The commands and engine that need the embedded DuckDB (cgo). A pqcache built with CGO_ENABLED=0,
// the static runner injected into other engines' images, has the rest.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/memory"
)

func duckdbVersion() (string, bool) { return duckdb.Version, true }

func addDuckDBCommands(root *cobra.Command) {
	root.AddCommand(newBenchQueryCommand(), newDatagenCommand(), newTestdataCommand(), newReadCheckCommand(), newQueryCommand())
}

// newBenchQueryCommand is what one DuckDB query process runs: open DuckDB, map the data, run the query,
// print the rows. Hidden: bench starts it.
const memoryLimitUsage = "DuckDB's memory_limit: auto (a share of the container's cgroup memory limit, else DuckDB's default), none (DuckDB's default: 80% of the machine's RAM), or a size such as 2Gi."

func newBenchQueryCommand() *cobra.Command {
	var (
		data, freshData, memoryLimit string
		freshPrefixes                []string
		query, threads               int
	)
	cmd := &cobra.Command{
		Use:    "bench-query --query N --data DIR",
		Short:  "Run one PDS-H query with the embedded DuckDB and print its rows (used by bench)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := duckdbConfig(threads, memoryLimit)
			if err != nil {
				return err
			}
			db, err := duckdb.OpenConfig(cfg)
			if err != nil {
				return err
			}
			defer os.RemoveAll(cfg.TempDir)
			defer db.Close()
			db.SetMaxOpenConns(1)
			if err := duckdb.CreateOverlayViews(cmd.Context(), db, data, freshData, freshPrefixes); err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			if _, err := duckdb.RunQuery(cmd.Context(), db, query, w); err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "Data directory.")
	cmd.Flags().IntVar(&query, "query", 0, "Query number, 1-22.")
	cmd.Flags().IntVar(&threads, "threads", 0, "DuckDB threads (0: one per CPU the process may use, cgroup quota included).")
	cmd.Flags().StringVar(&memoryLimit, "memory-limit", "auto", memoryLimitUsage)
	cmd.Flags().StringVar(&freshData, "fresh-data", "", "Directory of freshly staged files.")
	cmd.Flags().StringSliceVar(&freshPrefixes, "fresh-prefix", nil, "Paths read from --fresh-data instead of --data.")
	return cmd
}

func newDatagenCommand() *cobra.Command {
	var (
		opts             duckdb.GenOptions
		layout, fileSize string
	)
	cmd := &cobra.Command{
		Use:   "datagen --scale 1 --out DIR",
		Short: "Generate TPC-H data as Parquet (flat or partitioned), offline, with DuckDB's dbgen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Out == "" {
				return errors.New("--out is required")
			}
			switch duckdb.Layout(layout) {
			case duckdb.LayoutFlat, duckdb.LayoutPartitioned, duckdb.LayoutSized:
				opts.Layout = duckdb.Layout(layout)
			default:
				return fmt.Errorf("--layout %q: want flat, partitioned or sized", layout)
			}
			if (fileSize != "") != (opts.Layout == duckdb.LayoutSized) {
				return errors.New("--file-size goes with --layout sized, and --layout sized needs it")
			}
			if fileSize != "" {
				q, err := resource.ParseQuantity(fileSize)
				if err != nil || q.Value() < 64<<10 {
					return fmt.Errorf("--file-size %q: want a size of at least 64Ki, e.g. 16Mi", fileSize)
				}
				opts.FileSize = q.Value()
			}
			ext, err := tpchExtension(opts.Extension)
			if err != nil {
				return err
			}
			opts.Extension = ext
			start := time.Now()
			counts, err := duckdb.Generate(cmd.Context(), opts)
			if err != nil {
				return err
			}
			for _, t := range []string{"customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"} {
				fmt.Fprintf(cmd.OutOrStdout(), "%-9s %12d rows\n", t, counts[t])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "TPC-H SF %g, %s layout, in %s: %s\n", opts.Scale, opts.Layout, time.Since(start).Round(time.Millisecond), opts.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&opts.Scale, "scale", 1, "TPC-H scale factor (1 is about 1 GB in memory, ~300 MB of Parquet).")
	f.StringVar(&opts.Out, "out", "", "Directory to write the Parquet files into.")
	f.StringVar(&layout, "layout", "flat", "flat (one file per table: <table>.parquet), partitioned (<table>/batch=N/part.parquet) or sized (<table>/data_N.parquet, files of --file-size).")
	f.IntVar(&opts.RowsPerGroup, "rows-per-group", 0, "Parquet row group size (DuckDB rounds it up to a multiple of 2048); 0 keeps DuckDB's default.")
	f.IntVar(&opts.FilesPerTable, "files-per-table", 8, "Partitions per table in the partitioned layout (tables under 10,000 rows get one).")
	f.StringVar(&fileSize, "file-size", "", "Target size of each file in the sized layout, e.g. 4Mi for many small files or 1Gi for few large ones.")
	f.StringVar(&opts.Extension, "tpch-extension", "", "The tpch extension (make tpch-extension builds it); default: $PQCACHE_TPCH_EXTENSION, or beside the binary.")
	f.IntVar(&opts.Threads, "threads", 0, "DuckDB threads (0: default).")
	return cmd
}

// duckdbConfig is the DuckDB of one query process: threads (0: GOMAXPROCS, which counts the cgroup's
// CPU quota where DuckDB would count the host's CPUs), the memory limit, and a private spill directory
// under $TMPDIR (the working directory of a container is often read-only).
func duckdbConfig(threads int, memoryLimit string) (duckdb.Config, error) {
	cfg := duckdb.Config{Threads: threads}
	if cfg.Threads <= 0 {
		cfg.Threads = runtime.GOMAXPROCS(0)
	}
	switch memoryLimit {
	case "auto", "":
		if limit, _, ok := memory.Limit(); ok {
			cfg.MemoryLimit = duckdb.MemoryLimitFor(limit)
		}
	case "none":
	default:
		q, err := resource.ParseQuantity(memoryLimit)
		if err != nil || q.Value() < 1<<20 {
			return cfg, fmt.Errorf("--memory-limit %q: want auto, none or a size of at least 1Mi", memoryLimit)
		}
		cfg.MemoryLimit = q.Value()
	}
	dir, err := os.MkdirTemp("", "pqcache-duckdb-")
	if err != nil {
		return cfg, fmt.Errorf("creating DuckDB's spill directory: %w", err)
	}
	cfg.TempDir = dir
	return cfg, nil
}

// tpchExtension finds the loadable tpch extension: the flag, $PQCACHE_TPCH_EXTENSION, or the places
// the image and `make build` put it beside the binary.
func tpchExtension(flag string) (string, error) {
	candidates := []string{flag, os.Getenv("PQCACHE_TPCH_EXTENSION")}
	if self, err := os.Executable(); err == nil {
		dir := filepath.Dir(self)
		candidates = append(candidates, filepath.Join(dir, "tpch.duckdb_extension"), filepath.Join(dir, "..", "lib", "pqcache", "tpch.duckdb_extension"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
		if c == flag {
			return "", fmt.Errorf("--tpch-extension %s: not found", c)
		}
	}
	return "", errors.New("no tpch extension found: run `make tpch-extension`, or pass --tpch-extension")
}
