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

// Package runresults turns a BenchRun's recorded status back into the runner's result type
// (wire.BenchResult), for the reports that read BenchRuns: \`pqcache report\` and \`kubectl pqcache
// results|report\`. It sits beside the API, as api/syncspec does: the API types package holds types
// and their validation only.
package runresults

import (
	"fmt"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// Wire turns each recorded result of the run's status (one per engine, configuration and
// input) into the runner's result type, labelled "run: engine / config / input", for the reports
// (`pqcache report`, `kubectl pqcache report`). Results of Jobs still running are left out.
func Wire(br *datav1alpha1.BenchRun) []*wire.BenchResult {
	iterations := int(br.Spec.Iterations)
	warmups := 0
	if br.Spec.Warmups != nil {
		warmups = int(*br.Spec.Warmups)
	}
	var out []*wire.BenchResult
	for _, r := range br.Status.Results {
		if r.CompletionTime == nil {
			continue
		}
		engine := r.Engine
		if engine == "" {
			engine = string(datav1alpha1.EngineDuckDB)
		}
		res := &wire.BenchResult{
			Label:               fmt.Sprintf("%s: %s / %s / %s", br.Name, engine, r.Config, r.Input),
			Engine:              engine,
			Data:                fmt.Sprintf("Dataset %s/%s (%s)", br.Namespace, br.Spec.DatasetRef.Name, r.Input),
			Config:              r.Config,
			Input:               r.Input,
			Workload:            br.Status.Workload,
			WallMillis:          r.WallMillis,
			Iterations:          iterations,
			Warmups:             warmups,
			GeometricMeanMillis: r.GeometricMeanMillis,
			NetworkReadBytes:    r.NetworkReadBytes,
			FailedQueries:       r.FailedQueries,
			CostMicros:          r.CostMicros,
			BreakEvenRuns:       r.BreakEvenRuns,
		}
		res.Isolation, res.WallGeometricMeanMillis, res.StartupMillis = string(r.Isolation), r.WallGeometricMeanMillis, r.StartupMillis
		if r.CostMicros != nil || r.Cache != nil {
			res.Currency = currency(br)
		}
		if br.Spec.RunsPerDay != nil {
			res.RunsPerDay, res.BreakEvenDays = *br.Spec.RunsPerDay, r.BreakEvenDays
		}
		if c := r.Cache; c != nil {
			res.Cache = &wire.CacheCost{StorageClass: c.StorageClass, Copies: c.Copies, StorageBytes: c.StorageBytes, StorageMicrosPerMonth: c.StorageMicrosPerMonth,
				SyncIntervalSeconds: c.SyncIntervalSeconds, RefreshBytesPerDay: c.RefreshBytesPerDay, RefreshMicrosPerDay: c.RefreshMicrosPerDay}
		}
		if rf := r.Refresh; rf != nil {
			res.Refresh = &wire.RefreshResult{Rewrites: int(rf.Rewrites), Files: int(rf.Files),
				ReadGeneration: rf.ReadGeneration, FirstGeneration: rf.FirstGeneration, LastGeneration: rf.LastGeneration}
			if rs := br.Spec.Refresh; rs != nil && rs.Percent != nil {
				res.Refresh.Percent = int(*rs.Percent)
			} else {
				res.Refresh.Percent = wire.DefaultRefreshPercent
			}
		}
		if sp := r.Spark; sp != nil {
			// Status keeps the largest executor's peak, not each one's.
			res.Spark = &wire.SparkResult{Executors: int(sp.Executors), S3ReadBytes: sp.S3ReadBytes, ExecutorMillis: sp.ExecutorSeconds * 1000,
				CoreSeconds: sp.CoreSeconds, GiBSeconds: sp.GiBSeconds}
			if sp.ExecutorPeakMaxBytes > 0 {
				res.Spark.ExecutorPeakBytes = []int64{sp.ExecutorPeakMaxBytes}
			}
			res.CgroupPeakBytes = sp.DriverPeakBytes
		}
		if r.ReadBytesPerSecond > 0 {
			res.Probe = &wire.ProbeResult{BytesPerSecond: r.ReadBytesPerSecond}
		}
		if r.StartTime != nil {
			res.Start = r.StartTime.Time
		}
		// The streams' throughput (spec.streams); the percentiles come with each query's measurements.
		res.Streams, res.StreamMillis, res.QueriesPerHour = int(r.Streams), r.StreamMillis, r.QueriesPerHour
		for _, q := range r.Queries {
			// The result's timing holds for each of its queries (status keeps it once).
			res.Queries = append(res.Queries, wire.QueryResult{Name: q.Name, Status: string(q.Status), QueryMeasurements: q.QueryMeasurements, Timing: string(r.Timing)})
		}
		out = append(out, res)
	}
	return out
}

// currency is the currency of the run's costs: the prices it used (status.pricing), or for a run
// recorded before those were kept, its spec's.
func currency(br *datav1alpha1.BenchRun) string {
	if p := br.Status.Pricing; p != nil && p.Currency != "" {
		return p.Currency
	}
	if p := br.Spec.Pricing; p != nil {
		return p.Currency
	}
	return ""
}
