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

package spark

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/workload"
)

// duckdbEnv makes this test binary a DuckDB query process (its last two arguments: the resolved
// workload and the queries' names, comma-separated), so that both engines' answers go through
// bench.Run and its digest alike.
const duckdbEnv = "PQCACHE_TEST_DUCKDB_QUERY"

func TestMain(m *testing.M) {
	if os.Getenv(duckdbEnv) != "" {
		if err := duckdbQuery(os.Args[len(os.Args)-2], os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// duckdbQuery runs queries of a resolved workload on the embedded DuckDB, as `pqcache bench-query`
// does: ready reported, each query timed, its rows printed in the canonical format.
func duckdbQuery(file, names string) error {
	r, err := workload.Read(file)
	if err != nil {
		return err
	}
	db, err := duckdb.Open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if err := duckdb.CreateTables(ctx, db, r); err != nil {
		return err
	}
	tw := bench.NewTimingWriter()
	if err := tw.Ready(); err != nil {
		return err
	}
	return duckdb.RunQueries(ctx, db, r, strings.Split(names, ","), bufio.NewWriter(os.Stdout), tw)
}

func duckdbEngine() bench.Engine {
	return bench.SelfEngine{EngineName: "duckdb", CommandEngine: bench.CommandEngine{Args: []string{os.Args[0], "-test.run=^$", "{workload}", "{queries}"}}}
}

// engine is the Spark engine of this checkout: run.py beside this file, the interpreter and jars Find
// chooses ($PQCACHE_SPARK_PYTHON and $PQCACHE_SPARK_JARS, which make test sets, else bin/spark-venv
// and bin/spark-jars), in local mode with two task slots. The test fails, saying what to run,
// without it.
func engine(t *testing.T) Engine {
	t.Helper()
	e, err := Find(t.Context(), ".", "", "")
	if err != nil {
		t.Fatalf("the Spark engine cannot run here: %v", err)
	}
	if e.Jars == "" {
		t.Fatalf("no s3a jars: run `make spark-env` or set %s", EnvJars)
	}
	e.Threads = 2
	return e
}

// The SF 0.01 data sets, generated once per test binary.
var (
	dataOnce sync.Once
	dataDirs map[duckdb.Layout]string
	dataErr  error
)

// tpch is SF 0.01 in layout, from $PQCACHE_TPCH_EXTENSION (make test: bin/tpch.duckdb_extension),
// else an extension linked here.
func tpch(t *testing.T, layout duckdb.Layout) string {
	t.Helper()
	dataOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pqcache-spark-test-")
		if err != nil {
			dataErr = err
			return
		}
		ctx := context.Background()
		ext, err := duckdb.TPCHExtension("")
		if err != nil {
			ext = filepath.Join(dir, "tpch.duckdb_extension")
			if dataErr = duckdb.BuildTPCHExtension(ctx, ext); dataErr != nil {
				return
			}
		}
		dataDirs = map[duckdb.Layout]string{}
		for _, l := range []duckdb.Layout{duckdb.LayoutFlat, duckdb.LayoutPartitioned} {
			out := filepath.Join(dir, string(l))
			if _, dataErr = duckdb.Generate(ctx, duckdb.GenOptions{Scale: 0.01, Out: out, Layout: l, FilesPerTable: 3, Extension: ext, Threads: 2}); dataErr != nil {
				return
			}
			dataDirs[l] = out
		}
	})
	if dataErr != nil {
		t.Fatalf("generating SF 0.01: %v", dataErr)
	}
	return dataDirs[layout]
}

// resolve resolves workload w (all its queries, or those named) against a local directory, as
// pqcache bench does before any query runs.
func resolve(t *testing.T, w *workload.Workload, dir string, names ...string) *workload.Resolved {
	t.Helper()
	queries, err := w.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	r, err := workload.Resolve(context.Background(), w, queries, workload.Source{Data: workload.Dir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tpchWorkload is the built-in tpch workload: the 22 queries, whose SQL Spark runs.
func tpchWorkload(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Builtin(workload.TPCH)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runAll runs a resolved workload once, in session isolation (one process, for Spark one
// application, for every query), and returns the run and the results by query name, failing the test
// on any query that did not succeed.
func runAll(t *testing.T, e bench.Engine, r *workload.Resolved, data string, opts ...func(*bench.Spec)) (*wire.BenchResult, map[string]wire.QueryResult) {
	t.Helper()
	spec := bench.Spec{Engine: e, Data: data, Workload: r, Iterations: 1, Isolation: wire.IsolationSession, QueryTimeout: 10 * time.Minute}
	for _, o := range opts {
		o(&spec)
	}
	res, err := bench.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]wire.QueryResult{}
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			t.Errorf("%s %s over %s: %s (exit %d): %s", e.Name(), q.Name, data, q.Status, q.ExitCode, q.StderrTail)
		}
		out[q.Name] = q
	}
	return res, out
}

// duckdbResults are DuckDB's answers to the 22 queries over the flat SF 0.01 data, computed once.
var (
	duckOnce    sync.Once
	duckResults map[string]wire.QueryResult
)

func duckdbResults(t *testing.T) map[string]wire.QueryResult {
	t.Helper()
	data := tpch(t, duckdb.LayoutFlat)
	duckOnce.Do(func() {
		t.Setenv(duckdbEnv, "1")
		_, duckResults = runAll(t, duckdbEngine(), resolve(t, tpchWorkload(t), data), data)
	})
	if len(duckResults) != 22 {
		t.Fatal("DuckDB did not answer every query")
	}
	return duckResults
}

// assertSameAnswers fails for each query whose digest or row count is not DuckDB's.
func assertSameAnswers(t *testing.T, what string, got map[string]wire.QueryResult, names []string) {
	t.Helper()
	want := duckdbResults(t)
	for _, q := range names {
		if got[q].Digest == "" || got[q].Digest != want[q].Digest || got[q].Rows != want[q].Rows {
			t.Errorf("%s %s: digest %s (%d rows), DuckDB %s (%d rows)", q, what, got[q].Digest, got[q].Rows, want[q].Digest, want[q].Rows)
		}
	}
}

// TestAllQueriesMatchDuckDB runs the 22 queries' SQL in one Spark application (local[2]) over the
// flat layout: every one succeeds with DuckDB's answer, digest for digest, and each query's time is
// Spark's own (the timing file), apart from the application's start-up.
func TestAllQueriesMatchDuckDB(t *testing.T) {
	w := tpchWorkload(t)
	data := tpch(t, duckdb.LayoutFlat)
	want := duckdbResults(t)
	start := time.Now()
	res, got := runAll(t, engine(t), resolve(t, w, data), data)
	t.Logf("Spark local[2], 22 queries over SF 0.01 in one application: %s", time.Since(start).Round(time.Second))
	assertSameAnswers(t, "spark over local files", got, w.QueryNames())
	if want["q1"].Digest == want["q6"].Digest {
		t.Fatal("distinct queries share a digest")
	}
	if len(res.SessionStartupMillis) != 1 || res.SessionStartupMillis[0] <= 0 {
		t.Errorf("session start-up %v: want the application's start, reported once", res.SessionStartupMillis)
	}
	for _, q := range got {
		if q.Timing != wire.TimingEngine {
			t.Errorf("%s: timing %q, want the engine's own (%q)", q.Name, q.Timing, wire.TimingEngine)
		}
	}
}
