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

// A Spark application's executors are pods of their own, outside the runner's cgroup, so the driver
// (bench/spark/run.py) measures them and reports one timing line per application:
//
//	spark_executors=N spark_executor_peak_bytes=A,B,... spark_s3_read_bytes=N spark_executor_ms=N
//
// The runner sums those lines over the run's applications (one per iteration) into the result's
// spark block.

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
)

// maxSparkFigure bounds a reported byte count or duration (about 9.2 EB or 292 thousand years as
// milliseconds): beyond it a figure is nonsense, and summing it would overflow.
const maxSparkFigure = 1 << 62

// parseSparkUsage reads a timing line's executor usage; ok is false when the line has none or any
// of its figures is not a number in range (the line is then no report).
func parseSparkUsage(kv map[string]string) (wire.SparkResult, bool) {
	n, err := strconv.Atoi(kv["spark_executors"])
	if err != nil || n < 0 || n > wire.MaxSparkExecutors {
		return wire.SparkResult{}, false
	}
	u := wire.SparkResult{Executors: n}
	var ok1, ok2 bool
	u.S3ReadBytes, ok1 = sparkFigure(kv["spark_s3_read_bytes"])
	u.ExecutorMillis, ok2 = sparkFigure(kv["spark_executor_ms"])
	if !ok1 || !ok2 {
		return wire.SparkResult{}, false
	}
	for _, f := range strings.Split(kv["spark_executor_peak_bytes"], ",") {
		if len(u.ExecutorPeakBytes) == wire.MaxSparkExecutors {
			return wire.SparkResult{}, false
		}
		b, ok := sparkFigure(f)
		if !ok {
			return wire.SparkResult{}, false
		}
		if b > 0 {
			u.ExecutorPeakBytes = append(u.ExecutorPeakBytes, b)
		}
	}
	return u, true
}

// sparkFigure is a non-negative integer below maxSparkFigure.
func sparkFigure(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0 && v < maxSparkFigure
}

// addSparkUsage adds one application's usage to the run's: the executors asked for is the largest,
// the bytes and lives are summed, and each executor slot keeps its largest peak (the peaks of an
// application sorted largest first, so slot k is the k-th largest executor of every application).
func addSparkUsage(run *wire.SparkResult, app wire.SparkResult) *wire.SparkResult {
	if run == nil {
		run = &wire.SparkResult{}
	}
	run.Executors = max(run.Executors, app.Executors)
	run.S3ReadBytes = min(run.S3ReadBytes+app.S3ReadBytes, maxSparkFigure)
	run.ExecutorMillis = min(run.ExecutorMillis+app.ExecutorMillis, maxSparkFigure)
	peaks := slices.Clone(app.ExecutorPeakBytes)
	slices.SortFunc(peaks, func(a, b int64) int { return cmp.Compare(b, a) })
	for k, p := range peaks {
		if k < len(run.ExecutorPeakBytes) {
			run.ExecutorPeakBytes[k] = max(run.ExecutorPeakBytes[k], p)
		} else {
			run.ExecutorPeakBytes = append(run.ExecutorPeakBytes, p)
		}
	}
	return run
}
