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
	"math"
	"strings"
	"testing"
)

// FuzzParseTimings feeds the runner what an engine (any command a user names) may write to its
// timing file: the parser never panics, and what it keeps is usable — positive ready times and
// sizes, query times finite, within maxQueryMillis, and rounding to int64 without overflow.
func FuzzParseTimings(f *testing.F) {
	for _, seed := range []string{
		"ready_unix_ns=1764950400123456789 rss_bytes=104857600\nquery_ms=12.5\n",
		"ready_unix_ns=1764950400123456789\nquery=q1 query_ms=3.25\nquery=q2 query_ms=0\n",
		"query_ms=NaN\nquery_ms=+Inf\nquery_ms=-1\nquery_ms=1e308\nready_unix_ns=-5\n",
		"query=q1 query=q2 query_ms=7 junk ==\n\n" + strings.Repeat("x", 200) + "\nquery_ms=1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tm := parseTimings(strings.NewReader(string(data)))
		if tm.readyUnixNanos < 0 || tm.readyRSS < 0 {
			t.Fatalf("negative ready figures kept: %+v", tm)
		}
		if tm.readyRSS > 0 && tm.readyUnixNanos == 0 {
			t.Fatalf("an RSS kept without its ready line: %+v", tm)
		}
		for name, ms := range tm.queryMillis {
			if math.IsNaN(ms) || ms < 0 || ms > maxQueryMillis {
				t.Fatalf("query %q kept with %v ms", name, ms)
			}
			if got, ok := tm.query(name, false); !ok || got < 0 {
				t.Fatalf("query %q reads back as %d, %v", name, got, ok)
			}
		}
	})
}
