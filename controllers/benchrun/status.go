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
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// runSummary is what the Jobs add up to.
type runSummary struct {
	results   []datav1alpha1.BenchResult
	counts    datav1alpha1.JobCounts
	timedOut  bool
	lost      []string
	stuck     []string // per Job: "config/input: why"
	stuckWhy  string   // the reason of the first stuck Job: Unschedulable, PodNotStarting or JobRejected
	conflicts []string
	// rejected, per Job the API server refused: "config/input: what it said".
	rejected []string
	starting bool
	// notHeld says why Jobs wait for a node holding the pinned generation (waitingForData of them).
	notHeld        string
	waitingForData int32
	// waitNode says why Jobs wait for a node with room (waitingForNode of them): the per-node cap, or
	// an exclusive run.
	waitNode       string
	waitingForNode int32
	// dataBytes is the size of the Dataset's data, the transfer an s3 input pays per run.
	dataBytes int64
	// memory maps a configuration to its memory limit, for OOMKilled messages.
	memory map[string]string
}

// summarizeRun adds the Jobs up: the results to keep in status (sorted), counts and what is in the way.
func summarizeRun(run *datav1alpha1.BenchRun, views []jobView, dataBytes int64, pastDeadline bool) runSummary {
	s := runSummary{counts: datav1alpha1.JobCounts{Total: int32(len(views))}, memory: map[string]string{}, dataBytes: dataBytes}
	for _, c := range run.Spec.Configs {
		s.memory[c.Name] = c.Memory.String()
	}
	for _, v := range views {
		where := engineLabel(v.plan.engine) + "/" + v.plan.config.Name + "/" + inputLabel(v.plan.input)
		switch v.phase {
		case jobQueued:
			s.counts.Queued++
			if v.waitFor != "" {
				s.notHeld, s.waitingForData = v.waitFor, s.waitingForData+1
			}
			if v.waitNode != "" {
				s.waitNode, s.waitingForNode = v.waitNode, s.waitingForNode+1
			}
		case jobNeverRan:
			s.timedOut = s.timedOut || pastDeadline
		case jobConflict:
			s.conflicts = append(s.conflicts, v.conflict)
		case jobRejected:
			s.counts.Queued++
			s.rejected = append(s.rejected, where+": "+v.rejected)
		case jobRunning:
			s.counts.Active++
			switch v.podState {
			case jobs.PodStuck:
				s.stuck = append(s.stuck, where+": "+v.podProblem.Message)
				if s.stuckWhy == "" {
					s.stuckWhy = v.podProblem.Reason
				}
			case jobs.PodNotStarted:
				s.starting = true
			}
		}
		res := v.result
		if res == nil {
			res = v.record
		}
		if v.phase == jobRunning && res == nil && v.job != nil {
			// Started by an earlier reconcile whose status write did not land: record the start now.
			res = &datav1alpha1.BenchResult{Engine: engineLabel(v.plan.engine), Config: v.plan.config.Name, Input: inputLabel(v.plan.input), JobName: v.job.Name, StartTime: &v.job.CreationTimestamp}
		}
		if res == nil {
			continue
		}
		if res.CompletionTime != nil && v.phase != jobRunning {
			if res.Message != "" && runnerDied(res) && res.Queries[0].Status == datav1alpha1.QueryNotRun {
				s.lost = append(s.lost, where)
			}
			if runnerDied(res) {
				s.counts.Failed++
			} else {
				s.counts.Succeeded++
			}
			if v.job != nil && jobs.StateOf(v.job).Reason == batchv1.JobReasonDeadlineExceeded {
				s.timedOut = true
			}
		}
		out := *res
		// What the input read from the bucket: measured by the runner (its pod's network counters), or
		// for an s3 input measured without it, the data set once.
		readBytes := res.NetworkReadBytes
		if readBytes == 0 && v.plan.input.Type == datav1alpha1.InputS3 {
			readBytes = dataBytes
		}
		if out.Spark != nil {
			// Spark's executors read the bucket, not the driver's pod, and are paid for too.
			out.Spark = sparkCompute(out.Spark, v.plan, out.WallMillis+out.StageMillis)
			readBytes = out.Spark.S3ReadBytes
		}
		if out.CompletionTime != nil {
			out.CostMicros = costMicros(run.Status.Pricing, v.plan.config, out, readBytes)
			out.CostMicros = withSparkExecutorCost(run.Status.Pricing, out.CostMicros, out.Spark, v.plan)
		}
		s.results = append(s.results, out)
	}
	sort.Slice(s.results, func(i, k int) bool { return resultKey(s.results[i]) < resultKey(s.results[k]) })
	return s
}

