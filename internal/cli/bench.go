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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/bench"
)

func newBenchCommand() *cobra.Command {
	var (
		data, queries, engine, command, jsonOut, csvOut, ioType, scale, engineVersion string
		iterations, warmups                                                         int
		queryTimeout                                                                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "bench --data DIR --engine command --command 'ENGINE {query} {data}'",
		Short: "Run queries over a data directory, each in a fresh process: timings, peak memory, result digests",
		Long: `bench runs each query warmups + iterations times, each in a fresh process so that its memory is
its own, and reports per query the median, min and max wall time, the peak of the process tree's total,
anonymous and file-backed memory above its baseline, the rows returned and an order-insensitive digest
of them. A query that fails, times out or is OOM-killed is recorded as such and the run goes on.

With --engine command, --command is split on spaces; {query} and {data} are replaced in each argument.
The command prints its result rows to stdout, one per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return errors.New("--data is required")
			}
			qs, err := bench.ParseQueries(queries, 22)
			if err != nil {
				return err
			}
			if iterations < 1 || iterations > 100 || warmups < 0 || warmups > 10 {
				return fmt.Errorf("--iterations must be 1-100 and --warmups 0-10")
			}
			var eng bench.Engine
			switch engine {
			case "command":
				args := strings.Fields(command)
				if len(args) == 0 {
					return errors.New("--engine command needs --command, e.g. --command 'python run.py {query} {data}'")
				}
				eng = bench.CommandEngine{Args: args}
			default:
				return fmt.Errorf("--engine %q: this build runs external engines only (--engine command)", engine)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stderr := cmd.ErrOrStderr()
			res, err := bench.Run(ctx, bench.Spec{
				Engine: eng, Data: data, Queries: qs, Iterations: iterations, Warmups: warmups, QueryTimeout: queryTimeout,
				Progress: func(q bench.QueryResult) {
					fmt.Fprintf(stderr, "q%-2d %-9s median %6d ms  peak %6d MiB\n", q.Query, q.Status, q.MedianMillis, q.PeakMemoryBytes>>20)
				},
			})
			if err != nil {
				return err
			}
			if jsonOut != "" {
				b, _ := json.MarshalIndent(res, "", "  ")
				if jsonOut == "-" {
					fmt.Fprintln(cmd.OutOrStdout(), string(b))
				} else if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
					return err
				}
			}
			if csvOut != "" {
				f, err := os.Create(csvOut)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := bench.WriteCSV(f, res, bench.CSVOptions{Version: engineVersion, IOType: ioType, ScaleFactor: scale}); err != nil {
					return err
				}
			}
			if jsonOut != "-" {
				return bench.WriteMarkdown(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "Directory of the data the queries read.")
	f.StringVar(&queries, "queries", "1-22", "Queries to run: a list of numbers and ranges, e.g. 1-22 or 1,6,14.")
	f.IntVar(&iterations, "iterations", 3, "Measured runs per query (1-100).")
	f.IntVar(&warmups, "warmups", 1, "Unmeasured runs before them (0-10).")
	f.StringVar(&engine, "engine", "command", "Query engine: command (any program, one process per query).")
	f.StringVar(&command, "command", "", "The command engine's command line; {query} and {data} are replaced.")
	f.DurationVar(&queryTimeout, "query-timeout", 30*time.Minute, "Bound on one run of one query; past it the query is recorded as Timeout.")
	f.StringVar(&jsonOut, "json", "", "Write the result as JSON to this file (- for stdout).")
	f.StringVar(&csvOut, "csv", "", "Write a polars-benchmark style timings CSV, with memory columns, to this file.")
	f.StringVar(&ioType, "io-type", "volume", "The io_type column of the CSV: how the data was read.")
	f.StringVar(&scale, "scale-factor", "", "The scale_factor column of the CSV.")
	f.StringVar(&engineVersion, "engine-version", "", "The version column of the CSV.")
	return cmd
}
