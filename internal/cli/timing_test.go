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
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// benchJSON runs `pqcache bench` once per query with args and returns its result.
func benchJSON(t *testing.T, args ...string) *wire.BenchResult {
	t.Helper()
	out, err := run(t, append([]string{"bench", "--iterations", "1", "--warmups", "0", "--threads", "2", "--json", "-"}, args...)...)
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	var r wire.BenchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestEnginesTimeTheirQueriesInBothIsolations runs the 22 TPC-H queries (SF 0.01) on the built-in
// DuckDB and on Polars, in process and in session isolation. In process isolation each engine
// reports its own query time, below the process's wall time, and its start-up; session isolation
// returns the same answers, digest for digest, with the engines' own times too; and Polars' answers
// are DuckDB's.
func TestEnginesTimeTheirQueriesInBothIsolations(t *testing.T) {
	dir := tpchData(t, "0.01")
	engines := map[string][]string{
		"duckdb": {"--engine", "duckdb"},
		"polars": {"--engine", "polars", "--polars-dir", checkoutPolarsDir(t)},
	}
	digests := map[string]map[string]string{}
	for name, flags := range engines {
		process := benchJSON(t, append([]string{"--data", dir, "--isolation", "process"}, flags...)...)
		session := benchJSON(t, append([]string{"--data", dir, "--isolation", "session"}, flags...)...)
		if len(process.Queries) != 22 || len(session.Queries) != 22 || session.Isolation != wire.IsolationSession || len(session.SessionStartupMillis) != 1 {
			t.Fatalf("%s: %d and %d queries, isolation %q, session start-ups %v", name, len(process.Queries), len(session.Queries), session.Isolation, session.SessionStartupMillis)
		}
		digests[name] = map[string]string{}
		for i, p := range process.Queries {
			s := session.Queries[i]
			if p.Status != wire.StatusSucceeded || s.Status != wire.StatusSucceeded {
				t.Errorf("%s %s: process %s %s, session %s %s", name, p.Name, p.Status, p.StderrTail, s.Status, s.StderrTail)
				continue
			}
			if p.Timing != wire.TimingEngine || s.Timing != wire.TimingEngine {
				t.Errorf("%s %s: timing %q (process), %q (session), want the engine's", name, p.Name, p.Timing, s.Timing)
			}
			if p.Millis[0] >= p.WallMillis[0] || len(p.StartupMillis) != 1 || p.StartupMillis[0] <= 0 || p.StartupMillis[0]+p.Millis[0] > p.WallMillis[0] {
				t.Errorf("%s %s: query %v ms, start-up %v ms, wall %v ms: want query + start-up within the wall time", name, p.Name, p.Millis, p.StartupMillis, p.WallMillis)
			}
			if p.PeakAboveReadyBytes <= 0 || p.PeakMemoryBytes <= 0 {
				t.Errorf("%s %s: peak above ready %d, whole process %d", name, p.Name, p.PeakAboveReadyBytes, p.PeakMemoryBytes)
			}
			if p.Digest == "" || s.Digest != p.Digest || s.Rows != p.Rows {
				t.Errorf("%s %s: session digest %s (%d rows), process %s (%d rows)", name, p.Name, s.Digest, s.Rows, p.Digest, p.Rows)
			}
			digests[name][p.Name] = p.Digest
		}
		if process.GeometricMeanMillis >= process.WallGeometricMeanMillis {
			t.Errorf("%s: geometric mean %d ms in the engine, %d ms whole process", name, process.GeometricMeanMillis, process.WallGeometricMeanMillis)
		}
		t.Logf("%s: geometric mean %d ms (process isolation; %d ms whole process), %d ms (session)", name,
			process.GeometricMeanMillis, process.WallGeometricMeanMillis, session.GeometricMeanMillis)
	}
	for q, d := range digests["duckdb"] {
		if digests["polars"][q] != d {
			t.Errorf("%s: polars %s, duckdb %s", q, digests["polars"][q], d)
		}
	}
}