// setBreakEvens writes the break-even of each volume result and the run's first; with the Dataset
// gone (dataBytes 0) it keeps those computed while it was there.
func setBreakEvens(run *datav1alpha1.BenchRun, recorded []datav1alpha1.BenchResult, dataBytes int64, kept map[string]*int64) {
	st := &run.Status
	if dataBytes == 0 {
		for i := range st.Results {
			st.Results[i].BreakEvenRuns = kept[resultKey(st.Results[i])]
		}
		return
	}
	keys, runs := breakEvens(run.Status.Pricing, recorded, dataBytes)
	st.BreakEvenRuns = firstBreakEven(keys, runs)
	for i := range st.Results {
		if r := &st.Results[i]; r.Input == string(datav1alpha1.InputVolume) && r.CompletionTime != nil {
			r.BreakEvenRuns = runs[costKey(*r)]
		}
	}
}

// resultKey orders results: by engine, configuration, input.
func resultKey(r datav1alpha1.BenchResult) string { return r.Engine + "/" + r.Config + "/" + r.Input }

// runnerDied reports whether a recorded Job left no measurements (the runner was killed, timed out,
// the Job was lost, or it ran no query): its one query entry, named wire.WholeRun, says why. Such a
// Job counts as failed; a Job whose runner reported, even with failed queries, as succeeded.
func runnerDied(r *datav1alpha1.BenchResult) bool {
	return len(r.Queries) == 1 && r.Queries[0].Name == wire.WholeRun
}

// applyRunSummary writes the summary into status and sets the conditions: running (with what is in
// the way), or finished with the outcome of the recorded results.
func applyRunSummary(run *datav1alpha1.BenchRun, s runSummary, now time.Time) {
	st := &run.Status
	kept := map[string]*int64{} // break-evens computed while the Dataset was there
	for _, r := range st.Results {
		kept[resultKey(r)] = r.BreakEvenRuns
	}
	st.Results = s.results
	counts := s.counts
	st.Jobs = &counts
	st.Progress = fmt.Sprintf("%d/%d jobs", counts.Succeeded+counts.Failed, counts.Total)
	st.DurationMillis = now.Sub(st.StartTime.Time).Milliseconds()
	var recorded []datav1alpha1.BenchResult
	for _, r := range s.results {
		if r.CompletionTime != nil {
			recorded = append(recorded, r)
		}
	}
	setBreakEvens(run, recorded, s.dataBytes, kept)

	switch {
	case len(s.conflicts) > 0:
		msg := strings.Join(limit(s.conflicts, 4), "; ")
		setStalled(run, datav1alpha1.ReasonJobConflict, msg)
		return
	case len(s.rejected) > 0:
		msg := fmt.Sprintf("%d of %d Jobs cannot be created; tried again every 10 s until spec.timeout (%s)",
			len(s.rejected), counts.Total, strings.Join(limit(s.rejected, 4), "; "))
		setStalled(run, datav1alpha1.ReasonJobRejected, msg)
		return
	case counts.Active+counts.Queued > 0:
		msg := fmt.Sprintf("%d of %d Jobs running", counts.Active, counts.Total)
		if n := counts.Queued - s.waitingForData - s.waitingForNode; n > 0 {
			msg += fmt.Sprintf(", %d waiting for a slot under the operator's cap on bench Jobs", n)
		}
		if s.waitingForNode > 0 {
			msg += fmt.Sprintf(", %d waiting for a node: %s", s.waitingForNode, s.waitNode)
		}
		reason := datav1alpha1.ReasonRunning
		if s.waitingForData > 0 {
			reason = datav1alpha1.ReasonGenerationNotHeld
			msg += fmt.Sprintf(", %d waiting until spec.timeout: %s", s.waitingForData, s.notHeld)
		}
		switch s.stuckWhy {
		case datav1alpha1.ReasonUnschedulable:
			reason = s.stuckWhy
			msg = fmt.Sprintf("%d of %d Jobs cannot be scheduled and wait for a node with room until spec.timeout (%s)",
				len(s.stuck), counts.Total, strings.Join(limit(s.stuck, 4), "; "))
		case datav1alpha1.ReasonPodNotStarting:
			reason = s.stuckWhy
			msg = fmt.Sprintf("%d of %d Jobs have a pod whose container cannot start; they wait until spec.timeout (%s)",
				len(s.stuck), counts.Total, strings.Join(limit(s.stuck, 4), "; "))
		case datav1alpha1.ReasonJobRejected:
			reason = s.stuckWhy
			msg = fmt.Sprintf("%d of %d Jobs have no pod: the API server refuses them; the Jobs try again until spec.timeout (%s)",
				len(s.stuck), counts.Total, strings.Join(limit(s.stuck, 4), "; "))
		}
		if reason == datav1alpha1.ReasonPodNotStarting || reason == datav1alpha1.ReasonJobRejected {
			// A person must act (an image, a Secret, a ConfigMap): kstatus should say so.
			setStalled(run, reason, msg)
			return
		}
		setWaiting(run, reason, msg)
		return
	}
	reason, msg := runOutcome(recorded, s.timedOut, s.memory)
	if len(s.lost) > 0 && (succeeded(reason) || reason == datav1alpha1.ReasonQueriesFailed) {
		reason = datav1alpha1.ReasonJobLost
		msg = fmt.Sprintf("%d Jobs were deleted before their results were recorded (%s); their queries did not run", len(s.lost), strings.Join(limit(s.lost, 4), ", "))
	}
	finishRun(run, reason, msg, now)
}

