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
	"time"

	"github.com/pqcache/pqcache/api/wire"
)

// cacheCost says, after what one run costs, what keeping the cache costs over time and when it pays
// for itself at the run rate the BenchRun states: " Keeping the cache: storage $4.00/month (50.0 GB on
// gp3), refresh $2.17/day (a sync every 1h0m0s); break-even after 250 runs, i.e. 13 days at 20
// runs/day." It reads the volume run, else the first input that carries the cache's costs; "" when
// none does (the BenchRun did not price it, or `pqcache bench` ran alone).
func (h headline) cacheCost() string {
	r := h.Runs["volume"]
	for _, m := range h.Verdict.Means {
		if r == nil || r.Cache == nil {
			r = h.Runs[m.Name]
		}
	}
	if r == nil || r.Cache == nil || r.Cache.StorageMicrosPerMonth == nil {
		return ""
	}
	c := r.Cache
	where := fmt.Sprintf("%.1f GB on %s", float64(c.StorageBytes)/1e9, c.StorageClass)
	if c.Copies > 1 {
		where = fmt.Sprintf("%d copies, %.1f GB on %s", c.Copies, float64(c.StorageBytes)/1e9, c.StorageClass)
	}
	s := fmt.Sprintf(" Keeping the cache: storage %s/month (%s)", money(*c.StorageMicrosPerMonth, r.Currency), where)
	switch {
	case c.SyncIntervalSeconds == 0:
		s += ", no scheduled refresh"
	case c.RefreshMicrosPerDay == nil:
		s += ", refresh not yet measured (no successful sync)"
	default:
		every := wire.Duration(time.Duration(c.SyncIntervalSeconds) * time.Second)
		s += fmt.Sprintf(", refresh %s/day (a sync every %s)", money(*c.RefreshMicrosPerDay, r.Currency), every)
	}
	return s + breakEvenText(h.Runs["volume"], h.Runs["s3"]) + "."
}

// breakEvenText is the break-even at the stated run rate: "; break-even after N runs, i.e. D days at
// R runs/day", or why there is none; "" without a rate, or without a volume and an s3 run to compare.
func breakEvenText(vol, s3 *wire.BenchResult) string {
	if vol == nil || s3 == nil || vol.RunsPerDay == 0 || vol.CostMicros == nil || s3.CostMicros == nil {
		return ""
	}
	rate := fmt.Sprintf("%d %s/day", vol.RunsPerDay, plural(int(vol.RunsPerDay), "run", "runs"))
	if vol.BreakEvenRuns == nil || vol.BreakEvenDays == nil {
		return "; at " + rate + " the runs' savings never cover the cache"
	}
	return fmt.Sprintf("; break-even after %d %s, i.e. %d %s at %s", *vol.BreakEvenRuns, plural(int(*vol.BreakEvenRuns), "run", "runs"),
		*vol.BreakEvenDays, plural(int(*vol.BreakEvenDays), "day", "days"), rate)
}
