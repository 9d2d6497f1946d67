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
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

func TestTheExecutorsUsageIsSummedOverApplications(t *testing.T) {
	file := strings.Join([]string{
		"ready_unix_ns=5 rss_bytes=10",
		"query=q1 query_ms=2.5",
		"spark_executors=3 spark_executor_peak_bytes=100,300,200 spark_s3_read_bytes=1000 spark_executor_ms=60",
		// A second application of the same process (never in practice) adds up the same way.
		"spark_executors=2 spark_executor_peak_bytes=400,50 spark_s3_read_bytes=24 spark_executor_ms=40",
	}, "\n")
	got := parseTimings(strings.NewReader(file)).spark
	want := &wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{400, 200, 100}, S3ReadBytes: 1024, ExecutorMillis: 100}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestAnExecutorsLineOutOfRangeIsNoReport(t *testing.T) {
	for _, line := range []string{
		"spark_executors=-1 spark_executor_peak_bytes=1 spark_s3_read_bytes=0 spark_executor_ms=0",
		"spark_executors=65 spark_executor_peak_bytes=1 spark_s3_read_bytes=0 spark_executor_ms=0",
		"spark_executors=2 spark_executor_peak_bytes=1,-5 spark_s3_read_bytes=0 spark_executor_ms=0",
		"spark_executors=2 spark_executor_peak_bytes=1 spark_s3_read_bytes=9223372036854775807 spark_executor_ms=0",
		"spark_executors=2 spark_executor_peak_bytes=1 spark_s3_read_bytes=x spark_executor_ms=0",
		"spark_executors=2 spark_executor_peak_bytes=1 spark_s3_read_bytes=0",
		"spark_executors=1 spark_executor_peak_bytes=" + strings.Repeat("1,", wire.MaxSparkExecutors) + "1 spark_s3_read_bytes=0 spark_executor_ms=0",
	} {
		if got := parseTimings(strings.NewReader(line)).spark; got != nil {
			t.Errorf("%q: got %+v, want no report", line, got)
		}
	}
}

func TestTheRunKeepsEachSlotsLargestPeak(t *testing.T) {
	var run *wire.SparkResult
	run = addSparkUsage(run, wire.SparkResult{Executors: 2, ExecutorPeakBytes: []int64{5, 9}, S3ReadBytes: 1, ExecutorMillis: 2})
	run = addSparkUsage(run, wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{7, 1, 8}, S3ReadBytes: 1, ExecutorMillis: 2})
	want := &wire.SparkResult{Executors: 3, ExecutorPeakBytes: []int64{9, 7, 1}, S3ReadBytes: 2, ExecutorMillis: 4}
	if !reflect.DeepEqual(run, want) {
		t.Fatalf("got %+v, want %+v", run, want)
	}
}

// TestTheRunnerReadsWhatK8sUsageWrites: the line bench/spark/k8s_usage.py writes is the line the
// runner parses (the two sides of the protocol, in two languages).
func TestTheRunnerReadsWhatK8sUsageWrites(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 on PATH runs bench/spark/k8s_usage.py: %v", err)
	}
	script := `import sys; sys.path.insert(0, "spark"); import k8s_usage
print(k8s_usage.timing_line({"executors": 2, "executorPeakBytes": [7340032, 9437184], "s3ReadBytes": 123456789, "executorMillis": 61000}))`
	out, err := exec.CommandContext(t.Context(), python, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("k8s_usage.timing_line: %v: %s", err, out)
	}
	got := parseTimings(strings.NewReader(string(out))).spark
	want := &wire.SparkResult{Executors: 2, ExecutorPeakBytes: []int64{9437184, 7340032}, S3ReadBytes: 123456789, ExecutorMillis: 61000}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the runner read %+v from %q, want %+v", got, out, want)
	}
}
