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

package report

import (
	"fmt"
	"slices"

	"github.com/pqcache/pqcache/api/wire"
)

// A query time means what the engine measured: engines that report their own time give the query
// alone, and one that does not (a command engine without the timing protocol, or a result made
// before engines reported) gives the whole process, start-up included. Two such figures are not
// comparable, so every result says which it is, and in which isolation it ran, next to start-up
// and the whole process's wall time.

// wallTimingText labels a result whose query times are whole processes.
const wallTimingText = "wall time, start-up included"

// TimingText says what a result's query times measure: "engine time", wallTimingText, or for a
// result whose queries differ, how many of them are wall times.
func TimingText(r *wire.BenchResult) string {
	engine, wall := 0, 0
	for _, q := range r.Queries {
		switch {
		case q.Status != wire.StatusSucceeded:
		case q.Timing == wire.TimingEngine:
			engine++
		default: // wall, or a result made before engines reported ("")
			wall++
		}
	}
	switch {
	case wall == 0 && engine > 0:
		return "engine time"
	case engine == 0:
		return wallTimingText
	}
	return fmt.Sprintf("engine time; %d of %d queries %s", wall, engine+wall, wallTimingText)
}

// IsolationText is a result's isolation: results made before sessions existed ran in processes.
func IsolationText(r *wire.BenchResult) string {
	if r.Isolation == "" {
		return wire.IsolationProcess
	}
	return r.Isolation
}

// howTimed is a result's timing and isolation in one phrase: "engine time, process isolation".
func howTimed(r *wire.BenchResult) string {
	return TimingText(r) + ", " + IsolationText(r) + " isolation"
}

// startupText is a query's median start-up; in session isolation the session's, paid once for
// every query of an iteration; for a BenchRun's result, which keeps one start-up per result, the
// run's median.
func startupText(r *wire.BenchResult, q *wire.QueryResult) string {
	run := StartupMillis(r)
	switch {
	case q.MedianStartupMillis > 0:
		return millisText(float64(q.MedianStartupMillis))
	case run > 0 && r.Isolation == wire.IsolationSession:
		return "session " + millisText(float64(run))
	case run > 0:
		return millisText(float64(run)) + " (run median)"
	}
	return "–"
}

// StartupMillis is a result's typical start-up (wire.BenchResult.StartupMillis): in session
// isolation the median of its sessions', else the median of its queries' median start-ups; 0 when
// the engine reported none.
func StartupMillis(r *wire.BenchResult) int64 {
	if r.StartupMillis > 0 { // the runner's, or a BenchRun status's
		return r.StartupMillis
	}
	// A result made before the runner kept it.
	if r.Isolation == wire.IsolationSession && len(r.SessionStartupMillis) > 0 {
		return medianMillis(r.SessionStartupMillis)
	}
	var ms []int64
	for _, q := range r.Queries {
		if q.MedianStartupMillis > 0 {
			ms = append(ms, q.MedianStartupMillis)
		}
	}
	if len(ms) == 0 {
		return 0
	}
	return medianMillis(ms)
}

// wallText is a query's median whole-process wall time.
func wallText(q *wire.QueryResult) string {
	if q.MedianWallMillis <= 0 {
		return "–"
	}
	return millisText(float64(q.MedianWallMillis))
}

// wallMeanText is a result's geometric mean of whole-process wall times, beside the query-time one.
func wallMeanText(r *wire.BenchResult) string {
	if r.WallGeometricMeanMillis <= 0 {
		return "–"
	}
	return millisText(float64(r.WallGeometricMeanMillis))
}

// medianMillis is the median of ms (not empty), which it does not change.
func medianMillis(ms []int64) int64 {
	sorted := slices.Clone(ms)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return sorted[n/2]
}

// timedLine says how each engine of a group was timed, under the group's title: "Query times:
// duckdb engine time, process isolation; cmd wall time, start-up included, process isolation."
func (c comparison) timedLine(g group) string {
	line := "Query times:"
	for i, e := range c.groupEngines(g) {
		if i > 0 {
			line += ";"
		}
		line += " " + e + " " + howTimed(g.Runs[e])
	}
	return line + "."
}

// groupTimed says whether a group's runs measured start-up or wall time apart from the query time:
// results made before engines reported their own time have neither, and get no empty columns.
func groupTimed(g group) bool {
	for _, r := range g.Runs {
		for _, q := range r.Queries {
			if q.MedianStartupMillis > 0 || q.MedianWallMillis > 0 {
				return true
			}
		}
	}
	return false
}
