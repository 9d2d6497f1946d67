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

package benchrun

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// measured is a result of queries that succeeded with these medians and spreads (a negative spread:
// one iteration, unknown).
func measured(engine string, queries ...[2]int64) datav1alpha1.BenchResult {
	r := datav1alpha1.BenchResult{Engine: engine, Config: "small", Input: "volume"}
	for _, q := range queries {
		qr := datav1alpha1.QueryResult{Name: "q", Status: datav1alpha1.QuerySucceeded, QueryMeasurements: wire.QueryMeasurements{MedianMillis: q[0], Digest: "d"}}
		if q[1] >= 0 {
			spread := q[1]
			qr.SpreadPermille = &spread
		}
		r.Queries = append(r.Queries, qr)
	}
	return r
}

// TestNoisyRunsSayByHowMuch: a run whose every query returned is Completed, or Noisy when one Job's
// typical query spread passes 15%, with that figure in the message; failures still come first.
func TestNoisyRunsSayByHowMuch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []datav1alpha1.BenchResult
		reason  string
		message string
	}{
		{"quiet", []datav1alpha1.BenchResult{measured("duckdb", [2]int64{100, 30}, [2]int64{200, 80})},
			datav1alpha1.ReasonCompleted, "1 runs completed; the typical query's spread over its iterations is at most 5.5%"},
		{"one iteration: unknown, not quiet", []datav1alpha1.BenchResult{measured("duckdb", [2]int64{100, -1})},
			datav1alpha1.ReasonCompleted, "spread not judged: every query ran once, or took under 20 ms"},
		{"one noisy Job of two", []datav1alpha1.BenchResult{measured("duckdb", [2]int64{100, 30}), measured("polars", [2]int64{100, 270}, [2]int64{300, 250}, [2]int64{90, 10})},
			datav1alpha1.ReasonNoisy, "the typical query's spread over its iterations is above 15.0% on polars / small / volume 25.0%"},
		{"exactly at the threshold is not noisy", []datav1alpha1.BenchResult{measured("duckdb", [2]int64{100, 150})},
			datav1alpha1.ReasonCompleted, "at most 15.0%"},
		{"a noisy short query is rounding", []datav1alpha1.BenchResult{measured("duckdb", [2]int64{4, 333}, [2]int64{6, 400}, [2]int64{50, 20})},
			datav1alpha1.ReasonCompleted, "at most 2.0%"},
	} {
		reason, msg := runOutcome(tc.results, false, nil)
		if reason != tc.reason || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: %s %q, want %s with %q", tc.name, reason, msg, tc.reason, tc.message)
		}
	}
	failed := measured("duckdb", [2]int64{100, 500})
	failed.Queries = append(failed.Queries, datav1alpha1.QueryResult{Name: "q9", Status: datav1alpha1.QueryTimeout})
	if reason, _ := runOutcome([]datav1alpha1.BenchResult{failed}, false, nil); reason != datav1alpha1.ReasonQueriesFailed {
		t.Errorf("a noisy run with a failed query: %s, want QueriesFailed", reason)
	}

	// A Noisy run has finished: Succeeded True with the reason, no Stalled, no Reconciling.
	run := &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	setWaiting(run, datav1alpha1.ReasonRunning, "1 of 1 Jobs running")
	finishRun(run, datav1alpha1.ReasonNoisy, "noisy", time.Now())
	c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != datav1alpha1.ReasonNoisy {
		t.Errorf("Succeeded of a noisy run: %+v", c)
	}
	if len(run.Status.Conditions) != 1 || run.Status.CompletionTime == nil {
		t.Errorf("a noisy run keeps other conditions %+v, or has no completion time", run.Status.Conditions)
	}
}
