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

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/polars"
	"github.com/pqcache/pqcache/bench/spark"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/cache/generations"
)

// BenchLocal is what a bench run by hand adds to the contract's arguments: outputs, the split command
// line, and where the engines live.
type BenchLocal struct {
	// Command is the command engine's command line, split on spaces.
	Command string
	// JSONOut ("-": stdout) and CSVOut are files for the result; Scale and EngineVersion fill the
	// CSV's columns.
	JSONOut, CSVOut, Scale, EngineVersion string
	// NetInterfaces are those whose received bytes are the queries' network reads.
	NetInterfaces string
	// ProbeBytes stops the throughput probe after that many bytes (-1: everything).
	ProbeBytes int64
	// PolarsDir and PolarsPython find the Polars engine; SparkDir, SparkPython and SparkJars the
	// Spark engine (empty: their defaults).
	PolarsDir, PolarsPython          string
	SparkDir, SparkPython, SparkJars string
	// DuckDBVersion is the embedded DuckDB's version; empty in a build without cgo, which has none.
	DuckDBVersion string
	// Stdout gets the result table (or the JSON); Stderr each query's line as it finishes.
	Stdout, Stderr io.Writer
}

// Bench resolves the workload's tables against the data (every table must have files before any
// query runs), runs the queries, then the throughput probe, and writes the results where asked.
func Bench(ctx context.Context, a wire.BenchArgs, local BenchLocal) error {
	if err := checkBenchArgs(a); err != nil {
		return err
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
	resolved, err := resolveWorkload(ctx, a)
	if err != nil {
		// Said in the summary too: the controller reports which tables are missing.
		res := &wire.BenchResult{Engine: a.Engine, Data: a.Data, Error: err.Error(), ErrorReason: wire.ReasonInvalidWorkload}
		if missing := (*workload.MissingTablesError)(nil); errors.As(err, &missing) {
			res.ErrorReason = wire.ReasonMissingTables
		}
		return errors.Join(err, writeSummary(res, a.ReportFile))
	}
	res, err := runQueries(ctx, a, &local, resolved, lease)
	if err != nil {
		return err
	}
	if a.ProbeStreams > 0 {
		// After the queries, so that they start from the same page cache as without a probe (and its
		// reads are not counted as theirs).
		src, err := ProbeInput(ctx, a.Data, a.FreshData, a.FreshPrefixes, a.S3Access)
		if err != nil {
			return err
		}
		if res.Probe, err = bench.ProbeFrom(ctx, src, a.ProbeStreams, local.ProbeBytes); err != nil {
			return fmt.Errorf("probing %s: %w", a.Data, err)
		}
	}
	if err := writeBenchOutputs(res, a, local); err != nil {
		return err
	}
	return refreshFailure(res)
}

// checkBenchArgs refuses arguments no run can start with.
func checkBenchArgs(a wire.BenchArgs) error {
	switch {
	case a.Data == "":
		return errors.New("--data is required")
	case a.Iterations < 1 || a.Iterations > 100 || a.Warmups < 0 || a.Warmups > 10:
		return fmt.Errorf("--iterations must be 1-100 and --warmups 0-10")
	case a.Streams < 1 || a.Streams > wire.MaxStreams:
		return fmt.Errorf("--streams %d: want 1 to %d concurrent query streams", a.Streams, wire.MaxStreams)
	}
	return nil
}

// runQueries runs the resolved workload with the engine the arguments name, beside the refresh they
// ask for, and prints a line per query on local.Stderr.
func runQueries(ctx context.Context, a wire.BenchArgs, local *BenchLocal, resolved *workload.Resolved, lease *generations.Lease) (*wire.BenchResult, error) {
	eng, version, err := benchEngine(ctx, a, *local)
	if err != nil {
		return nil, err
	}
	if local.EngineVersion == "" {
		local.EngineVersion = version
	}
	nets, err := netdev.Parse(local.NetInterfaces)
	if err != nil {
		return nil, err
	}
	refresh, err := startRefresh(ctx, a, resolved, lease)
	if err != nil {
		return nil, err
	}
	stderr := local.Stderr
	partial := newPartialSummary(a, resolved)
	res, err := bench.Run(ctx, bench.Spec{
		Label: a.Label, Engine: eng, Data: a.Data, Workload: resolved, Iterations: a.Iterations, Warmups: a.Warmups, QueryTimeout: a.QueryTimeout,
		Config: a.ConfigName, Input: a.IOType, NetInterfaces: nets, Isolation: a.Isolation, Streams: a.Streams,
		Progress: func(q wire.QueryResult) {
			partial.done(q)
			fmt.Fprintf(stderr, "%-14s %-9s median %6d ms (%s)  start-up %6d ms  wall %6d ms  peak %6d MiB\n",
				q.Name, q.Status, q.MedianMillis, q.Timing, q.MedianStartupMillis, q.MedianWallMillis, q.PeakMemoryBytes>>20)
		},
	})
	refresh.stop(res, stderr)
	return res, err
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
func benchEngine(ctx context.Context, a wire.BenchArgs, local BenchLocal) (bench.Engine, string, error) {
	switch a.Engine {
	case "duckdb":
		return duckdbEngine(a, local)
	case "polars":
		e, err := polars.Find(ctx, local.PolarsDir, local.PolarsPython)
		if err != nil {
			return e, "", err
		}
		// S3 needs nothing here: the resolved workload carries the endpoint, region and addressing,
		// and the query process inherits the credentials.
		e.Threads, e.PolarsEngine, e.ForceAsync = a.Threads, a.PolarsEngine, a.PolarsForceAsync
		version, err := e.Version(ctx)
		return e, version, err
	case "spark":
		// Local mode has --threads task slots (local[N]; 0: local[*]) unless $PQCACHE_SPARK_MASTER
		// names a master.
		e, err := spark.Find(ctx, local.SparkDir, local.SparkPython, local.SparkJars)
		if err != nil {
			return e, "", err
		}
		e.Threads = a.Threads
		version, err := e.Version(ctx)
		return e, version, err
	case "command":
		args := a.CommandArgs
		if len(args) == 0 {
			args = strings.Fields(local.Command)
		}
		if len(args) == 0 {
			return nil, "", errors.New("--engine command needs --command, e.g. --command 'python run.py {query} {workload}'")
		}
		return bench.CommandEngine{Args: args}, "", nil
	}
	return nil, "", fmt.Errorf("--engine %q: want duckdb, polars, spark or command", a.Engine)
}

// duckdbEngine runs each query in a fresh pqcache process running the embedded DuckDB
// (`pqcache bench-query`).
func duckdbEngine(a wire.BenchArgs, local BenchLocal) (bench.Engine, string, error) {
	if local.DuckDBVersion == "" {
		return nil, "", errors.New("this pqcache was built without cgo and has no DuckDB: use --engine command")
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	args := []string{self, "bench-query", "--workload", "{workload}", "--queries", "{queries}", "--threads", strconv.Itoa(a.Threads), "--memory-limit", a.MemoryLimit}
	for _, s := range a.DuckDBSettings {
		args = append(args, "--setting", s)
	}
	return bench.SelfEngine{EngineName: "duckdb", CommandEngine: bench.CommandEngine{Args: args}}, local.DuckDBVersion, nil
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
func writeBenchOutputs(res *wire.BenchResult, a wire.BenchArgs, local BenchLocal) error {
	if err := writeSummary(res, a.ReportFile); err != nil {
		return err
	}
	if local.JSONOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if local.JSONOut == "-" {
			fmt.Fprintln(local.Stdout, string(b))
		} else if err := os.WriteFile(local.JSONOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if local.CSVOut != "" {
		ioType := a.IOType
		if ioType == "" {
			ioType = "volume"
		}
		if err := writeBenchCSV(local.CSVOut, res, bench.CSVOptions{Version: local.EngineVersion, IOType: ioType, ScaleFactor: local.Scale}); err != nil {
			return err
		}
	}
	if local.JSONOut != "-" {
		return bench.WriteMarkdown(local.Stdout, res)
	}
	return nil
}
