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
	"math"
	"strings"

	"github.com/pqcache/pqcache/api/wire"
)

// This file is the report's rule for "within noise" (docs/bench.md): a verdict names a winner only
// when the loser's range lies wholly above the winner's. A contender's range runs from the geometric
// mean of its queries' fastest iterations to that of their slowest: what its whole suite took at
// best and at worst on this machine. A run of one iteration has no range (its spread is unknown);
// it is within noise of another when their means are closer than wire.UnknownSpreadPermille.

// knownRange says whether a query's fastest and slowest iterations bound its time: it ran at least
// two iterations (a spread, or a run of several iterations whose min and max were recorded).
func knownRange(r *wire.BenchResult, q *wire.QueryResult) bool {
	return q.SpreadPermille != nil || (r.Iterations >= 2 && q.MinMillis > 0 && q.MaxMillis > 0)
}

// withinNoise says whether two contenders cannot be told apart: their ranges overlap, or, when
// either range is unknown, their means differ by less than the assumed noise.
func withinNoise(a, b mean) bool {
	if a.Known && b.Known {
		return a.Lo <= b.Hi && b.Lo <= a.Hi
	}
	lo, hi := math.Min(a.Millis, b.Millis), math.Max(a.Millis, b.Millis)
	return hi*1000 < lo*float64(1000+wire.UnknownSpreadPermille)
}

// rangeText writes a contender's range: "95–110 ms"; "" when unknown.
func (m mean) rangeText() string {
	if !m.Known {
		return ""
	}
	lo, hi := millisText(m.Lo), millisText(m.Hi)
	for _, unit := range []string{" ms", " s"} {
		if strings.HasSuffix(lo, unit) && strings.HasSuffix(hi, unit) { // one unit: "95–110 ms"
			lo = strings.TrimSuffix(lo, unit)
		}
	}
	return lo + "–" + hi
}

// unknownNote says, once per verdict, that some contenders' ranges are unknown and how they were
// judged: "(one iteration)" when that is why, as it is for every run but one recorded without its
// fastest and slowest times.
func unknownNote(ms []mean) string {
	unknown, once := 0, 0
	for _, m := range ms {
		if !m.Known {
			unknown++
			if m.Once {
				once++
			}
		}
	}
	if unknown == 0 {
		return ""
	}
	why := ""
	if once == unknown {
		why = " (one iteration)"
	}
	return fmt.Sprintf("; spread unknown%s: differences under %s count as noise", why, wire.Permille(wire.UnknownSpreadPermille))
}

// Spread is the run's typical query spread for the runs tables: "±2.5%", or why there is none.
func (s Series) Spread() string {
	var measured []wire.QueryMeasurements
	for _, q := range s.Result.Queries {
		if q.Status == wire.StatusSucceeded {
			measured = append(measured, q.QueryMeasurements)
		}
	}
	if p, ok := wire.TypicalSpreadPermille(measured); ok {
		return "±" + wire.Permille(p)
	}
	if s.Result.Iterations < 2 {
		return "unknown (one iteration)"
	}
	return "–"
}

// spreadText writes a query's median and spread for the tables: "100 ms ±2.5%", or the median alone
// with one iteration.
func spreadText(q *wire.QueryResult) string {
	s := millisText(float64(q.MedianMillis))
	if q.SpreadPermille != nil {
		s += " ±" + wire.Permille(*q.SpreadPermille)
	}
	return s
}
