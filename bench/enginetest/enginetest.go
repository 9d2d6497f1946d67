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

// Package enginetest is the conformance suite of pqcache's query engines: the cases every built-in
// engine passes (Run), called by each engine package's test with its own engine (bench/duckdb,
// bench/polars, bench/spark), and the helpers those tests share for the cases that are their engine's
// alone. An engine conforms when, run by bench as a BenchRun's Job runs it:
//
//   - its answers are DuckDB's, digest for digest (bench digests a query's rows in bench/canon's
//     canonical format), for the 22 TPC-H queries and for a user's own named queries over Hive
//     partitions with file row numbers; and it prints a table of typed values (floats and float32s
//     near half a cent, decimals, escaped strings, extreme integers, dates, booleans, NULLs) exactly
//     as bench/canon spells them;
//   - it keeps the timing protocol: each query timed by the engine's own clock, its start-up reported
//     apart, in every isolation it runs;
//   - it reads s3:// files from a real S3 server (versitygw on 127.0.0.1, test/s3test), one table from
//     the volume and the bucket at once, and the runner counts the bytes it received;
//   - it runs both kinds of workload, the built-in TPC-H and a user's named queries, and a query it
//     cannot answer is a failed result (exit status 1, the reason on stderr), not a failed run.
//
// The reference answers are DuckDB's, from the test binary itself: each engine package's TestMain is
// Main, which makes a re-executed test binary a DuckDB query process doing what `pqcache bench-query`
// does, and DuckDB() is that engine. The data, TPC-H at SF 0.01 flat and partitioned with the typed
// table beside it, is generated once per test binary ($PQCACHE_TPCH_EXTENSION, else an extension
// linked here) and removed when Main returns. Only tests import this package.
package enginetest

