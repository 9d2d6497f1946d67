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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/duckdb"
	"github.com/pqcache/pqcache/bench/enginetest"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/test/s3test"
)

// The conformance suite (conformance_test.go) runs Polars' in-memory engine; these are the rest of
// Polars' engines and settings.

// run runs a resolved workload once per query on e and returns the results by query name, failing
// the test on any query that did not succeed.
func run(t *testing.T, e bench.Engine, r *workload.Resolved, data string) map[string]wire.QueryResult {
	t.Helper()
	_, got := enginetest.RunWorkload(t, bench.Spec{Engine: e, Data: data, Workload: r, Iterations: 1, QueryTimeout: 2 * time.Minute})
	return got
}

// TestStreamingEngine runs the 22 queries' Polars forms on the streaming engine over the partitioned
// layout, and six of them over the same files in a bucket: DuckDB's answers, digest for digest.
func TestStreamingEngine(t *testing.T) {
	e := engine(t)
	e.PolarsEngine = "streaming"
	w := enginetest.TPCHWorkload(t)
	data := enginetest.TPCH(t, duckdb.LayoutPartitioned)
	enginetest.AssertTPCHAnswers(t, "polars streaming over partitioned", run(t, e, enginetest.Resolve(t, w, data), data), w.QueryNames())

	srv := s3test.Start(t)
	srv.CreateBucket(t, "tpch")
	enginetest.PutTree(t, srv, "tpch", "sf0.01/partitioned/", data)
	enginetest.WithCredentials(t)
	access := wire.S3Access{Endpoint: srv.Endpoint, Region: s3test.Region, PathStyle: true}
	some := []string{"q1", "q3", "q5", "q9", "q18", "q21"}
	r := enginetest.InBucket(enginetest.Resolve(t, w, data, some...), data, "s3://tpch/sf0.01/partitioned", access)
	enginetest.AssertTPCHAnswers(t, "polars streaming s3 partitioned", run(t, e, r, "s3://tpch/sf0.01/partitioned"), some)
}

// TestAutoEngine: Polars choosing its engine gives the same answers.
func TestAutoEngine(t *testing.T) {
	e := engine(t)
	e.PolarsEngine = "auto"
	data := enginetest.TPCH(t, duckdb.LayoutPartitioned)
	qs := []string{"q1", "q9", "q13", "q21"}
	enginetest.AssertTPCHAnswers(t, "polars auto", run(t, e, enginetest.Resolve(t, enginetest.TPCHWorkload(t), data, qs...), data), qs)
}

// TestEngineFromTheEnvironment: without --engine, run.py takes $PQCACHE_POLARS_ENGINE, and refuses
// an engine Polars does not have, before it reads anything (a usage error, exit status 2).
func TestEngineFromTheEnvironment(t *testing.T) {
	e := engine(t)
	data := enginetest.TPCH(t, duckdb.LayoutFlat)
	r := enginetest.Resolve(t, enginetest.TPCHWorkload(t), data, "q6")
	t.Setenv(EnvEngine, "streaming")
	enginetest.AssertTPCHAnswers(t, "polars with the engine from the environment", run(t, e, r, data), []string{"q6"})

	t.Setenv(EnvEngine, "gpu-please")
	res := enginetest.Bench(t, bench.Spec{Engine: e, Data: data, Workload: r, Iterations: 1, QueryTimeout: time.Minute})
	if q := res.Queries[0]; q.Status != wire.StatusFailed || q.ExitCode != 2 || !strings.Contains(q.StderrTail, "gpu-please") {
		t.Errorf("an unknown engine from the environment: %s, exit %d: %s; want Failed, exit 2, naming it", q.Status, q.ExitCode, q.StderrTail)
	}
}

// TestStreamingSpillsUnderTMPDIR forces the streaming engine to spill (a 1 MiB memory budget): the
// answers are DuckDB's, and the spilled files went to a directory of the query's own under $TMPDIR,
// removed at its end, not to Polars' default /var/tmp/polars-USER, which an image's read-only root
// file system does not have.
func TestStreamingSpillsUnderTMPDIR(t *testing.T) {
	data := enginetest.TPCH(t, duckdb.LayoutFlat)
	enginetest.TPCHAnswers(t) // before $TMPDIR changes: the data and DuckDB's answers live elsewhere
	qs := []string{"q9", "q18"}
	r := enginetest.Resolve(t, enginetest.TPCHWorkload(t), data, qs...)
	e := engine(t)
	e.PolarsEngine = "streaming"
	before, _ := filepath.Glob("/var/tmp/polars-*")
	beside, _ := os.ReadDir(e.Dir)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("POLARS_OOC_SPILL_DIR", "")
	os.Unsetenv("POLARS_OOC_SPILL_DIR") // t.Setenv restores it after the test
	t.Setenv("POLARS_OOC_MEMORY_BUDGET_MB", "1")
	enginetest.AssertTPCHAnswers(t, "polars streaming with a 1 MiB budget", run(t, e, r, data), qs)
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
