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

package polars

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
// workload and the queries' names, comma-separated), so that both engines' answers go through bench.Run and its digest
// alike.
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

// engine is the Polars engine of this checkout: run.py beside this file and the interpreter Find
// chooses ($PQCACHE_POLARS_PYTHON, which make test sets, else bin/polars-venv). The test fails,
// saying what to run, without it.
func engine(t *testing.T) Engine {
	t.Helper()
	e, err := Find(t.Context(), ".", "")
	if err != nil {
		t.Fatalf("the Polars engine cannot run here: %v", err)
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

func tpch(t *testing.T, layout duckdb.Layout) string {
	t.Helper()
	dataOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pqcache-polars-test-")
		if err != nil {
			dataErr = err
			return
		}
		ctx := context.Background()
		ext := filepath.Join(dir, "tpch.duckdb_extension")
		if dataErr = duckdb.BuildTPCHExtension(ctx, ext); dataErr != nil {
			return
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

// tpchWorkload is the built-in tpch workload: the 22 queries, each with SQL and a Polars form.
func tpchWorkload(t *testing.T) *workload.Workload {
	t.Helper()
	w, err := workload.Builtin(workload.TPCH)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// run runs a resolved workload once per query and returns the results by query name, failing the
// test on any query that did not succeed.
func run(t *testing.T, e bench.Engine, r *workload.Resolved, data string) map[string]wire.QueryResult {
	t.Helper()
	res, err := bench.Run(context.Background(), bench.Spec{Engine: e, Data: data, Workload: r, Iterations: 1, QueryTimeout: 2 * time.Minute})
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
	return out
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
		duckResults = run(t, duckdbEngine(), resolve(t, tpchWorkload(t), data), data)
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

// TestAllQueriesMatchDuckDB runs the 22 queries' Polars forms on the in-memory engine over the flat
// layout and on the streaming engine over the partitioned one: every one succeeds and returns
// DuckDB's answer, digest for digest.
func TestAllQueriesMatchDuckDB(t *testing.T) {
	w := tpchWorkload(t)
	for _, c := range []struct {
		engine string
		layout duckdb.Layout
	}{{"in-memory", duckdb.LayoutFlat}, {"streaming", duckdb.LayoutPartitioned}} {
		e := engine(t)
		e.PolarsEngine = c.engine
		data := tpch(t, c.layout)
		assertSameAnswers(t, fmt.Sprintf("polars %s over %s", c.engine, c.layout), run(t, e, resolve(t, w, data), data), w.QueryNames())
	}
	// The digests tell answers apart: distinct queries do not share one.
	if duckdbResults(t)["q1"].Digest == duckdbResults(t)["q6"].Digest {
		t.Fatal("distinct queries share a digest")
	}
}

// TestSQLFormsMatchDuckDB runs the 22 queries' SQL, the text DuckDB runs, through Polars' SQL
// interface (what a user workload without a Polars form gets): DuckDB's answers too.
func TestSQLFormsMatchDuckDB(t *testing.T) {
	w := tpchWorkload(t)
	for i := range w.Queries {
		w.Queries[i].Polars = ""
	}
	data := tpch(t, duckdb.LayoutFlat)
	assertSameAnswers(t, "polars SQL", run(t, engine(t), resolve(t, w, data), data), w.QueryNames())
}

// TestAutoEngine: Polars choosing its engine gives the same answers.
func TestAutoEngine(t *testing.T) {
	e := engine(t)
	e.PolarsEngine = "auto"
	data := tpch(t, duckdb.LayoutPartitioned)
	qs := []string{"q1", "q9", "q13", "q21"}
	assertSameAnswers(t, "polars auto", run(t, e, resolve(t, tpchWorkload(t), data, qs...), data), qs)
}

// TestEngineFromTheEnvironment: without --engine, run.py takes $PQCACHE_POLARS_ENGINE, and refuses
// an engine Polars does not have, before it reads anything (a usage error, exit status 2).
func TestEngineFromTheEnvironment(t *testing.T) {
	e := engine(t)
	data := tpch(t, duckdb.LayoutFlat)
	r := resolve(t, tpchWorkload(t), data, "q6")
	t.Setenv(EnvEngine, "streaming")
	assertSameAnswers(t, "polars with the engine from the environment", run(t, e, r, data), []string{"q6"})

	t.Setenv(EnvEngine, "gpu-please")
	res, err := bench.Run(context.Background(), bench.Spec{Engine: e, Data: data, Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if q := res.Queries[0]; q.Status != wire.StatusFailed || q.ExitCode != 2 || !strings.Contains(q.StderrTail, "gpu-please") {
		t.Errorf("an unknown engine from the environment: %s, exit %d: %s; want Failed, exit 2, naming it", q.Status, q.ExitCode, q.StderrTail)
	}
}

// TestStreamingSpillsUnderTMPDIR forces the streaming engine to spill (a 1 MiB memory budget): the
// answers are DuckDB's, and the spilled files went to a directory of the query's own under $TMPDIR,
// removed at its end, not to Polars' default /var/tmp/polars-USER, which an image's read-only root
// file system does not have.
func TestStreamingSpillsUnderTMPDIR(t *testing.T) {
	data := tpch(t, duckdb.LayoutFlat)
	duckdbResults(t) // before $TMPDIR changes: the data and DuckDB's answers live elsewhere
	qs := []string{"q9", "q18"}
	r := resolve(t, tpchWorkload(t), data, qs...)
	e := engine(t)
	e.PolarsEngine = "streaming"
	before, _ := filepath.Glob("/var/tmp/polars-*")
	beside, _ := os.ReadDir(e.Dir)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("POLARS_OOC_SPILL_DIR", "")
	os.Unsetenv("POLARS_OOC_SPILL_DIR") // t.Setenv restores it after the test
	t.Setenv("POLARS_OOC_MEMORY_BUDGET_MB", "1")
	assertSameAnswers(t, "polars streaming with a 1 MiB budget", run(t, e, r, data), qs)
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the queries left %d entries in $TMPDIR, e.g. %s", len(left), left[0].Name())
	}
	if after, _ := filepath.Glob("/var/tmp/polars-*"); len(after) > len(before) {
		t.Errorf("Polars spilled to its default directory: %v", after)
	}
	if after, _ := os.ReadDir(e.Dir); len(after) != len(beside) {
		t.Errorf("Polars spilled into run.py's directory: %d entries, %d before", len(after), len(beside))
	}
}
