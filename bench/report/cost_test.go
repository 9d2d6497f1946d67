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
	"bytes"
	"strings"
	"testing"

	"github.com/pqcache/pqcache/api/wire"
)

// cachedResults are engineResults with the cache's costs over time, as a BenchRun with runsPerDay
// records them: 50 GB on gp3 at $4.00 a month, refreshed hourly for $2.17 a day.
func cachedResults(runsPerDay int32, breakEvenDays *int64) []*wire.BenchResult {
	rs := engineResults()
	cache := &wire.CacheCost{StorageClass: "gp3", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: ptr(4_000_000),
		SyncIntervalSeconds: 3600, RefreshBytesPerDay: 24_000_000_000, RefreshMicrosPerDay: ptr(2_170_800)}
	for _, r := range rs {
		if r.Input == "volume" {
			r.Cache, r.RunsPerDay, r.BreakEvenDays = cache, runsPerDay, breakEvenDays
		}
	}
	return rs
}

func TestReportCacheCost(t *testing.T) {
	const prefix = "- **polars**: volume is 3.1x faster than s3; geometric means over 21 queries: volume 181 ms (172–199 ms), s3 562 ms (534–617 ms). One run costs $0.0012 on volume and $0.046 on s3. The cache pays for itself after 14 runs."
	tests := []struct {
		name    string
		results []*wire.BenchResult
		want    string
	}{{
		name:    "at a stated rate",
		results: cachedResults(10, ptr(2)),
		want:    prefix + " Keeping the cache: storage $4.00/month (50.0 GB on gp3), refresh $2.17/day (a sync every 1h0m0s); break-even after 14 runs, i.e. 2 days at 10 runs/day.\n",
	}, {
		name:    "a rate whose savings never cover the cache",
		results: func() []*wire.BenchResult { rs := cachedResults(1, nil); rs[1].BreakEvenRuns = nil; return rs }(),
		want:    "One run costs $0.0012 on volume and $0.046 on s3. Keeping the cache: storage $4.00/month (50.0 GB on gp3), refresh $2.17/day (a sync every 1h0m0s); at 1 run/day the runs' savings never cover the cache.\n",
	}, {
		name:    "no rate stated: no days",
		results: cachedResults(0, nil),
		want:    prefix + " Keeping the cache: storage $4.00/month (50.0 GB on gp3), refresh $2.17/day (a sync every 1h0m0s).\n",
	}, {
		name:    "no cache figures: the one-run cost alone",
		results: engineResults(),
		want:    prefix + "\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var md bytes.Buffer
			if err := WriteMarkdown(&md, tt.results); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(md.String(), tt.want) {
				t.Errorf("the Markdown lacks %q:\n%s", tt.want, md.String())
			}
		})
	}
	// The HTML verdict says the same.
	var html bytes.Buffer
	if err := WriteHTML(&html, cachedResults(10, ptr(2))); err != nil {
		t.Fatal(err)
	}
	if want := "Keeping the cache: storage $4.00/month (50.0 GB on gp3), refresh $2.17/day (a sync every 1h0m0s); break-even after 14 runs, i.e. 2 days at 10 runs/day."; !strings.Contains(html.String(), want) {
		t.Errorf("the HTML lacks %q", want)
	}
}
