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

import "testing"

// TestWithinNoise: known ranges are within noise when they overlap (touching counts); an unknown
// range falls back to the means' ratio against wire.UnknownSpreadPermille (10%).
func TestWithinNoise(t *testing.T) {
	known := func(mid, lo, hi float64) mean { return mean{Millis: mid, Lo: lo, Hi: hi, Known: true} }
	once := func(mid float64) mean { return mean{Millis: mid} }
	for _, tc := range []struct {
		name string
		a, b mean
		want bool
	}{
		{"overlapping ranges", known(100, 95, 110), known(106, 100, 118), true},
		{"touching ranges", known(100, 95, 104), known(106, 104, 108), true},
		{"disjoint ranges, means 6% apart", known(100, 99, 102), known(106, 104, 108), false},
		{"one range inside the other", known(100, 50, 200), known(150, 140, 160), true},
		{"one iteration each, 6% apart", once(100), once(106), true},
		{"one iteration each, 9.9% apart", once(100), once(109.9), true},
		{"one iteration each, 10% apart", once(100), once(110), false},
		{"a known range beside one iteration: the ratio decides", known(100, 60, 150), once(140), false},
	} {
		if got := withinNoise(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: within noise %v, want %v", tc.name, got, tc.want)
		}
		if got := withinNoise(tc.b, tc.a); got != tc.want {
			t.Errorf("%s, reversed: within noise %v, want %v", tc.name, got, tc.want)
		}
	}
}
