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
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
)

func TestPermutationsAreDeterministicAndDistinct(t *testing.T) {
	ps := Permutations(22, wire.MaxStreams)
	if !slices.Equal(ps[0], identity(22)) {
		t.Fatalf("stream 0 runs %v, want the workload's order", ps[0])
	}
	again := Permutations(22, 4)
	for s, p := range ps {
		if s < len(again) && !slices.Equal(p, again[s]) {
			t.Fatalf("stream %d: %v, then %v with fewer streams: the orders must not depend on the number of streams", s, p, again[s])
		}
		sorted := slices.Clone(p)
		slices.Sort(sorted)
		if !slices.Equal(sorted, identity(22)) {
			t.Fatalf("stream %d: %v is not a permutation of 22 queries", s, p)
		}
		for r := range s {
			if slices.Equal(p, ps[r]) {
				t.Fatalf("streams %d and %d run the same order %v", r, s, p)
			}
		}
	}
	// Four queries have 24 orders: 16 streams still get distinct ones, drawn again where repeated.
	small := Permutations(4, wire.MaxStreams)
	for s := range small {
		for r := range s {
			if slices.Equal(small[s], small[r]) {
				t.Fatalf("4 queries: streams %d and %d run the same order %v", r, s, small[s])
			}
		}
	}
	// Two queries have two orders: more streams repeat them, and each is still a permutation.
	for _, p := range Permutations(2, 3) {
		if len(p) != 2 || p[0] == p[1] {
			t.Fatalf("2 queries: %v", p)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	hundred := make([]int64, 100)
	for i := range hundred {
		hundred[i] = int64(100 - i) // unsorted: 100 down to 1
	}
	for _, c := range []struct {
		vs   []int64
		p    float64
		want int64
	}{
		{hundred, 50, 50}, {hundred, 95, 95}, {hundred, 99, 99}, {hundred, 100, 100},
		{[]int64{7}, 50, 7}, {[]int64{7}, 99, 7},
		{[]int64{30, 10, 20}, 50, 20}, {[]int64{30, 10, 20}, 95, 30},
		{[]int64{10, 20, 30, 40}, 50, 20}, {nil, 50, 0},
	} {
		if got := percentile(c.vs, c.p); got != c.want {
			t.Errorf("p%.0f of %v = %d, want %d", c.p, c.vs, got, c.want)
		}
	}
	if hundred[0] != 100 {
		t.Fatal("percentile sorted its input")
	}
}

// TestStreamsRunConcurrently runs two streams of four queries, each a real process that sleeps
// 200 ms and logs when it starts and ends: the log shows two queries running at once (never more),
// each query ran once per stream, and the result holds both streams' executions.
func TestStreamsRunConcurrently(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $(date +%s%N)" >> "$0"; sleep 0.2; echo "$1|rows of $1"; echo "end $(date +%s%N)" >> "$0"`
	w := &workload.Resolved{Workload: "sleep", Tables: map[string]workload.ResolvedTable{}}
	for q := 1; q <= 4; q++ {
		w.Queries = append(w.Queries, workload.Query{Name: fmt.Sprintf("q%d", q), SQL: "fake"})
	}
	spec := Spec{Engine: CommandEngine{Args: []string{"/bin/sh", "-c", script, log, "{query}"}}, Workload: w, Iterations: 1, Streams: 2}
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Streams != 2 || len(res.StreamMillis) != 2 || res.QueriesPerHour <= 0 || len(res.FailedQueries) > 0 {
		t.Fatalf("streams %d, stream times %v, %d queries per hour, failed %v", res.Streams, res.StreamMillis, res.QueriesPerHour, res.FailedQueries)
	}
	for _, q := range res.Queries {
		if len(q.Millis) != 2 || q.P50Millis == 0 || q.P99Millis < q.P50Millis || q.Rows != 1 {
			t.Fatalf("%s: %d executions %v, p50 %d, p99 %d, %d rows: want one per stream", q.Name, len(q.Millis), q.Millis, q.P50Millis, q.P99Millis, q.Rows)
		}
	}
	running, most, starts := 0, 0, 0
	for _, e := range readLog(t, log) {
		if e.start {
			running++
			starts++
		} else {
			running--
		}
		most = max(most, running)
	}
	if starts != 8 || most != 2 {
		t.Fatalf("%d query processes started, at most %d at once: want 8, two at once", starts, most)
	}
}

// logEvent is a query process's start or end, as it logged it.
type logEvent struct {
	at    int64
	start bool
}

// readLog reads the events of the streams test's log, in time order (an end before a start at the
// same nanosecond: runs that only touch do not overlap).
func readLog(t *testing.T, path string) []logEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []logEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		kind, at, _ := strings.Cut(line, " ")
		n, err := strconv.ParseInt(at, 10, 64)
		if err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		events = append(events, logEvent{at: n, start: kind == "start"})
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return !events[i].start && events[j].start
	})
	return events
}

// The Markdown of a run with streams gives its throughput, each stream's time and the percentiles.
func TestMarkdownShowsTheStreams(t *testing.T) {
	res := &wire.BenchResult{Engine: "duckdb", Streams: 2, StreamMillis: []int64{4100, 4200}, QueriesPerHour: 1234, Queries: []wire.QueryResult{
		{Name: "q1", Status: wire.StatusSucceeded, Millis: []int64{10, 30}, QueryMeasurements: wire.QueryMeasurements{P50Millis: 10, P95Millis: 30, P99Millis: 30}}}}
	var b strings.Builder
	if err := WriteMarkdown(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1234 queries per hour with 2 stream(s)", "Each stream's time: 4100 ms, 4200 ms.", "| q1 | 2 | 10 ms | 30 ms | 30 ms |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, b.String())
		}
	}
}
