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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/polars"
	"github.com/pqcache/pqcache/bench/report"
	"github.com/pqcache/pqcache/cache/generations"
)

func newBenchCommand() *cobra.Command {
	var (
		data, queries, engine, command, jsonOut, csvOut, ioType, scale, engineVersion, label, reportFile string
		configName, netInterfaces                                                                        string
		iterations, warmups, threads, probeStreams                                                       int
		probeBytes                                                                                       int64
		freshData                                                                                        string
		freshPrefixes, commandArgs                                                                       []string
		queryTimeout                                                                                     time.Duration
		pl                                                                                               polarsFlags
		duckdbMemoryLimit                                                                                string
	)
	cmd := &cobra.Command{
		Use:   "bench --data DIR --engine command --command 'ENGINE {query} {data}'",
		Short: "Run queries over a data directory, each in a fresh process: timings, peak memory, result digests",
		Long: `bench runs each query warmups + iterations times, each in a fresh process so that its memory is
its own, and reports per query the median, min and max wall time, the peak of the process tree's total,
anonymous and file-backed memory above its baseline, the rows returned and an order-insensitive digest
of them. A query that fails, times out or is OOM-killed is recorded as such and the run goes on.

With --engine duckdb (the default), the data directory holds the TPC-H tables as Parquet, one file per
table (lineitem.parquet) or partitioned (lineitem/**/*.parquet), as pqcache datagen writes them.
With --engine polars, the same queries in Polars' lazy API run in Node.js (bench/polars); --data may
also be s3://bucket/prefix, with --endpoint, --region, --path-style and the AWS_* credentials.
With --engine command, --command is split on spaces; {query} and {data} are replaced in each argument.
The command prints its result rows to stdout, one per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return errors.New("--data is required")
			}
			if !strings.HasPrefix(data, "s3://") {
				// A generation of a Dataset's volume (.pqcache/generations/N or current) is held for
				// the whole run, so that a refresh cannot remove what the queries read.
				lease, err := generations.HoldPath(data)
				if err != nil {
					return fmt.Errorf("--data %s: %w", data, err)
				}
				defer lease.Release()
				data = lease.Path
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
			case "duckdb":
				self, err := os.Executable()
				if err != nil {
					return err
				}
				// Each query in a fresh pqcache process running the embedded DuckDB.
				args := []string{self, "bench-query", "--query", "{query}", "--data", "{data}", "--threads", strconv.Itoa(threads), "--memory-limit", duckdbMemoryLimit}
				if freshData != "" {
					args = append(args, "--fresh-data", freshData)
					for _, p := range freshPrefixes {
						args = append(args, "--fresh-prefix", p)
					}
				}
				eng = bench.SelfEngine{EngineName: "duckdb", CommandEngine: bench.CommandEngine{Args: args}}
				version, ok := duckdbVersion()
				if !ok {
					return errors.New("this pqcache was built without cgo and has no DuckDB: use --engine command")
				}
				if engineVersion == "" {
					engineVersion = version
				}
			case "polars":
				e, version, err := pl.engine(threads, freshData, freshPrefixes)
				if err != nil {
					return err
				}
				eng = e
				if engineVersion == "" {
					engineVersion = version
				}
			case "command":
				args := commandArgs
				if len(args) == 0 {
					args = strings.Fields(command)
				}
				if len(args) == 0 {
					return errors.New("--engine command needs --command, e.g. --command 'python run.py {query} {data}'")
				}
				eng = bench.CommandEngine{Args: args}
			default:
				return fmt.Errorf("--engine %q: want duckdb, polars or command", engine)
			}
			if engine == "duckdb" && strings.HasPrefix(data, "s3://") {
				return errors.New("the built-in DuckDB has no httpfs and cannot read s3://: use --engine polars, or a command engine")
			}
			nets, err := netdev.Parse(netInterfaces)
			if err != nil {
				return err
			}
			input := ""
			if cmd.Flags().Changed("io-type") {
				input = ioType
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			stderr := cmd.ErrOrStderr()
			res, err := bench.Run(ctx, bench.Spec{
				Label: label, Engine: eng, Data: data, Queries: qs, Iterations: iterations, Warmups: warmups, QueryTimeout: queryTimeout,
				Config: configName, Input: input, NetInterfaces: nets,
				Progress: func(q wire.QueryResult) {
					fmt.Fprintf(stderr, "q%-2d %-9s median %6d ms  peak %6d MiB\n", q.Query, q.Status, q.MedianMillis, q.PeakMemoryBytes>>20)
				},
			})
			if err != nil {
				return err
			}
			if probeStreams > 0 {
				// After the queries, so that they start from the same page cache as without a probe (and
				// its reads are not counted as theirs).
				src, err := probeInput(ctx, data, freshData, freshPrefixes, pl.s3)
				if err != nil {
					return err
				}
				if res.Probe, err = bench.ProbeFrom(ctx, src, probeStreams, probeBytes); err != nil {
					return fmt.Errorf("probing %s: %w", data, err)
				}
			}
			if reportFile != "" {
				summary, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
				if err != nil {
					return err
				}
				if err := os.WriteFile(reportFile, summary, 0o644); err != nil {
					return fmt.Errorf("writing the summary: %w", err)
				}
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
	cmd.AddCommand(newProbeCommand())
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "Directory of the data the queries read.")
	f.StringVar(&queries, "queries", "1-22", "Queries to run: a list of numbers and ranges, e.g. 1-22 or 1,6,14.")
	f.IntVar(&iterations, "iterations", 3, "Measured runs per query (1-100).")
	f.IntVar(&warmups, "warmups", 1, "Unmeasured runs before them (0-10).")
	f.StringVar(&engine, "engine", "duckdb", "Query engine: duckdb or polars (built in), or command (any program); one process per query either way.")
	f.IntVar(&threads, "threads", 0, "Engine threads per query: DuckDB's threads, Polars' POLARS_MAX_THREADS (0: one per CPU the process may use).")
	f.StringVar(&command, "command", "", "The command engine's command line, split on spaces; {query} and {data} are replaced.")
	f.StringArrayVar(&commandArgs, "command-arg", nil, "The command engine's command, one argument per flag (keeps spaces); overrides --command.")
	f.DurationVar(&queryTimeout, "query-timeout", 30*time.Minute, "Bound on one run of one query; past it the query is recorded as Timeout.")
	f.StringVar(&freshData, "fresh-data", "", "With a built-in engine: a directory of freshly staged files (pqcache stage) that replace, under --fresh-prefix, the files in --data (Polars: or an s3:// URL).")
	f.StringSliceVar(&freshPrefixes, "fresh-prefix", nil, "Paths relative to --data (e.g. lineitem/batch=7/) read from --fresh-data instead (repeatable).")
	f.IntVar(&probeStreams, "probe-streams", 0, "Also measure the data's sequential read throughput with this many parallel streams, after the queries (0: no probe); for s3:// data, parallel GETs of the objects.")
	f.Int64Var(&probeBytes, "probe-bytes", bench.DefaultProbeBytes, "Stop the throughput probe after this many bytes (-1: read everything).")
	f.StringVar(&reportFile, "report-file", "", "Also write a compact summary (gzip+base64, at most 4 KiB) to this file, e.g. /dev/termination-log.")
	f.StringVar(&label, "label", "", "Name of this run in reports, e.g. \"2cpu-4gi / volume\".")
	f.StringVar(&configName, "config-name", "", "Name of the resource configuration in reports (e.g. 2cpu-4gi), which compare engines per configuration and input.")
	f.StringVar(&netInterfaces, "net-interfaces", "auto", "Network interfaces whose received bytes are the queries' network reads (networkReadBytes): auto (every interface but lo: a pod's own traffic), lo (standalone, against S3 on 127.0.0.1), names such as eth0,eth1, or none.")
	f.StringVar(&jsonOut, "json", "", "Write the result as JSON to this file (- for stdout).")
	f.StringVar(&csvOut, "csv", "", "Write a polars-benchmark style timings CSV, with memory columns, to this file.")
	f.StringVar(&ioType, "io-type", "volume", "The io_type column of the CSV: how the data was read; when given, also the input's name in reports (default there: --data).")
	f.StringVar(&scale, "scale-factor", "", "The scale_factor column of the CSV.")
	f.StringVar(&engineVersion, "engine-version", "", "The version column of the CSV.")
	f.StringVar(&duckdbMemoryLimit, "memory-limit", "auto", "With --engine duckdb: "+memoryLimitUsage)
	pl.register(cmd)
	return cmd
}

const memoryLimitUsage = "DuckDB's memory_limit: auto (a share of the container's cgroup memory limit, else DuckDB's default), none (DuckDB's default: 80% of the machine's RAM), or a size such as 2Gi."

func newReportCommand() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "report RESULT.json|BENCHRUN.yaml... [-o report.html]",
		Short: "Compare bench results: a self-contained HTML page with charts, or Markdown tables",
		Long: `Compare bench results: a self-contained HTML page with charts, or Markdown tables.

Each file is the JSON of 'pqcache bench --json', or a BenchRun as kubectl prints it
('kubectl get benchrun NAME -o yaml', or -o json; a List of BenchRuns too): each of its
results (one per configuration and input) becomes one column.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var results []*wire.BenchResult
			for _, p := range args {
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rs, err := readResults(data)
				if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				results = append(results, rs...)
			}
			w := cmd.OutOrStdout()
			if out != "" && out != "-" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			switch format {
			case "html":
				return report.WriteHTML(w, results)
			case "markdown":
				return report.WriteMarkdown(w, results)
			}
			return fmt.Errorf("--format %q: want html or markdown", format)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "File to write (default: stdout).")
	cmd.Flags().StringVar(&format, "format", "html", "html (a page with charts) or markdown.")
	return cmd
}

