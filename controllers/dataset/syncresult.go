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

package dataset

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// workerOutcome is what the worker's pod left: its report (the termination message), or why there is
// none.
type workerOutcome struct {
	Report *wire.SyncReport
	// OOMKilled is set when the worker was killed for exceeding its memory limit.
	OOMKilled bool
	// Problem explains a missing or unreadable report.
	Problem string
}

// outcomeFromPods reads the sync container's termination message from the Job's pods (the last one
// that terminated wins). It never needs the pods/log API.
func outcomeFromPods(pods []corev1.Pod) workerOutcome {
	var out workerOutcome
	var latest time.Time
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if cs.Name != jobs.SyncContainerName || t == nil || t.FinishedAt.Time.Before(latest) {
				continue
			}
			latest = t.FinishedAt.Time
			out = workerOutcome{OOMKilled: t.Reason == "OOMKilled"}
			if t.Message == "" {
				out.Problem = fmt.Sprintf("the worker exited with code %d (%s) without a report", t.ExitCode, t.Reason)
				continue
			}
			rep, err := wire.DecodeSyncReport(t.Message)
			if err != nil {
				out.Problem = fmt.Sprintf("the worker's report is not readable: %v", err)
				continue
			}
			out.Report = rep
		}
	}
	if latest.IsZero() {
		out.Problem = "no terminated worker pod was found"
	}
	return out
}

// recordSync writes a finished Job's result into the Dataset's status: lastSync, and on success the
// manifest and layout summaries; on failure the backoff state. It returns whether the sync succeeded
// and a one-line summary for events.
func recordSync(ds *datav1alpha1.Dataset, job *batchv1.Job, js jobs.State, wo workerOutcome) (bool, string) {
	st := &ds.Status
	ls, succeeded := syncResultOf(job, js, wo)
	st.LastSync = ls
	if tok := job.Annotations[AnnotationManualToken]; tok != "" {
		st.LastManualSync = tok
	}
	if rep := wo.Report; rep != nil && rep.Manifest.Generation > 0 {
		recordManifest(st, rep, ls.SourceHash, succeeded)
	}
	if succeeded {
		st.FailedAttempts = 0
		st.LastFailureTime = nil
		st.LastSuccessfulSyncTime = ls.CompletionTime
		if isListing(ls.Trigger) {
			st.LastListingSyncTime = ls.StartTime
		} else {
			st.LastTargetedSyncTime = ls.StartTime
		}
		return true, fmt.Sprintf("%d files copied (%d bytes), %d deleted, %d unchanged in %d ms", ls.FilesCopied, ls.BytesCopied, ls.FilesDeleted, ls.FilesUnchanged, ls.DurationMillis)
	}
	st.FailedAttempts++
	st.LastFailureTime = ls.CompletionTime
	return false, fmt.Sprintf("%s: %s", ls.Reason, ls.Message)
}

// syncResultOf is a finished Job's lastSync: the facts it was started with (its annotations), the
// worker's figures, and how it ended.
func syncResultOf(job *batchv1.Job, js jobs.State, wo workerOutcome) (*datav1alpha1.SyncResult, bool) {
	ann := job.Annotations
	gen, _ := strconv.ParseInt(ann[AnnotationSpecGeneration], 10, 64)
	ls := &datav1alpha1.SyncResult{
		JobName:        job.Name,
		SpecGeneration: gen,
		SourceHash:     ann[AnnotationSourceHash],
		Trigger:        ann[AnnotationTrigger],
		StartTime:      job.Status.StartTime,
		CompletionTime: &metav1.Time{Time: js.At},
	}
	if ls.StartTime == nil {
		ls.StartTime = &job.CreationTimestamp
	}
	rep := wo.Report
	if rep != nil {
		ls.FilesCopied, ls.FilesDeleted, ls.FilesUnchanged, ls.FilesFailed = rep.FilesCopied, rep.FilesDeleted, rep.FilesUnchanged, rep.FilesFailed
		ls.BytesCopied, ls.BytesPerSecond = rep.BytesCopied, rep.BytesPerSecond
		ls.ListRequests, ls.GetRequests = rep.Requests.List, rep.Requests.Get
		ls.FilesUnverified, ls.Warning = rep.FilesUnverified, wire.Truncate(strings.Join(rep.Warnings, "; "), 1024)
		if rep.Table != nil {
			ls.TableVersion = new(rep.Table.Version)
		}
	}
	ls.DurationMillis = ls.CompletionTime.Sub(ls.StartTime.Time).Milliseconds()
	if rep != nil && rep.DurationMillis > 0 {
		ls.DurationMillis = rep.DurationMillis
	}
	succeeded := !js.Failed && rep != nil && rep.Result == wire.ResultSucceeded
	switch {
	case succeeded:
		ls.Result = datav1alpha1.SyncSucceeded
	case js.Reason == batchv1.JobReasonDeadlineExceeded:
		ls.Result, ls.Reason = datav1alpha1.SyncFailed, datav1alpha1.ReasonDeadlineExceeded
		ls.Message = "the sync ran past spec.sync.timeout and was stopped; the previous data is still published"
	case wo.OOMKilled:
		ls.Result, ls.Reason = datav1alpha1.SyncFailed, datav1alpha1.ReasonJobFailed
		ls.Message = "the worker was OOMKilled: raise spec.sync.resources.limits.memory or lower spec.sync.parallelism"
	case rep != nil && rep.Result == wire.ResultFailed:
		ls.Result, ls.Reason, ls.Message = datav1alpha1.SyncFailed, wire.SyncFailureReason(rep.Reason), rep.Message
		if rep.Space != nil {
			ls.NeededBytes = rep.Space.NeedBytes - rep.Space.FreeBytes
		}
	default:
		ls.Result, ls.Reason = datav1alpha1.SyncFailed, datav1alpha1.ReasonJobFailed
		ls.Message = wo.Problem
		if js.Message != "" {
			ls.Message = js.Message + "; " + wo.Problem
		}
	}
	ls.Message = wire.Truncate(ls.Message, 1024) // the API's limit; the worker's text may be any UTF-8
	return ls, succeeded
}

