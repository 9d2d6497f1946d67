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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/polars"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/cache/generations"
)

// benchLocal are the flags of a bench run by hand, which no controller sets: outputs, the split
// command line, and where the engines live.
type benchLocal struct {
	command                                       string
	jsonOut, csvOut, scale, engineVersion, netIfs string
	probeBytes                                    int64
	polarsDir, polarsPython                       string
	spark                                         sparkFlags
}

func (l *benchLocal) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&l.command, "command", "", "The command engine's command line, split on spaces; {query} and {data} are replaced.")
	f.Int64Var(&l.probeBytes, "probe-bytes", bench.DefaultProbeBytes, "Stop the throughput probe after this many bytes (-1: read everything).")
	f.StringVar(&l.netIfs, "net-interfaces", "auto", "Network interfaces whose received bytes are the queries' network reads (networkReadBytes): auto (every interface but lo: a pod's own traffic), lo (standalone, against S3 on 127.0.0.1), names such as eth0,eth1, or none.")
	f.StringVar(&l.jsonOut, "json", "", "Write the result as JSON to this file (- for stdout).")
	f.StringVar(&l.csvOut, "csv", "", "Write a polars-benchmark style timings CSV, with memory columns, to this file.")
	f.StringVar(&l.scale, "scale-factor", "", "The scale_factor column of the CSV.")
	f.StringVar(&l.engineVersion, "engine-version", "", "The version column of the CSV.")
	f.StringVar(&l.polarsDir, "polars-dir", "", "With --engine polars: the directory of run.py (default: $"+polars.EnvDir+", ../lib/pqcache/polars beside this binary, the checkout's bench/polars, or "+polars.ImageDir+").")
	f.StringVar(&l.polarsPython, "polars-python", "", "With --engine polars: the Python interpreter that has Polars (default: $"+polars.EnvPython+", the venv beside run.py, the checkout's "+polars.CheckoutVenv+" (make polars-env), or python3 on PATH).")
	l.spark.register(cmd)
}

