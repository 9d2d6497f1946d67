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
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

func ptr(v int64) *int64 { return &v }

// TestSpreadIsTheRelativeMedianAbsoluteDeviation: the spread is the median distance from the median,
// in thousandths of it; one outlier among five does not make a query noisy; one iteration has no
// spread (unknown, not zero).
func TestSpreadIsTheRelativeMedianAbsoluteDeviation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		millis []int64
		want   *int64
	}{
		{"one iteration: unknown", []int64{100}, nil},
		{"two iterations: half their gap over their mean", []int64{100, 106}, ptr(29)}, // 3 of 103
		{"identical times", []int64{50, 50, 50}, ptr(0)},
		{"one outlier of five is ignored", []int64{100, 101, 99, 100, 400}, ptr(10)},
		{"even a 2x slower iteration", []int64{100, 102, 98, 200, 101}, ptr(10)},
		{"every iteration differs", []int64{80, 90, 100, 110, 120}, ptr(100)},
		{"rounded to the nearest thousandth", []int64{1000, 1003, 997}, ptr(3)},
		{"a zero-millisecond query", []int64{0, 0, 1}, ptr(0)},
	} {
		qr := wire.QueryResult{Millis: tc.millis}
		summarize(&qr)
		got := qr.SpreadPermille
		switch {
		case tc.want == nil && got != nil:
			t.Errorf("%s: spread %d, want unknown (nil)", tc.name, *got)
		case tc.want != nil && got == nil:
			t.Errorf("%s: spread unknown, want %d", tc.name, *tc.want)
		case tc.want != nil && *got != *tc.want:
			t.Errorf("%s: spread %d‰ of %v, want %d‰", tc.name, *got, tc.millis, *tc.want)
		}
	}
	qr := wire.QueryResult{Millis: []int64{120, 100, 400}}
	summarize(&qr)
	if qr.MinMillis != 100 || qr.MedianMillis != 120 || qr.MaxMillis != 400 || *qr.SpreadPermille != 167 {
		t.Errorf("min %d median %d max %d spread %d, want 100, 120, 400, 167", qr.MinMillis, qr.MedianMillis, qr.MaxMillis, *qr.SpreadPermille)
	}
}