import (
	"cmp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/netdev"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// Engine is an engine under test, as its package's test sets it up.
type Engine struct {
	// Engine starts the engine's query processes (with two threads or task slots, as the tests run).
	Engine bench.Engine
	// Isolations are the isolations the engine runs (wire.IsolationProcess, wire.IsolationSession);
	// the first is the one the cases run in.
	Isolations []string
	// PolarsForms says the engine runs a query's Polars form when it has one: TPC-H's SQL is then
	// run apart, as a workload without Polars forms.
	PolarsForms bool
	// Failures are queries the engine fails in its own ways, besides a query that names a missing
	// column, which every engine fails.
	Failures []Failure
	// QueryTimeout bounds one query (0: two minutes).
	QueryTimeout time.Duration
	// S3Queries are the TPC-H queries the S3 case runs (none: all 22). The TPCH case has checked every
	// query's SQL already; over s3:// the point is the reads, so an engine whose every query costs
	// seconds (Spark) may run a few that read lineitem's halves from both places, each a different
	// plan: a scan, a filter, joins.
	S3Queries []string
}

// Failure is a query that an engine fails with exit status 1, its stderr saying Want.
type Failure struct {
	workload.Query
	Want string
}

// TimestampRefused is a query whose answer is a timestamp, which the canonical format does not
// spell: the Python engines' canon.py refuses it, telling the user to cast it to a date or a string.
var TimestampRefused = Failure{Query: workload.Query{Name: "timestamp", SQL: "SELECT CAST(l_shipdate AS TIMESTAMP) AS shipped FROM lineitem LIMIT 1"},
	Want: "a timestamp"}

// missingColumn is a query every engine fails, naming the column.
var missingColumn = Failure{Query: workload.Query{Name: "missing-column", SQL: "SELECT no_such_column FROM lineitem"}, Want: "no_such_column"}

// spec is a run of r over data by the engine under test: once, in its first isolation.
func (e Engine) spec(r *workload.Resolved, data string) bench.Spec {
	return bench.Spec{Engine: e.Engine, Data: data, Workload: r, Iterations: 1, Isolation: e.Isolations[0],
		QueryTimeout: cmp.Or(e.QueryTimeout, defaultTimeout)}
}

// Run runs the conformance suite on the engine, one subtest per case: TPCH (the 22 queries over the
// flat data in each isolation: answers and timing), TPCHSQLForms (only for an engine with Polars
// forms), S3 (the 22, or the engine's S3Queries, over a bucket and a mixed-direct table) and UserWorkload (a user's queries: their
// Answers, the typed table's CanonicalValues, and the Failures).
func Run(t *testing.T, e Engine) {
	if e.Engine == nil || len(e.Isolations) == 0 {
		t.Fatal("the engine under test needs an engine and its isolations")
	}
	t.Run("TPCH", func(t *testing.T) { testTPCH(t, e) })
	if e.PolarsForms {
		t.Run("TPCHSQLForms", func(t *testing.T) { testSQLForms(t, e) })
	}
	t.Run("S3", func(t *testing.T) { testS3(t, e) })
	t.Run("UserWorkload", func(t *testing.T) { testUserWorkload(t, e) })
}

// testTPCH runs the 22 TPC-H queries over the flat data in each isolation the engine runs: DuckDB's
// answers, each query timed by the engine, its start-up apart.
func testTPCH(t *testing.T, e Engine) {
	w := TPCHWorkload(t)
	data := TPCH(t, duckdb.LayoutFlat)
	if want := TPCHAnswers(t); want["q1"].Digest == want["q6"].Digest {
		t.Fatal("distinct queries share a digest: the digests would not tell answers apart")
	}
	for _, iso := range e.Isolations {
		t.Run(iso, func(t *testing.T) {
			spec := e.spec(Resolve(t, w, data), data)
			spec.Isolation = iso
			start := time.Now()
			res, got := RunWorkload(t, spec)
			t.Logf("%s, 22 queries over SF 0.01 in %s isolation: %s", e.Engine.Name(), iso, time.Since(start).Round(time.Second))
			AssertTPCHAnswers(t, e.Engine.Name()+" in "+iso+" isolation", got, w.QueryNames())
			CheckTiming(t, res)
		})
	}
}

// CheckTiming fails unless every succeeded query of res was timed by the engine's own clock and its
// start-up reported apart: per process in process isolation, within each process's wall time; per
// session in session isolation.
func CheckTiming(t *testing.T, res *wire.BenchResult) {
	t.Helper()
	for _, q := range res.Queries {
		if q.Status != wire.StatusSucceeded {
			continue
		}
		if q.Timing != wire.TimingEngine || len(q.Millis) != res.Iterations {
			t.Errorf("%s: timing %q over %d iterations, want the engine's own (%q) over %d", q.Name, q.Timing, len(q.Millis), wire.TimingEngine, res.Iterations)
			continue
		}
		switch res.Isolation {
		case wire.IsolationProcess:
			// Each figure is rounded down to a millisecond apart, so their sum may pass the wall time's by one.
			for i := range q.Millis {
				if i >= len(q.StartupMillis) || q.StartupMillis[i] <= 0 || q.StartupMillis[i]+q.Millis[i] > q.WallMillis[i]+1 {
					t.Errorf("%s: query %v ms, start-up %v ms, wall %v ms: want a start-up, and start-up + query within the wall time",
						q.Name, q.Millis, q.StartupMillis, q.WallMillis)
					break
				}
			}
		case wire.IsolationSession:
			if len(q.StartupMillis) != 0 {
				t.Errorf("%s: start-up %v ms of its own in a session, want the session's only", q.Name, q.StartupMillis)
			}
		}
	}
	if res.Isolation == wire.IsolationSession &&
		(len(res.SessionStartupMillis) != res.Iterations || slices.ContainsFunc(res.SessionStartupMillis, func(ms int64) bool { return ms <= 0 })) {
		t.Errorf("session start-ups %v: want each measured session's start, reported once", res.SessionStartupMillis)
	}
	if res.StartupMillis <= 0 {
		t.Errorf("the run's start-up %d ms: want the engine's, reported apart from its queries", res.StartupMillis)
	}
}

// testSQLForms runs the 22 TPC-H queries' SQL, the text DuckDB runs, on an engine that would run
// their Polars forms (what a user's workload without them gets): DuckDB's answers too.
func testSQLForms(t *testing.T, e Engine) {
	w := TPCHWorkload(t)
	for i := range w.Queries {
		w.Queries[i].Polars = ""
	}
	data := TPCH(t, duckdb.LayoutFlat)
	_, got := RunWorkload(t, e.spec(Resolve(t, w, data), data))
	AssertTPCHAnswers(t, e.Engine.Name()+" SQL", got, w.QueryNames())
}

// testS3 puts the partitioned data in a versitygw bucket and runs the TPC-H queries over s3://
// with the endpoint, path style and credentials a BenchRun's Job gives: every table from the bucket
// but lineitem, which is mixed-direct (one partition from the volume, two from the bucket). DuckDB's
// answers, and the runner saw the bytes cross the loopback.
func testS3(t *testing.T, e Engine) {
	data := TPCH(t, duckdb.LayoutPartitioned)
	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	PutTree(t, srv, "tpch", "sf0.01/", data)
	WithCredentials(t)
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	w := TPCHWorkload(t)
	names := w.QueryNames()
	if len(e.S3Queries) > 0 {
		names = e.S3Queries
	}
	local := Resolve(t, w, data, names...)
	bucketPart, volumePart := "lineitem/batch=1/", "lineitem/batch=0/"
	fresh := []string{bucketPart, "lineitem/batch=2/"}
	for name := range local.Tables {
		if name != "lineitem" {
			fresh = append(fresh, name+"/")
		}
	}
	r := InBucket(local, data, "s3://tpch/sf0.01", access, fresh...)
	files := r.Tables["lineitem"].Files
	if n := len(slices.DeleteFunc(slices.Clone(files), func(f string) bool { return !strings.HasPrefix(f, "s3://") })); n == 0 || n == len(files) {
		t.Fatalf("the mixed lineitem table is not mixed: %v", files)
	}
	// Either half of lineitem changes the answer: an engine that skipped the volume's files or the
	// bucket's would not give DuckDB's.
	for _, part := range []string{volumePart, bucketPart} {
		if Answers(t, Without(Resolve(t, w, data, "q1"), part), data)["q1"].Digest == TPCHAnswers(t)["q1"].Digest {
			t.Fatalf("q1 without %s has the whole data's answer: the test would not see it unread", part)
		}
	}

	spec := e.spec(r, "s3://tpch/sf0.01")
	// Standalone, the bucket is on 127.0.0.1: its bytes cross the loopback.
	spec.NetInterfaces = netdev.Interfaces{Only: []string{netdev.Loopback}}
	start := time.Now()
	res, got := RunWorkload(t, spec)
	t.Logf("%s, %d queries over s3:// in %s isolation: %s; %d bytes received over the loopback", e.Engine.Name(), len(names), spec.Isolation,
		time.Since(start).Round(time.Second), res.NetworkReadBytes)
	AssertTPCHAnswers(t, e.Engine.Name()+" over s3://", got, names)
	if res.NetworkReadBytes == 0 {
		t.Error("no network reads counted over s3://: the engine's reads were not seen")
	}
}

// testUserWorkload runs a user's workload (Lake) and the failing queries in one run, as a BenchRun
// with its own queries would (the failures last: a session engine starts a new process after each).
func testUserWorkload(t *testing.T, e Engine) {
	w := Lake(t)
	answered := w.QueryNames()
	failures := append([]Failure{missingColumn}, e.Failures...)
	for _, f := range failures {
		w.Queries = append(w.Queries, f.Query)
	}
	data := TPCH(t, duckdb.LayoutPartitioned)
	res := Bench(t, e.spec(Resolve(t, w, data), data))
	got := map[string]wire.QueryResult{}
	for _, q := range res.Queries {
		got[q.Name] = q
	}
	t.Run("Answers", func(t *testing.T) {
		for _, name := range answered {
			if q := got[name]; q.Status != wire.StatusSucceeded {
				t.Errorf("%s: %s (exit %d): %s", name, q.Status, q.ExitCode, q.StderrTail)
			}
		}
		AssertAnswers(t, e.Engine.Name(), got, Answers(t, Resolve(t, w, data, answered...), data), answered)
		if got["by-batch"].Rows != 3 {
			t.Errorf("by-batch: %d rows, want one per lineitem partition (3)", got["by-batch"].Rows)
		}
	})
	t.Run("CanonicalValues", func(t *testing.T) { checkValues(t, e, got[ValuesQuery], Resolve(t, w, data, ValuesQuery), data) })
	t.Run("Failures", func(t *testing.T) {
		for _, f := range failures {
			if q := got[f.Name]; q.Status != wire.StatusFailed || q.ExitCode != 1 || !strings.Contains(q.StderrTail, f.Want) {
				t.Errorf("%s: %s, exit %d: %q; want Failed, exit 1, saying %q", f.Name, q.Status, q.ExitCode, q.StderrTail, f.Want)
			}
		}
	})
}
