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
	"slices"

	"github.com/pqcache/pqcache/api/wire"
)

// summarize sets a succeeded query's min, median, max and spread from its measured iterations.
func summarize(qr *wire.QueryResult) {
	sorted := slices.Clone(qr.Millis)
	slices.Sort(sorted)
	qr.MinMillis, qr.MaxMillis, qr.MedianMillis = sorted[0], sorted[len(sorted)-1], median(sorted)
	qr.SpreadPermille = spreadPermille(sorted)
}

// spreadPermille is the relative median absolute deviation of sorted times: the median of each
// time's distance from the median, in thousandths of the median, rounded. nil for fewer than two
// times: one run says nothing about how much the next would differ.
//
// Why not the coefficient of variation: with the 3 to 5 iterations a run affords, one iteration
// that met a neighbour's burst (or a cold page cache) sets the standard deviation by itself, and the
// query would read as noisy although four of its five times agree. The median absolute deviation
// ignores that one, and min and max, reported beside it, still show it.
func spreadPermille(sorted []int64) *int64 {
	if len(sorted) < 2 {
		return nil
	}
	mid := median(sorted)
	dev := make([]int64, len(sorted))
	for i, v := range sorted {
		dev[i] = max(v-mid, mid-v)
	}
	slices.Sort(dev)
	p := int64(0)
	if mid > 0 {
		// Rounded to the nearest thousandth, in integers: status holds no floats.
		p = (median(dev)*2000 + mid) / (2 * mid)
	}
	return &p
}
