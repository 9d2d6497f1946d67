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

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/cache/generations"
)

func newQueryCommand() *cobra.Command {
	var (
		data, output string
		threads      int
	)
	cmd := &cobra.Command{
		Use:   "query [--data DIR] SQL",
		Short: "Run one SQL query with the embedded DuckDB, {data} standing for a data directory",
		Long: `query runs SQL with pqcache's DuckDB and prints the rows, tab-separated, under a header
(values as the benchmarks print them: decimals and floats to 2 places, dates as ISO, NULL as NULL).
{data} in SQL is replaced by --data; when --data is a generation of a Dataset's volume
(/data/.pqcache/generations/current, or .../N), that generation is held while the query runs, so
the query reads one consistent data set whatever refreshes run meanwhile:

  pqcache query --data /data/.pqcache/generations/current \
    "SELECT count(*) FROM read_parquet('{data}/orders/**/*.parquet')"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := args[0]
			if data != "" {
				lease, err := generations.HoldPath(data)
				if err != nil {
					return fmt.Errorf("--data %s: %w", data, err)
				}
				defer lease.Release()
				q = strings.ReplaceAll(q, "{data}", lease.Path)
			} else if strings.Contains(q, "{data}") {
				return errors.New("the query names {data}: give --data")
			}
			var buf bytes.Buffer
			if err := duckdb.RunQuery(cmd.Context(), threads, q, &buf); err != nil {
				return err
			}
			if _, err := io.Copy(cmd.OutOrStdout(), bytes.NewReader(buf.Bytes())); err != nil {
				return err
			}
			if output != "" {
				return os.WriteFile(output, buf.Bytes(), 0o644)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "The data directory {data} stands for (a generation of a Dataset's volume is held).")
	cmd.Flags().StringVar(&output, "output", "", "Also write the rows to this file (e.g. /dev/termination-log).")
	cmd.Flags().IntVar(&threads, "threads", 0, "DuckDB threads (0: DuckDB's default).")
	return cmd
}
