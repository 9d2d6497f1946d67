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

package benchrun

import (
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// benchResultFrom turns a finished bench Job into its status entry: the runner's summary from the
// termination message, or, when the runner itself died, why.
func benchResultFrom(j *batchv1.Job, js jobs.State, pods []corev1.Pod) datav1alpha1.BenchResult {
	r := datav1alpha1.BenchResult{Engine: j.Annotations[annotationEngine], Config: j.Annotations[annotationConfig], Input: j.Annotations[annotationInput], JobName: j.Name}
	// The stage step's own report: what it copied, and how long that took.
	for _, p := range pods {
		for _, cs := range p.Status.InitContainerStatuses {
			if t := cs.State.Terminated; cs.Name == stageContainerName && t != nil && t.Message != "" {
				if rep, err := wire.DecodeSyncReport(t.Message); err == nil {
					r.StagedBytes, r.StageMillis = rep.BytesCopied, rep.DurationMillis
				}
			}
		}
	}
	var term *corev1.ContainerStateTerminated
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; cs.Name == benchContainerName && t != nil && (term == nil || t.FinishedAt.After(term.FinishedAt.Time)) {
				term = t
			}
		}
	}
	status := unfinishedStatus(js, term)
	if term != nil && term.Message != "" {
		if res, err := wire.DecodeBenchSummary(term.Message); err == nil {
			fillBenchResult(&r, res)
			// A summary written while the run went on: the runner died before these queries ended.
			for _, name := range res.Unfinished {
				r.Queries = append(r.Queries, datav1alpha1.QueryResult{Name: name, Status: status})
				r.FailedQueries = append(r.FailedQueries, name)
			}
			return r
		}
	}
	// No summary: the runner did not finish its first query. Say why on every query.
	r.Queries = []datav1alpha1.QueryResult{{Name: wire.WholeRun, Status: status}}
	return r
}

// unfinishedStatus is what happened to the queries a runner did not finish: OOMKilled when the
// container was, Timeout when the Job's deadline stopped it, else NotRun.
func unfinishedStatus(js jobs.State, term *corev1.ContainerStateTerminated) datav1alpha1.QueryStatus {
	switch {
	case js.Reason == batchv1.JobReasonDeadlineExceeded:
		return datav1alpha1.QueryTimeout
	case term != nil && term.Reason == "OOMKilled":
		return datav1alpha1.QueryOOMKilled
	}
	return datav1alpha1.QueryNotRun
}

// fillBenchResult copies a runner's summary into the status entry. A runner that ran no query says
// why (a table the data lacks, a workload it could not read).
func fillBenchResult(r *datav1alpha1.BenchResult, res *wire.BenchResult) {
	if res.Error != "" {
		r.Reason, r.Message = wire.ReasonInvalidWorkload, wire.Truncate(res.Error, 1024)
		if res.ErrorReason == wire.ReasonMissingTables {
			r.Reason = wire.ReasonMissingTables
		}
		r.Queries = []datav1alpha1.QueryResult{{Name: wire.WholeRun, Status: datav1alpha1.QueryNotRun}}
		return
	}
	r.WallMillis = res.WallMillis
	r.GeometricMeanMillis = res.GeometricMeanMillis
	r.NetworkReadBytes = res.NetworkReadBytes
	if res.Probe != nil {
		r.ReadBytesPerSecond = res.Probe.BytesPerSecond
	}
	r.FailedQueries = res.FailedQueries
	r.Isolation = datav1alpha1.BenchIsolation(res.Isolation)
	r.WallGeometricMeanMillis = res.WallGeometricMeanMillis
	r.StartupMillis, r.Timing = res.StartupMillis, resultTiming(res)
	r.Streams, r.QueriesPerHour = int32(min(max(res.Streams, 0), wire.MaxStreams)), res.QueriesPerHour
	several := res.Streams > 1
	if several {
		r.StreamMillis = res.StreamMillis
	}
	for _, q := range res.Queries {
		m := q.QueryMeasurements
		if !several {
			// One stream's percentiles add little to its median and max, and the largest status a run
			// of 64 Jobs may have has no room for them (the JSON and the summary keep them).
			m.P50Millis, m.P95Millis, m.P99Millis = 0, 0, 0
		}
		r.Queries = append(r.Queries, datav1alpha1.QueryResult{Name: q.Name, Status: datav1alpha1.QueryStatus(q.Status), QueryMeasurements: m})
	}
	if sp := res.Spark; sp != nil {
		r.Spark = sparkUsage(sp, res.CgroupPeakBytes)
	}
	if rf := res.Refresh; rf != nil {
		r.Refresh = &datav1alpha1.ResultRefresh{Rewrites: int32(min(rf.Rewrites, math.MaxInt32)), Files: int32(min(rf.Files, math.MaxInt32)),
			ReadGeneration: rf.ReadGeneration, FirstGeneration: rf.FirstGeneration, LastGeneration: rf.LastGeneration}
		if rf.Error != "" {
			// The times were not measured during refreshes: the run must not pass for one that was.
			r.Reason, r.Message = wire.ReasonRefreshRefused, wire.Truncate(rf.ErrorReason+": "+rf.Error, 1024)
		}
	}
}

// resultTiming is what a result's query times measure: engine when the engine timed every successful
// query itself, else wall (some are whole processes, and the result's figures mix them); none for a
// result without a successful query.
func resultTiming(res *wire.BenchResult) datav1alpha1.BenchTiming {
	timing := datav1alpha1.BenchTiming("")
	for _, q := range res.Queries {
		switch {
		case q.Status != wire.StatusSucceeded:
		case q.Timing != wire.TimingEngine:
			return datav1alpha1.TimingWall
		default:
			timing = datav1alpha1.TimingEngine
		}
	}
	return timing
}
