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

package plugin

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

func TestResultsTableHasAQueryPerRowAndAResultPerColumn(t *testing.T) {
	done := metav1.Now()
	query := func(name string, ms int64, status datav1alpha1.QueryStatus) datav1alpha1.QueryResult {
		return datav1alpha1.QueryResult{Name: name, Status: status, QueryMeasurements: wire.QueryMeasurements{MedianMillis: ms, PeakMemoryBytes: 3 << 20}}
	}
	run := &datav1alpha1.BenchRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lake", Name: "compare"},
		Spec:       datav1alpha1.BenchRunSpec{DatasetRef: datav1alpha1.DatasetReference{Name: "tpch"}, Iterations: 2, Pricing: &datav1alpha1.Pricing{Currency: "USD"}},
		Status: datav1alpha1.BenchRunStatus{Results: []datav1alpha1.BenchResult{
			{Engine: "duckdb", Config: "1cpu", Input: "volume", CompletionTime: &done, GeometricMeanMillis: 120, CostMicros: ptr.To[int64](1_500), BreakEvenRuns: ptr.To[int64](9),
				Queries: []datav1alpha1.QueryResult{query("q1", 1500, datav1alpha1.QuerySucceeded), query("q2", 80, datav1alpha1.QuerySucceeded)}},
			{Engine: "duckdb", Config: "1cpu", Input: "s3", CompletionTime: &done, GeometricMeanMillis: 400, CostMicros: ptr.To[int64](9_000),
				Queries: []datav1alpha1.QueryResult{query("q1", 4000, datav1alpha1.QuerySucceeded), query("q2", 0, datav1alpha1.QueryOOMKilled)}},
			{Engine: "polars", Config: "1cpu", Input: "s3"}, // still running: left out
		}},
	}
	run.Status.Results[0].Queries[1].SpreadPermille = ptr.To[int64](25) // two iterations: a spread
	var b bytes.Buffer
	if err := printResults(&b, run); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := [][]string{
		{"QUERY", "duckdb / 1cpu / volume", "duckdb / 1cpu / s3"},
		{"q1", "1.5s, 3.0Mi", "4s, 3.0Mi"},
		{"q2", "80ms ±2.5%, 3.0Mi", "OOMKilled"},
		{"geometric mean", "120ms", "400ms"},
		{"cost of a run", "0.001500 USD", "0.009000 USD"},
		{"break-even (runs)", "9", "-"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, cells := range want {
		for _, c := range cells {
			if !strings.Contains(lines[i], c) {
				t.Errorf("line %d %q lacks %q", i, lines[i], c)
			}
		}
	}
}

func TestResultsSayHowEachResultWasTimed(t *testing.T) {
	done := metav1.Now()
	// Status keeps each query's engine time; the whole-process figures are per result.
	query := func(name string, ms, _ int64) datav1alpha1.QueryResult {
		return datav1alpha1.QueryResult{Name: name, Status: datav1alpha1.QuerySucceeded, QueryMeasurements: wire.QueryMeasurements{
			MedianMillis: ms, PeakMemoryBytes: 3 << 20}}
	}
	run := &datav1alpha1.BenchRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lake", Name: "isolations"},
		Spec:       datav1alpha1.BenchRunSpec{DatasetRef: datav1alpha1.DatasetReference{Name: "tpch"}, Iterations: 3},
		Status: datav1alpha1.BenchRunStatus{Results: []datav1alpha1.BenchResult{
			{Engine: "duckdb", Config: "1cpu", Input: "volume", CompletionTime: &done, Isolation: datav1alpha1.IsolationProcess, Timing: datav1alpha1.TimingEngine,
				GeometricMeanMillis: 30, WallGeometricMeanMillis: 330, StartupMillis: 295,
				Queries: []datav1alpha1.QueryResult{query("q1", 20, 320), query("q2", 45, 350)}},
			{Engine: "duckdb-session", Config: "1cpu", Input: "volume", CompletionTime: &done, Isolation: datav1alpha1.IsolationSession, Timing: datav1alpha1.TimingEngine,
				GeometricMeanMillis: 25, WallGeometricMeanMillis: 27, StartupMillis: 280,
				Queries: []datav1alpha1.QueryResult{query("q1", 18, 20), query("q2", 35, 37)}},
			{Engine: "cmd", Config: "1cpu", Input: "volume", CompletionTime: &done, Isolation: datav1alpha1.IsolationProcess, Timing: datav1alpha1.TimingWall,
				GeometricMeanMillis: 500, WallGeometricMeanMillis: 500,
				Queries: []datav1alpha1.QueryResult{query("q1", 480, 480), query("q2", 520, 520)}},
		}},
	}
	var b bytes.Buffer
	if err := printResults(&b, run); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{
		"query time":                    {"engine time", "engine time", "wall time, start-up included"},
		"isolation":                     {"process", "session", "process"},
		"start-up (median)":             {"295ms", "280ms", "-"},
		"geometric mean, whole process": {"330ms", "27ms", "500ms"},
	}
	for _, line := range strings.Split(b.String(), "\n") {
		for name, cells := range rows {
			if !strings.HasPrefix(strings.TrimSpace(line), name+"  ") {
				continue
			}
			for _, c := range cells {
				if !strings.Contains(line, c) {
					t.Errorf("row %q lacks %q: %q", name, c, line)
				}
			}
			delete(rows, name)
		}
	}
	if len(rows) > 0 {
		t.Errorf("rows missing: %v\n%s", rows, b.String())
	}
}

