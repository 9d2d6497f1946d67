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

package wire

import (
	"fmt"
	"slices"
)

// The noise of repeated query times, in one place: the runner states each query's spread, and the
// reports and the BenchRun controller read it with the same threshold (docs/bench.md says why these
// figures; docs/benchmarks.md has the measurements behind NoisyPermille).

// NoisyPermille is the spread, in thousandths, above which a run's times are too noisy to trust: a
// BenchRun whose typical query spread passes it gets the reason Noisy. On this project's shared
// 2-core machine, three runs at a load of 1 to 4 had typical spreads of 7.0, 11.8 and 12.7%, and two
// beside busy neighbours (load rising from 4 to 11; 23 to 28) 26.6 and 16.0% (docs/benchmarks.md):
// 15% lies between.
const NoisyPermille = 150

// UnknownSpreadPermille is the noise the reports assume for a run of one iteration, whose spread is
// unknown: two geometric means closer than this are within noise. Two identical runs, one after the
// other on the same idle machine, had geometric means 10% apart (docs/benchmarks.md).
const UnknownSpreadPermille = 100

// ShortQueryMillis is the median under which a query's spread is left out of a run's typical spread:
// the runner's clock counts whole milliseconds, so a 5 ms query that took 4 ms once and 6 ms once has
// a 20% spread that is rounding, and a difference of a few milliseconds ranks nothing that matters.
// At 20 ms one millisecond is 5%, a third of NoisyPermille.
const ShortQueryMillis = 20

// TypicalSpreadPermille is the median spread of the queries that have one and took at least
// ShortQueryMillis: how much a typical query of the run varies, robust to the one query that met a
// neighbour's burst. ok is false when no query qualifies (each ran once, or all were that short).
func TypicalSpreadPermille(queries []QueryMeasurements) (permille int64, ok bool) {
	var known []int64
	for _, q := range queries {
		if q.SpreadPermille != nil && q.MedianMillis >= ShortQueryMillis {
			known = append(known, *q.SpreadPermille)
		}
	}
	if len(known) == 0 {
		return 0, false
	}
	slices.Sort(known)
	n := len(known)
	if n%2 == 1 {
		return known[n/2], true
	}
	return (known[n/2-1] + known[n/2]) / 2, true
}

// Permille writes a spread in thousandths as a percentage for people: "2.5%".
func Permille(p int64) string {
	return fmt.Sprintf("%d.%d%%", p/10, p%10)
}

// DeepCopyInto copies the measurements into out, the spread too: the BenchRun API embeds this type,
// and its generated deep copy calls this method.
func (in *QueryMeasurements) DeepCopyInto(out *QueryMeasurements) {
	*out = *in
	if in.SpreadPermille != nil {
		v := *in.SpreadPermille
		out.SpreadPermille = &v
	}
}
