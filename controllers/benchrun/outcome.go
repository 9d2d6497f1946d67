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
	"fmt"
	"slices"
	"strings"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// runOutcome decides a finished run's Succeeded condition from its results; memory maps a
// configuration to its memory limit, named in OOMKilled messages.
func runOutcome(results []datav1alpha1.BenchResult, timedOut bool, memory map[string]string) (reason, message string) {
	if timedOut {
		return datav1alpha1.ReasonTimeout, "the run passed spec.timeout"
	}
	for _, r := range results {
		if r.Reason != "" {
			return r.Reason, fmt.Sprintf("%s / %s / %s: %s", r.Engine, r.Config, r.Input, r.Message)
		}
	}
	oom, failed := []string{}, []string{}
	digests := map[string]map[string][]string{}
	for _, r := range results {
		for _, q := range r.Queries {
			where := r.Config + " / " + r.Input
			if r.Engine != "" {
				where = r.Engine + " / " + where
			}
			switch q.Status {
			case datav1alpha1.QueryOOMKilled:
				what := q.Name
				if q.Name == wire.WholeRun {
					what = "the runner"
				}
				oom = append(oom, fmt.Sprintf("%s on %s (memory limit %s)", what, where, memory[r.Config]))
			case datav1alpha1.QuerySucceeded:
				if digests[q.Name] == nil {
					digests[q.Name] = map[string][]string{}
				}
				digests[q.Name][q.Digest] = append(digests[q.Name][q.Digest], where)
			default:
				failed = append(failed, fmt.Sprintf("%s on %s: %s", q.Name, where, q.Status))
			}
		}
	}
	if len(oom) > 0 {
		return datav1alpha1.ReasonOOMKilled, "out of memory: " + strings.Join(limit(oom, 8), ", ")
	}
	var qs []string
	for q, byDigest := range digests {
		if len(byDigest) > 1 {
			qs = append(qs, q)
		}
	}
	slices.Sort(qs)
	if len(qs) > 0 {
		// Name, per query, one place of each of two answers: which engines (or inputs) disagree.
		var mismatched []string
		for _, q := range qs {
			var sides []string
			for _, where := range digests[q] {
				slices.Sort(where)
				sides = append(sides, where[0])
			}
			slices.Sort(sides)
			mismatched = append(mismatched, fmt.Sprintf("%s (%s vs %s)", q, sides[0], sides[1]))
		}
		return datav1alpha1.ReasonResultMismatch, "different answers for the same query: " + strings.Join(limit(mismatched, 8), ", ")
	}
	if len(failed) > 0 {
		return datav1alpha1.ReasonQueriesFailed, strings.Join(limit(failed, 8), "; ")
	}
	return spreadOutcome(results)
}

// spreadOutcome is the outcome of a run whose every query returned the same answers: Noisy when, in a
// Job, the typical query's spread (the median of its queries' spreads, wire.TypicalSpreadPermille)
// passes wire.NoisyPermille, else Completed. Both set Succeeded True: the run finished and its results are recorded; Noisy
// tells the reader that close results in them are not a ranking (docs/troubleshooting.md).
func spreadOutcome(results []datav1alpha1.BenchResult) (reason, message string) {
	var noisy []string
	widest, known := int64(0), false
	for _, r := range results {
		measured := make([]wire.QueryMeasurements, 0, len(r.Queries))
		for _, q := range r.Queries {
			if q.Status == datav1alpha1.QuerySucceeded {
				measured = append(measured, q.QueryMeasurements)
			}
		}
		typical, ok := wire.TypicalSpreadPermille(measured)
		if !ok {
			continue
		}
		widest, known = max(widest, typical), true
		if typical > wire.NoisyPermille {
			noisy = append(noisy, fmt.Sprintf("%s / %s / %s %s", r.Engine, r.Config, r.Input, wire.Permille(typical)))
		}
	}
	done := fmt.Sprintf("%d runs completed", len(results))
	switch {
	case len(noisy) > 0:
		return datav1alpha1.ReasonNoisy, fmt.Sprintf("%s, but their times are noisy: the typical query's spread over its iterations is above %s on %s; results closer than that are not a ranking (a busy node? run again when it is quieter)",
			done, wire.Permille(wire.NoisyPermille), strings.Join(limit(noisy, 4), ", "))
	case known:
		return datav1alpha1.ReasonCompleted, fmt.Sprintf("%s; the typical query's spread over its iterations is at most %s", done, wire.Permille(widest))
	}
	return datav1alpha1.ReasonCompleted, fmt.Sprintf("%s; spread not judged: every query ran once, or took under %d ms", done, wire.ShortQueryMillis)
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
