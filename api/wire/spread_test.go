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

import "testing"

func spreadOf(median, permille int64) QueryMeasurements {
	return QueryMeasurements{MedianMillis: median, SpreadPermille: &permille}
}

// TestTypicalSpread: the median of the known spreads of queries of 20 ms or more; none known (one
// iteration, or only short queries) is not a spread of zero.
func TestTypicalSpread(t *testing.T) {
	for _, tc := range []struct {
		name    string
		queries []QueryMeasurements
		want    int64
		ok      bool
	}{
		{"no query", nil, 0, false},
		{"one iteration each: unknown", []QueryMeasurements{{MedianMillis: 100}, {MedianMillis: 200}}, 0, false},
		{"only short queries: rounding, not judged", []QueryMeasurements{spreadOf(5, 333), spreadOf(19, 250)}, 0, false},
		{"odd count: the middle one", []QueryMeasurements{spreadOf(100, 10), spreadOf(100, 500), spreadOf(100, 40)}, 40, true},
		{"even count: the mean of the middle two", []QueryMeasurements{spreadOf(100, 10), spreadOf(100, 500), spreadOf(100, 40), spreadOf(100, 60)}, 50, true},
		{"short and unknown queries left out", []QueryMeasurements{spreadOf(3, 900), {MedianMillis: 400}, spreadOf(20, 30)}, 30, true},
		{"a zero spread is known", []QueryMeasurements{spreadOf(50, 0)}, 0, true},
	} {
		got, ok := TypicalSpreadPermille(tc.queries)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPermille(t *testing.T) {
	for in, want := range map[int64]string{0: "0.0%", 7: "0.7%", 25: "2.5%", 200: "20.0%", 1234: "123.4%"} {
		if got := Permille(in); got != want {
			t.Errorf("Permille(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestDeepCopyKeepsTheSpreadApart: the BenchRun API's deep copy of a query (which calls this one)
// must not share the spread with the original, or a status change would write through to a copy.
func TestDeepCopyKeepsTheSpreadApart(t *testing.T) {
	in := spreadOf(100, 25)
	var out QueryMeasurements
	in.DeepCopyInto(&out)
	*in.SpreadPermille = 999
	if out.SpreadPermille == nil || *out.SpreadPermille != 25 || out.MedianMillis != 100 {
		t.Errorf("copy %+v (spread %v), want median 100 and its own spread 25", out, out.SpreadPermille)
	}
	unknown, copied := QueryMeasurements{MedianMillis: 5}, QueryMeasurements{}
	unknown.DeepCopyInto(&copied)
	if copied.SpreadPermille != nil || copied.MedianMillis != 5 {
		t.Errorf("copy of an unknown spread: %+v", copied)
	}
}