// benchCommand is `pqcache bench`; run receives the parsed arguments (tests capture them).
func benchCommand(run func(*cobra.Command, wire.BenchArgs, benchLocal) error) *cobra.Command {
	var (
		a     wire.BenchArgs
		local benchLocal
	)
	cmd := &cobra.Command{
		Use:   "bench --data DIR --engine command --command 'ENGINE {query} {data}'",
		Short: "Run queries over a data directory, each in a fresh process: timings, peak memory, result digests",
		Long: `bench runs each query warmups + iterations times, each in a fresh process so that its memory is
its own (--isolation session: one process per iteration runs every query in turn, warm), and reports per
query the median, min and max query time as the engine measured it (from the call that runs the query
to its last row; the whole process's wall time when the engine reports none), the start-up and wall
time of each iteration, the peak of the process tree's total, anonymous and file-backed memory above
its baseline and above the engine's memory once loaded, the rows returned and an order-insensitive
digest of them. A query that fails, times out or is OOM-killed is recorded as such and the run goes on.

The queries are a workload's (--workload): the built-in tpch (the 22 PDS-H queries over the TPC-H
tables, one file per table or partitioned, as pqcache datagen writes them), scan or paging (pqcache
datagen --layout scan), or your own, a YAML or JSON file of tables (paths under --data) and named
queries (SQL, and optionally a Polars form). Every table's files are listed before any query runs; a
table with none stops the run, naming it. --data is a directory or s3://BUCKET/PREFIX (with
--endpoint, --region, --path-style and the AWS_* credentials).

With --engine duckdb (the default) each query runs in the embedded DuckDB (httpfs for s3://). With
--engine polars, in Python Polars: the query's Polars form, else its SQL (bench/polars). With --engine
spark, its SQL in PySpark, one Spark application per iteration (session isolation only; bench/spark). With --engine
command, --command is split on spaces; {query}, {data} and {workload} are replaced in each argument by
the query's name, --data and the resolved workload file (JSON); {queries} by the comma-separated
queries of a session. The command prints its result rows to stdout, one per line, and may report its
own times to the file $PQCACHE_TIMING_FILE names (docs/bench.md, "Timing protocol").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, a, local) },
	}
	cmd.AddCommand(newProbeCommand())
	a.Bind(cmd.Flags())
	local.register(cmd)
	return cmd
}

func newBenchCommand() *cobra.Command { return benchCommand(runBench) }

// runBench resolves the workload's tables against the data (every table must have files before any
// query runs), runs the queries, then the throughput probe, and writes the results where asked.
func runBench(cmd *cobra.Command, a wire.BenchArgs, local benchLocal) error {
	if a.Data == "" {
		return errors.New("--data is required")
	}
	if a.Iterations < 1 || a.Iterations > 100 || a.Warmups < 0 || a.Warmups > 10 {
		return fmt.Errorf("--iterations must be 1-100 and --warmups 0-10")
	}
	if err := sparkIsolation(cmd, &a); err != nil {
		return err
	}
	if a.Streams < 1 || a.Streams > wire.MaxStreams {
		return fmt.Errorf("--streams %d: want 1 to %d concurrent query streams", a.Streams, wire.MaxStreams)
	}
	var lease *generations.Lease
	if !strings.HasPrefix(a.Data, "s3://") {
		// A generation of a Dataset's volume (.pqcache/generations/N or current) is held for the whole
		// run, so that a refresh cannot remove what the queries read.
		var err error
		if lease, err = generations.HoldPath(a.Data); err != nil {
			return fmt.Errorf("--data %s: %w", a.Data, err)
		}
		defer lease.Release()
		a.Data = lease.Path
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	resolved, err := resolveWorkload(ctx, a)
	if err != nil {
		// Said in the summary too: the controller reports which tables are missing.
		res := &wire.BenchResult{Engine: a.Engine, Data: a.Data, Error: err.Error(), ErrorReason: wire.ReasonInvalidWorkload}
		if missing := (*workload.MissingTablesError)(nil); errors.As(err, &missing) {
			res.ErrorReason = wire.ReasonMissingTables
		}
		return errors.Join(err, writeSummary(res, a.ReportFile))
	}
	eng, version, err := benchEngine(ctx, a, local)
	if err != nil {
		return err
	}
	if local.engineVersion == "" {
		local.engineVersion = version
	}
	nets, err := netdev.Parse(local.netIfs)
	if err != nil {
		return err
	}
	refresh, err := startRefresh(ctx, a, resolved, lease)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	res, err := bench.Run(ctx, bench.Spec{
		Label: a.Label, Engine: eng, Data: a.Data, Workload: resolved, Iterations: a.Iterations, Warmups: a.Warmups, QueryTimeout: a.QueryTimeout,
		Config: a.ConfigName, Input: a.IOType, NetInterfaces: nets, Isolation: a.Isolation, Streams: a.Streams,
		Progress: func(q wire.QueryResult) {
			fmt.Fprintf(stderr, "%-14s %-9s median %6d ms (%s)  start-up %6d ms  wall %6d ms  peak %6d MiB\n",
				q.Name, q.Status, q.MedianMillis, q.Timing, q.MedianStartupMillis, q.MedianWallMillis, q.PeakMemoryBytes>>20)
		},
	})
	refresh.stop(res, stderr)
	if err != nil {
		return err
	}
	if a.ProbeStreams > 0 {
		// After the queries, so that they start from the same page cache as without a probe (and its
		// reads are not counted as theirs).
		src, err := probeInput(ctx, a.Data, a.FreshData, a.FreshPrefixes, a.S3Access)
		if err != nil {
			return err
		}
		if res.Probe, err = bench.ProbeFrom(ctx, src, a.ProbeStreams, local.probeBytes); err != nil {
			return fmt.Errorf("probing %s: %w", a.Data, err)
		}
	}
	if err := writeBenchOutputs(cmd, res, a, local); err != nil {
		return err
	}
	return refreshFailure(res)
}

// resolveWorkload reads --workload, selects --queries, and lists every table's files in the data.
func resolveWorkload(ctx context.Context, a wire.BenchArgs) (*workload.Resolved, error) {
	w, err := workload.Load(a.Workload)
	if err != nil {
		return nil, err
	}
	names, err := w.ParseSelection(a.Queries)
	if err != nil {
		return nil, err
	}
	queries, err := w.Select(names)
	if err != nil {
		return nil, err
	}
	src, err := benchSource(ctx, a)
	if err != nil {
		return nil, err
	}
	return workload.Resolve(ctx, w, queries, src)
}

// benchEngine is the engine --engine names, and its version for the CSV.
func benchEngine(ctx context.Context, a wire.BenchArgs, local benchLocal) (bench.Engine, string, error) {
	switch a.Engine {
	case "duckdb":
		self, err := os.Executable()
		if err != nil {
			return nil, "", err
		}
		// Each query in a fresh pqcache process running the embedded DuckDB.
		args := []string{self, "bench-query", "--workload", "{workload}", "--queries", "{queries}", "--threads", strconv.Itoa(a.Threads), "--memory-limit", a.MemoryLimit}
		for _, s := range a.DuckDBSettings {
			args = append(args, "--setting", s)
		}
		version, ok := duckdbVersion()
		if !ok {
			return nil, "", errors.New("this pqcache was built without cgo and has no DuckDB: use --engine command")
		}
		return bench.SelfEngine{EngineName: "duckdb", CommandEngine: bench.CommandEngine{Args: args}}, version, nil
	case "polars":
		return polarsEngine(ctx, a, local)
	case "spark":
		return sparkEngine(ctx, a, local.spark)
	case "command":
		args := a.CommandArgs
		if len(args) == 0 {
			args = strings.Fields(local.command)
		}
		if len(args) == 0 {
			return nil, "", errors.New("--engine command needs --command, e.g. --command 'python run.py {query} {workload}'")
		}
		return bench.CommandEngine{Args: args}, "", nil
	}
	return nil, "", fmt.Errorf("--engine %q: want duckdb, polars, spark or command", a.Engine)
}

// writeSummary writes the compact summary a controller reads to file (a termination message), if
// asked to.
func writeSummary(res *wire.BenchResult, file string) error {
	if file == "" {
		return nil
	}
	summary, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, summary, 0o644); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// writeBenchCSV writes the CSV row of res to the file at path. The file's Close error is returned
// with the rest: a CSV cut short (a full disk) must not pass for written.
func writeBenchCSV(path string, res *wire.BenchResult, opts bench.CSVOptions) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	return bench.WriteCSV(f, res, opts)
}

// writeBenchOutputs writes the summary for the controller, the JSON and CSV asked for, and the
// Markdown table on stdout unless the JSON goes there.
func writeBenchOutputs(cmd *cobra.Command, res *wire.BenchResult, a wire.BenchArgs, local benchLocal) error {
	if err := writeSummary(res, a.ReportFile); err != nil {
		return err
	}
	if local.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if local.jsonOut == "-" {
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
		} else if err := os.WriteFile(local.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if local.csvOut != "" {
		ioType := a.IOType
		if ioType == "" {
			ioType = "volume"
		}
		if err := writeBenchCSV(local.csvOut, res, bench.CSVOptions{Version: local.engineVersion, IOType: ioType, ScaleFactor: local.scale}); err != nil {
			return err
		}
	}
	if local.jsonOut != "-" {
		return bench.WriteMarkdown(cmd.OutOrStdout(), res)
	}
	return nil
}