// recordManifest writes what a sync published into status. Even a failed sync publishes what it
// verified: the manifest describes the volume as it is. Its sourceHash says which source the files
// came from: the sync's after a success; after a failure, the previous one if the source did not
// change, and none if the files are a mix.
func recordManifest(st *datav1alpha1.DatasetStatus, rep *wire.SyncReport, syncHash string, succeeded bool) {
	hash := ""
	if succeeded || (st.Manifest != nil && st.Manifest.SourceHash == syncHash) {
		hash = syncHash
	}
	st.Manifest = &datav1alpha1.ManifestSummary{Files: rep.Manifest.Files, Bytes: rep.Manifest.Bytes, Generation: rep.Manifest.Generation, Digest: rep.Manifest.Digest, SourceHash: hash}
	st.Generations = generationsStatus(rep.Generations)
	st.Layout = &datav1alpha1.LayoutSummary{
		ParquetFiles: rep.Layout.ParquetFiles, RowGroups: rep.Layout.RowGroups,
		MinRowsPerGroup: rep.Layout.MinRowsPerGroup, MaxRowsPerGroup: rep.Layout.MaxRowsPerGroup,
		Advice: rep.Layout.Advice,
	}
}

// retryWontHelp lists failure reasons that need a person: Flux and Argo CD should see the Dataset as
// failed (Stalled), not as progressing.
func retryWontHelp(reason string) bool {
	switch reason {
	case wire.ReasonAccessDenied, wire.ReasonNoSuchBucket, wire.ReasonInvalidCredentials,
		wire.ReasonInsufficientCapacity, wire.ReasonHostileKeys, wire.ReasonOverByteCap,
		wire.ReasonVolumeReadOnly, wire.ReasonVolumePermissionDenied, wire.ReasonAmbientCredentialsNotAllowed:
		return true
	}
	return false
}

// progressFromPods reads the newest progress annotation a worker published on its pod.
func progressFromPods(pods []corev1.Pod) *datav1alpha1.SyncProgress {
	var best *datav1alpha1.SyncProgress
	for _, p := range pods {
		v, ok := p.Annotations[wire.ProgressAnnotation]
		if !ok {
			continue
		}
		var pr wire.SyncProgress
		if err := json.Unmarshal([]byte(v), &pr); err != nil {
			continue
		}
		if best != nil && best.UpdateTime != nil && !pr.Time.After(best.UpdateTime.Time) {
			continue
		}
		best = &datav1alpha1.SyncProgress{
			Listing: pr.Listing, FilesDone: pr.FilesDone, FilesTotal: pr.FilesTotal, BytesDone: pr.BytesDone, BytesTotal: pr.BytesTotal,
			BytesPerSecond: pr.BytesPerSecond, RemainingMillis: pr.RemainingMillis, UpdateTime: &metav1.Time{Time: pr.Time},
		}
	}
	return best
}

// generationsStatus is the worker's account of the generations it kept, for status (at most 32).
func generationsStatus(g *wire.GenerationSummary) *datav1alpha1.GenerationsStatus {
	if g == nil {
		return nil
	}
	st := &datav1alpha1.GenerationsStatus{Current: g.Current, ExtraBytes: g.ExtraBytes}
	for _, k := range g.Kept {
		if len(st.Kept) == 32 {
			break
		}
		kg := datav1alpha1.KeptGeneration{Generation: k.Generation, Files: k.Files, Bytes: k.Bytes, Pinned: k.Pinned}
		if !k.Published.IsZero() {
			kg.Published = &metav1.Time{Time: k.Published}
		}
		st.Kept = append(st.Kept, kg)
	}
	return st
}