// The table shows everything status holds (issue 50): each query's percentiles when streams ran,
// the streams and their throughput, what keeping the cache costs a day, and what Spark's driver and
// executors used.
func TestResultsShowStreamsCacheCostAndSpark(t *testing.T) {
	done := metav1.Now()
	q := datav1alpha1.QueryResult{Name: "q1", Status: datav1alpha1.QuerySucceeded, QueryMeasurements: wire.QueryMeasurements{
		MedianMillis: 100, P50Millis: 100, P95Millis: 180, P99Millis: 240, PeakMemoryBytes: 3 << 20}}
	run := &datav1alpha1.BenchRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: "lake", Name: "everything"},
		Spec:       datav1alpha1.BenchRunSpec{DatasetRef: datav1alpha1.DatasetReference{Name: "tpch"}, Iterations: 1, Pricing: &datav1alpha1.Pricing{Currency: "USD"}},
		Status: datav1alpha1.BenchRunStatus{Results: []datav1alpha1.BenchResult{
			{Engine: "duckdb", Config: "1cpu", Input: "volume", CompletionTime: &done, Streams: 2, QueriesPerHour: 7200, StreamMillis: []int64{400, 500},
				Cache:   &datav1alpha1.CacheCost{StorageClass: "gp3", StorageMicrosPerMonth: ptr.To[int64](3_000_000), RefreshMicrosPerDay: ptr.To[int64](50_000)},
				Queries: []datav1alpha1.QueryResult{q}},
			{Engine: "spark", Config: "1cpu", Input: "s3", CompletionTime: &done,
				Spark:   &datav1alpha1.SparkUsage{Executors: 3, DriverPeakBytes: 900 << 20, ExecutorPeakMaxBytes: 1200 << 20, S3ReadBytes: 75 << 20, CoreSeconds: 63},
				Queries: []datav1alpha1.QueryResult{q}},
		}},
	}
	var b bytes.Buffer
	if err := printResults(&b, run); err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{
		"q1":                               {"p50 100ms p95 180ms p99 240ms, 3.0Mi", "100ms, 3.0Mi"},
		"cache, per day":                   {"0.150000 USD", "-"},
		"streams":                          {"2", "1"},
		"queries per hour":                 {"7200", "-"},
		"spark executors":                  {"-", "3"},
		"spark driver peak":                {"-", "900Mi"},
		"spark largest executor peak":      {"-", "1.2Gi"},
		"spark bucket bytes (lower bound)": {"-", "75Mi"},
		"spark core-seconds":               {"-", "63"},
	}
	found := map[string]bool{}
	for _, line := range strings.Split(b.String(), "\n") {
		for name, cells := range rows {
			if !strings.HasPrefix(strings.TrimSpace(line), name+"  ") {
				continue
			}
			found[name] = true
			for _, c := range cells {
				if !strings.Contains(line, c) {
					t.Errorf("row %q lacks %q: %q", name, c, line)
				}
			}
		}
	}
	for name := range rows {
		if !found[name] {
			t.Errorf("no row %q in:\n%s", name, b.String())
		}
	}
}