func setCondition(run *datav1alpha1.BenchRun, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&run.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: run.Generation})
}

// succeeded says whether a finished run's reason is a success: Completed, or Noisy (complete, with
// times too noisy to rank close results; a person reading the results must know, but nothing failed).
func succeeded(reason string) bool {
	return reason == datav1alpha1.ReasonCompleted || reason == datav1alpha1.ReasonNoisy
}

// finishRun ends the run with reason: Succeeded True for Completed and Noisy, else False and Stalled
// (kstatus Failed). Reconciling goes.
func finishRun(run *datav1alpha1.BenchRun, reason, msg string, now time.Time) {
	status := metav1.ConditionFalse
	if succeeded(reason) {
		status = metav1.ConditionTrue
		meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionStalled)
	} else {
		setCondition(run, datav1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	}
	setCondition(run, datav1alpha1.ConditionSucceeded, status, reason, msg)
	meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionReconciling)
	if run.Status.CompletionTime == nil {
		run.Status.CompletionTime = &metav1.Time{Time: now}
	}
	if run.Status.StartTime != nil {
		run.Status.DurationMillis = run.Status.CompletionTime.Sub(run.Status.StartTime.Time).Milliseconds()
	}
}

// setWaiting marks the run as in progress: Succeeded Unknown and Reconciling True, with reason.
func setWaiting(run *datav1alpha1.BenchRun, reason, msg string) {
	setCondition(run, datav1alpha1.ConditionSucceeded, metav1.ConditionUnknown, reason, msg)
	setCondition(run, datav1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionStalled)
}

// setStalled marks an unfinished run that cannot go on until a person acts: Succeeded Unknown, Stalled
// True, and no Reconciling (kstatus reads Reconciling first, and would say InProgress).
func setStalled(run *datav1alpha1.BenchRun, reason, msg string) {
	setCondition(run, datav1alpha1.ConditionSucceeded, metav1.ConditionUnknown, reason, msg)
	setCondition(run, datav1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
	meta.RemoveStatusCondition(&run.Status.Conditions, datav1alpha1.ConditionReconciling)
}
