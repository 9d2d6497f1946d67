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
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// TestStreamsReturnTheAnswersOfOneStream runs the 22 TPC-H queries (SF 0.01) on the built-in DuckDB
// in one stream and in two concurrent streams, in both isolations: two streams return the same rows,
// digest for digest, each query ran once per stream, and the run reports each stream's time, its
// throughput and the percentiles over both streams. --streams outside 1..16 is refused.
func TestStreamsReturnTheAnswersOfOneStream(t *testing.T) {
	dir := tpchData(t, "0.01")
	one := benchJSON(t, "--data", dir, "--engine", "duckdb")
	if one.Streams != 1 || len(one.StreamMillis) != 1 || one.QueriesPerHour <= 0 {
		t.Fatalf("one stream: streams %d, stream times %v, %d queries per hour", one.Streams, one.StreamMillis, one.QueriesPerHour)
	}
	for _, isolation := range []string{wire.IsolationProcess, wire.IsolationSession} {
		two := benchJSON(t, "--data", dir, "--engine", "duckdb", "--streams", "2", "--isolation", isolation)
		if two.Streams != 2 || len(two.StreamMillis) != 2 || two.QueriesPerHour <= 0 || len(two.Queries) != 22 {
			t.Fatalf("%s: streams %d, stream times %v, %d queries per hour, %d queries", isolation, two.Streams, two.StreamMillis, two.QueriesPerHour, len(two.Queries))
		}
		for i, q := range two.Queries {
			o := one.Queries[i]
			if q.Status != wire.StatusSucceeded || q.Name != o.Name || q.Digest == "" || q.Digest != o.Digest || q.Rows != o.Rows {
				t.Errorf("%s %s: %s %s, digest %s (%d rows); one stream: %s (%d rows)", isolation, q.Name, q.Status, q.StderrTail, q.Digest, q.Rows, o.Digest, o.Rows)
			}
			if len(q.Millis) != 2 || q.P50Millis != q.MinMillis || q.P95Millis != q.MaxMillis || q.P99Millis != q.MaxMillis {
				t.Errorf("%s %s: executions %v, p50 %d, p95 %d, p99 %d: want one per stream, p50 the faster", isolation, q.Name, q.Millis, q.P50Millis, q.P95Millis, q.P99Millis)
			}
		}
	}
	for _, n := range []string{"0", "17"} {
		out, err := run(t, "bench", "--data", dir, "--streams", n)
		if err == nil || !strings.Contains(out+err.Error(), "want 1 to 16") {
			t.Errorf("--streams %s: %v\n%s", n, err, out)
		}
	}
}