func newProbeCommand() *cobra.Command {
	var (
		data     string
		streams  int
		maxBytes int64
		jsonOut  bool
		s3       polars.S3
	)
	cmd := &cobra.Command{
		Use:   "probe --data DIR|s3://BUCKET/PREFIX [--streams 8]",
		Short: "Read every file under DIR (or object under an S3 prefix) once with parallel sequential streams and report the throughput",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return errors.New("--data is required")
			}
			src, err := probeSource(cmd.Context(), data, s3)
			if err != nil {
				return err
			}
			r, err := bench.ProbeFrom(cmd.Context(), src, streams, maxBytes)
			if err != nil {
				return err
			}
			if jsonOut {
				b, _ := json.Marshal(r)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d files, %d bytes in %d ms with %d streams: %.1f MiB/s\n",
				r.Files, r.Bytes, r.Millis, r.Streams, float64(r.BytesPerSecond)/(1<<20))
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "Directory to read (the input path: a cache volume, a bucket mount, ...), or s3://bucket/prefix.")
	cmd.Flags().IntVar(&streams, "streams", 8, "Files read at once.")
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", -1, "Stop after this many bytes (-1: read every file once).")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "Print the result as JSON.")
	registerS3Endpoint(cmd, &s3, "With s3:// data")
	return cmd
}

// newInstallRunnerCommand copies the static runner (pqcache-runner, beside this binary) into a
// directory shared with another image's container: how a BenchRun measures any engine image, as
// Tekton and Argo inject their entrypoints. The image has no shell or cp, so pqcache does the copy.
func newInstallRunnerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "install-runner DIR",
		Short:  "Copy the static pqcache-runner into DIR (used by BenchRun Jobs for engine images)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src := filepath.Join(filepath.Dir(self), runnerName)
			data, err := os.ReadFile(src)
			if err != nil {
				return fmt.Errorf("reading the runner: %w", err)
			}
			dst := filepath.Join(args[0], runnerName)
			if err := os.WriteFile(dst+".tmp", data, 0o755); err != nil {
				return err
			}
			return os.Rename(dst+".tmp", dst)
		},
	}
}

// runnerName is the static build of pqcache (CGO_ENABLED=0: no DuckDB, runs on any Linux image).
const runnerName = "pqcache-runner"
