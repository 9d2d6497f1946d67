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
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/polars"
	"github.com/pqcache/pqcache/worker"
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

// runBench runs the worker's bench with the flags a person may add.
func runBench(cmd *cobra.Command, a wire.BenchArgs, local benchLocal) error {
	if err := sparkIsolation(cmd, &a); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	version, _ := duckdbVersion()
	return worker.Bench(ctx, a, worker.BenchLocal{Command: local.command, JSONOut: local.jsonOut, CSVOut: local.csvOut, Scale: local.scale,
		EngineVersion: local.engineVersion, NetInterfaces: local.netIfs, ProbeBytes: local.probeBytes, PolarsDir: local.polarsDir,
		PolarsPython: local.polarsPython, SparkDir: local.spark.dir, SparkPython: local.spark.python, SparkJars: local.spark.jars,
		DuckDBVersion: version, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
}
