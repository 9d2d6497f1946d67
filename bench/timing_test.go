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

package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
)

// slowStartEngine is a command engine, a shell script as a user would write one: it sleeps 500 ms
// before its query (its start-up), then reports ready, runs its "query" and reports the query's time
// through the timing protocol when report is set.
func slowStartEngine(report bool) CommandEngine {
	script := `sleep 0.5
[ "$REPORT" = 1 ] && echo "ready_unix_ns=$(date +%s%N)" >> "$PQCACHE_TIMING_FILE"
s=$(date +%s%N)
echo "FRANCE|$1"
e=$(date +%s%N)
[ "$REPORT" = 1 ] && echo "query_ms=$(( (e - s) / 1000000 ))" >> "$PQCACHE_TIMING_FILE"
exit 0`
	if report {
		script = "REPORT=1\n" + script
	}
	return CommandEngine{Args: []string{"sh", "-c", script, "sh", "{query}"}}
}

func oneQuery(name string) *workload.Resolved {
	return &workload.Resolved{Workload: "fake", Tables: map[string]workload.ResolvedTable{}, Queries: []workload.Query{{Name: name, SQL: "fake"}}}
}

// TestQueryTimeExcludesStartUp: an engine that sleeps 500 ms before its query and reports its query
// time has a query time below the sleep and a start-up above it; its whole-process wall time is kept
// beside them. Without a report, the wall time is the query time, labelled as such.
func TestQueryTimeExcludesStartUp(t *testing.T) {
	spec := Spec{Engine: slowStartEngine(true), Data: "/data", Workload: oneQuery("q1"), Iterations: 2, QueryTimeout: 10 * time.Second}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	q := res.Queries[0]
	if q.Status != wire.StatusSucceeded || q.Timing != wire.TimingEngine || len(q.Millis) != 2 || len(q.StartupMillis) != 2 || len(q.WallMillis) != 2 {
		t.Fatalf("result: %+v", q)
	}
	if q.MaxMillis >= 500 {
		t.Errorf("query time %v ms, want below the 500 ms sleep", q.Millis)
	}
	for i := range q.Millis {
		if q.StartupMillis[i] < 500 || q.WallMillis[i] < q.StartupMillis[i]+q.Millis[i] {
			t.Errorf("iteration %d: start-up %d ms (want ≥ 500), wall %d ms (want ≥ start-up + query %d ms)", i, q.StartupMillis[i], q.WallMillis[i], q.Millis[i])
		}
	}
	if res.GeometricMeanMillis >= 500 || res.WallGeometricMeanMillis < 500 {
		t.Errorf("geometric means: query %d ms, wall %d ms", res.GeometricMeanMillis, res.WallGeometricMeanMillis)
	}
	if res.StartupMillis != q.MedianStartupMillis {
		t.Errorf("the run's start-up %d ms, want its one query's median %d ms", res.StartupMillis, q.MedianStartupMillis)
	}

	spec.Engine = slowStartEngine(false)
	res, err = Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if q := res.Queries[0]; q.Timing != wire.TimingWall || q.MinMillis < 500 || len(q.StartupMillis) != 0 || q.Millis[0] != q.WallMillis[0] {
		t.Errorf("an engine that reports nothing: %+v, want its wall times (≥ 500 ms), labelled wall", q)
	}
}

// sessionEngine is a command engine that runs {queries} in one process, as the session protocol
// says: each query's rows, then the delimiter line, and its time in the timing file. Query "bad"
// fails (exit 3), "slow" hangs; every other query returns one row naming it.
func sessionEngine() CommandEngine {
	script := `echo "ready_unix_ns=$(date +%s%N) rss_bytes=1" >> "$PQCACHE_TIMING_FILE"
IFS=,
for q in $1; do
  case $q in
    bad) echo "Binder Error: $q" >&2; exit 3 ;;
    slow) sleep 10 ;;
  esac
  echo "$q|1"
  echo "$q|2"
  printf '\036pqcache:end-of-query\n'
  echo "query=$q query_ms=1.5" >> "$PQCACHE_TIMING_FILE"
done`
	return CommandEngine{Args: []string{"sh", "-c", script, "sh", "{queries}"}}
}

// TestSessionIsolation runs queries in one process per iteration: each query's rows and time are
// its own (the digests are process isolation's), a failing query costs only itself (the queries
// after it run in a new session), a hanging one times out alone, and an engine that cannot run
// sessions is refused.
func TestSessionIsolation(t *testing.T) {
	w := &workload.Resolved{Workload: "fake", Tables: map[string]workload.ResolvedTable{}}
	for _, n := range []string{"a", "bad", "b", "slow", "c"} {
		w.Queries = append(w.Queries, workload.Query{Name: n, SQL: "fake"})
	}
	spec := Spec{Engine: sessionEngine(), Data: "/data", Workload: w, Iterations: 2, Warmups: 1, QueryTimeout: time.Second, Isolation: wire.IsolationSession}
	session, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Isolation = wire.IsolationProcess
	process, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if session.Isolation != wire.IsolationSession || len(session.SessionStartupMillis) != 2 {
		t.Errorf("session result: isolation %q, session start-ups %v", session.Isolation, session.SessionStartupMillis)
	} else if s := session.SessionStartupMillis; session.StartupMillis != (s[0]+s[1])/2 {
		t.Errorf("the run's start-up %d ms, want the median of the sessions' %v", session.StartupMillis, s)
	}
	for i, q := range session.Queries {
		p := process.Queries[i]
		switch q.Name {
		case "bad":
			if q.Status != wire.StatusFailed || q.ExitCode != 3 || !strings.Contains(q.StderrTail, "Binder Error") {
				t.Errorf("bad: %+v", q)
			}
		case "slow":
			if q.Status != wire.StatusTimeout {
				t.Errorf("slow: %+v", q)
			}
		default:
			if q.Status != wire.StatusSucceeded || q.Rows != 2 || q.Digest != p.Digest || q.Timing != wire.TimingEngine || q.MedianMillis != 2 || len(q.Millis) != 2 {
				t.Errorf("%s: session %+v, process digest %s", q.Name, q, p.Digest)
			}
		}
	}
	spec.Isolation, spec.Engine = wire.IsolationSession, CommandEngine{Args: []string{"echo", "{query}"}}
	if _, err := Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "{queries}") {
		t.Errorf("a command without {queries} in session isolation: %v", err)
	}
}

// TestTimingFile reads what engines write, and ignores what it cannot read.
func TestTimingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "timing")
	if err := os.WriteFile(path, []byte("ready_unix_ns=2000000000 rss_bytes=4096\nquery=q1 query_ms=12.6\nnonsense\nquery_ms=3\nquery=q2 query_ms=-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := readTimings(path)
	if ms, ok := tm.query("q1", false); !ok || ms != 13 {
		t.Errorf("q1: %d %v", ms, ok)
	}
	if _, ok := tm.query("q2", false); ok {
		t.Error("a negative time was accepted")
	}
	if ms, ok := tm.query("q9", true); !ok || ms != 3 {
		t.Errorf("the unnamed line in process isolation: %d %v", ms, ok)
	}
	if ms, ok := tm.startupMillis(1_500_000_000); !ok || ms != 500 || tm.readyRSS != 4096 {
		t.Errorf("start-up %d %v, rss %d", ms, ok, tm.readyRSS)
	}
	if none := readTimings(filepath.Join(t.TempDir(), "missing")); len(none.queryMillis) != 0 || none.readyUnixNanos != 0 {
		t.Errorf("a missing file: %+v", none)
	}
}
