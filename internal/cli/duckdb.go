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
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/pqcache/pqcache/bench/duckdb"
)

func duckdbVersion() (string, bool) { return duckdb.Version, true }

func addDuckDBCommands(root *cobra.Command) {
	root.AddCommand(newBenchQueryCommand(), newDatagenCommand(), newQueryCommand())
}

const memoryLimitUsage = "DuckDB's memory_limit: auto (a share of the container's cgroup memory limit, else DuckDB's default), none (DuckDB's default: 80% of the machine's RAM), or a size such as 2Gi."

// newBenchQueryCommand is what one DuckDB query process runs: open DuckDB, map the workload's tables,
// report ready, run the queries in turn (each timed, its rows printed after it), as the timing
// protocol says (docs/bench.md). Hidden: bench starts it.
func newBenchQueryCommand() *cobra.Command {
	var (
		file, memoryLimit, httpfs string
		queries, settings         []string
		threads                   int
	)
	cmd := &cobra.Command{
		Use:    "bench-query --workload FILE --queries NAME[,NAME...]",
		Short:  "Run queries of a resolved workload with the embedded DuckDB and print their rows (used by bench)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(queries) == 0 {
				return errors.New("--queries is required")
			}
			limit, err := parseMemoryLimit(memoryLimit)
			if err != nil {
				return err
			}
			return duckdb.QueryProcess{Workload: file, Queries: queries, Threads: threads, MemoryLimit: limit, Settings: settings,
				HTTPFS: httpfs}.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&file, "workload", "", "The resolved workload (JSON), as bench writes it.")
	cmd.Flags().StringSliceVar(&queries, "queries", nil, "The queries to run in turn, by name (comma-separated).")
	cmd.Flags().StringSliceVar(&queries, "query", nil, "Same as --queries.")
	cmd.Flags().IntVar(&threads, "threads", 0, "DuckDB threads (0: one per CPU the process may use, cgroup quota included).")
	cmd.Flags().StringVar(&memoryLimit, "memory-limit", "auto", memoryLimitUsage)
	cmd.Flags().StringArrayVar(&settings, "setting", nil, "A DuckDB setting, NAME=VALUE (repeatable).")
	cmd.Flags().StringVar(&httpfs, "httpfs-extension", "", "The httpfs extension, for s3:// files (make httpfs-extension installs it); default: $"+duckdb.EnvHTTPFS+", or beside the binary.")
	return cmd
}

func newDatagenCommand() *cobra.Command {
	var (
		opts                       duckdb.GenOptions
		layout, fileSize, scanSize string
	)
	cmd := &cobra.Command{
		Use:   "datagen --scale 1 --out DIR",
		Short: "Generate TPC-H data as Parquet (flat or partitioned), offline, with DuckDB's dbgen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Layout, err = duckdb.ParseLayout(layout); err != nil {
				return fmt.Errorf("--%w", err)
			}
			if opts.FileSize, err = quantity("--file-size", fileSize); err != nil {
				return err
			}
			if opts.ScanFileSize, err = quantity("--scan", scanSize); err != nil {
				return err
			}
			if err := opts.Check(); err != nil {
				return err
			}
			ext, err := duckdb.TPCHExtension(opts.Extension)
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
	f.StringVar(&layout, "layout", "flat", "flat (one file per table: <table>.parquet), partitioned (<table>/batch=N/part.parquet), sized (<table>/data_N.parquet, files of --file-size), or delta (each table a Delta Lake table <table>/ with a history: an append per --files-per-table batch, an overwrite and a delete).")
	f.IntVar(&opts.RowsPerGroup, "rows-per-group", 0, "Parquet row group size (DuckDB rounds it up to a multiple of 2048); 0 keeps DuckDB's default.")
	f.IntVar(&opts.FilesPerTable, "files-per-table", 8, "Partitions per table in the partitioned layout (tables under 10,000 rows get one).")
	f.StringVar(&fileSize, "file-size", "", "Target size of each file in the sized layout, e.g. 4Mi for many small files or 1Gi for few large ones.")
	f.StringVar(&scanSize, "scan", "", "Also write lineitem for the scan and paging workloads, as one file (scan/one/) and as many small files of this size each (scan/many/), e.g. 1Mi.")
	f.StringVar(&opts.Extension, "tpch-extension", "", "The tpch extension (make tpch-extension builds it); default: $PQCACHE_TPCH_EXTENSION, or beside the binary.")
	f.IntVar(&opts.Threads, "threads", 0, "DuckDB threads (0: default).")
	return cmd
}

// parseMemoryLimit reads --memory-limit: auto (duckdb.MemoryLimitAuto), none (0: DuckDB's default),
// or a size of at least 1Mi.
func parseMemoryLimit(memoryLimit string) (int64, error) {
	switch memoryLimit {
	case "auto", "":
		return duckdb.MemoryLimitAuto, nil
	case "none":
		return 0, nil
	}
	q, err := resource.ParseQuantity(memoryLimit)
	if err != nil || q.Value() < 1<<20 {
		return 0, fmt.Errorf("--memory-limit %q: want auto, none or a size of at least 1Mi", memoryLimit)
	}
	return q.Value(), nil
}

// quantity reads a size flag in Kubernetes' notation (16Mi); "" is 0.
func quantity(flag, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a size such as 16Mi", flag, v)
	}
	return q.Value(), nil
}
