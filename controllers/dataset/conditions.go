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
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// setDatasetConditions derives every condition from status and what the reconcile learned. Ready says
// whether the volume holds the data of the current source; Syncing whether a Job runs; Degraded whether
// the last attempt failed. Reconciling and Stalled, the pair kstatus (Flux) and Argo CD read, are set
// only while true, as the kstatus convention asks.
func setDatasetConditions(ds *datav1alpha1.Dataset, f datasetFacts) {
	st := &ds.Status
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: ds.Generation})
	}
	stuck := stuckMessage(f)
	switch {
	case stuck != "":
		set(datav1alpha1.ConditionSyncing, metav1.ConditionTrue, f.podProblem.Reason, stuck)
	case f.activeJob != nil:
		set(datav1alpha1.ConditionSyncing, metav1.ConditionTrue, datav1alpha1.ReasonSyncInProgress, fmt.Sprintf("Job %s is syncing", f.activeJob.Name))
	case f.copies != nil && f.copies.seedSyncing:
		set(datav1alpha1.ConditionSyncing, metav1.ConditionTrue, datav1alpha1.ReasonSyncInProgress, fmt.Sprintf("The agent on node %s (the seed) is syncing", f.copies.plan.seed))
	case f.queued:
		set(datav1alpha1.ConditionSyncing, metav1.ConditionFalse, datav1alpha1.ReasonQueued, "A sync is due and waits for a free slot under the operator's cap on concurrent syncs")
	case ds.Spec.Refresh.Suspend:
		set(datav1alpha1.ConditionSyncing, metav1.ConditionFalse, datav1alpha1.ReasonSuspended, "refresh.suspend holds every trigger")
	default:
		set(datav1alpha1.ConditionSyncing, metav1.ConditionFalse, datav1alpha1.ReasonIdle, "No sync is running")
	}
	if ls := st.LastSync; ls != nil && ls.Result == datav1alpha1.SyncFailed {
		set(datav1alpha1.ConditionDegraded, metav1.ConditionTrue, ls.Reason, fmt.Sprintf("Sync %s failed (attempt %d): %s", ls.JobName, st.FailedAttempts, ls.Message))
	} else {
		set(datav1alpha1.ConditionDegraded, metav1.ConditionFalse, datav1alpha1.ReasonNoFailures, "The last sync did not fail")
	}
	r := readiness(ds, f, stuck)
	set(datav1alpha1.ConditionReady, r.status, r.reason, r.message)
	if r.stalled {
		set(datav1alpha1.ConditionStalled, metav1.ConditionTrue, r.reason, r.message)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, datav1alpha1.ConditionStalled)
	}
	if r.reconciling {
		set(datav1alpha1.ConditionReconciling, metav1.ConditionTrue, r.reason, r.message)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, datav1alpha1.ConditionReconciling)
	}
}

// stuckMessage says what keeps the running Job's pod from running, in the scheduler's or kubelet's
// words, or "".
func stuckMessage(f datasetFacts) string {
	if f.activeJob == nil {
		return ""
	}
	switch f.podProblem.Reason {
	case datav1alpha1.ReasonUnschedulable:
		return fmt.Sprintf("Job %s cannot be scheduled and waits for a node with room until sync.timeout: %s", f.activeJob.Name, f.podProblem.Message)
	case datav1alpha1.ReasonPodNotStarting:
		return fmt.Sprintf("Job %s cannot start its container and waits until sync.timeout: %s", f.activeJob.Name, f.podProblem.Message)
	case datav1alpha1.ReasonJobRejected:
		return fmt.Sprintf("Job %s has no pod and tries again until sync.timeout: %s", f.activeJob.Name, f.podProblem.Message)
	}
	return ""
}

// ready is the Ready condition, and whether kstatus should read the Dataset as Stalled or
// Reconciling.
type ready struct {
	status               metav1.ConditionStatus
	reason, message      string
	stalled, reconciling bool
}

// readiness decides the Ready condition from the facts, the first that applies winning. A Dataset
// with per-node copies (f.copies) takes the same path, with its own tests for published data, too
// few nodes, and copies still filling.
func readiness(ds *datav1alpha1.Dataset, f datasetFacts, stuck string) ready {
	st := &ds.Status
	ls := st.LastSync
	failed := ls != nil && ls.Result == datav1alpha1.SyncFailed
	published, publishedMsg := dataPublished(ds, f)
	tooFew := tooFewNodes(ds, f)
	r := ready{status: metav1.ConditionFalse}
	switch {
	case f.specError != "":
		r.reason, r.message, r.stalled = datav1alpha1.ReasonInvalidSpec, f.specError, true
	case f.claimError != "":
		r.reason, r.message, r.stalled = f.claimReason, f.claimError, true
	case tooFew != "":
		r.reason, r.message, r.stalled = datav1alpha1.ReasonNotEnoughNodes, tooFew, true
	case f.sizing && !failed:
		r.reason, r.message, r.reconciling = datav1alpha1.ReasonSizingVolume, "volume.capacity is omitted: listing the source to size the claim", true
	case published:
		r.status, r.reason, r.message = metav1.ConditionTrue, datav1alpha1.ReasonSynced, publishedMsg
	case stuck != "":
		// Only a person can fix what keeps a container from starting (an image, a Secret, a
		// ConfigMap) or its pod from being admitted (a quota, a policy): kstatus says Failed until
		// then. A pod that waits for room may yet get it.
		r.reason, r.message = f.podProblem.Reason, stuck
		r.stalled = f.podProblem.Reason == datav1alpha1.ReasonPodNotStarting || f.podProblem.Reason == datav1alpha1.ReasonJobRejected
		r.reconciling = !r.stalled // kstatus reads Reconciling before Stalled
	case f.activeJob != nil:
		r.reason, r.message, r.reconciling = datav1alpha1.ReasonSyncInProgress, fmt.Sprintf("Waiting for Job %s to publish the data", f.activeJob.Name), true
	case failed:
		r.reason, r.message = ls.Reason, ls.Message
		r.stalled = retryWontHelp(ls.Reason)
		r.reconciling = !r.stalled && !ds.Spec.Refresh.Suspend
	case ds.Spec.Refresh.Suspend:
		r.reason, r.message = datav1alpha1.ReasonSuspended, "refresh.suspend is set and the data of the current source has not been synced"
	case ls == nil && !ptr.Deref(ds.Spec.Refresh.OnCreate, true):
		r.reason, r.message = datav1alpha1.ReasonNotSynced, "No sync has run: refresh.onCreate is false. Set refresh.manual to a new value to start one."
	case f.copies != nil:
		r.reason, r.message, r.reconciling = datav1alpha1.ReasonReplicasNotReady, copiesFilling(ds, f), true
	case st.Manifest != nil:
		r.reason, r.message, r.reconciling = datav1alpha1.ReasonSourceChanged, "The source changed since the data was synced; a sync is due", true
	default:
		r.reason, r.message, r.reconciling = datav1alpha1.ReasonInitializing, "Waiting for the first sync", true
	}
	return r
}

// minReady is how many copies must hold the current generation.
func minReady(ds *datav1alpha1.Dataset) int32 { return max(ds.Spec.Replicas.MinReady, 1) }

// dataPublished says whether the data of the current source is there for readers, and how much: on
// the claim, or on minReady per-node copies that hold the seed's current generation.
func dataPublished(ds *datav1alpha1.Dataset, f datasetFacts) (bool, string) {
	m := ds.Status.Manifest
	if m == nil || m.SourceHash != f.hash || ds.Status.LastSuccessfulSyncTime == nil {
		return false, ""
	}
	if f.copies == nil {
		return true, fmt.Sprintf("%d files (%d bytes) published on claim %s", m.Files, m.Bytes, ds.Status.ClaimName)
	}
	p := &f.copies.plan
	if m.Generation != p.generation || p.generation == 0 || p.ready < minReady(ds) {
		return false, ""
	}
	return true, fmt.Sprintf("%d of %d copies hold generation %d (%d files, %d bytes); %d needed", p.ready, len(p.chosen), p.generation, m.Files, m.Bytes, minReady(ds))
}

// tooFewNodes says why a Dataset with per-node copies can never be Ready as it stands: fewer nodes
// match than minReady asks for. "" otherwise.
func tooFewNodes(ds *datav1alpha1.Dataset, f datasetFacts) string {
	if f.copies == nil || int32(f.copies.plan.matching) >= minReady(ds) {
		return ""
	}
	return fmt.Sprintf("minReady is %d but %d node(s) match spec.replicas (nodeSelector, tolerations) and run the agent", minReady(ds), f.copies.plan.matching)
}

// copiesFilling says how far the per-node copies are.
func copiesFilling(ds *datav1alpha1.Dataset, f datasetFacts) string {
	p := &f.copies.plan
	if p.seed == "" {
		return "No node that matches spec.replicas is Ready to seed the copies"
	}
	return fmt.Sprintf("%d of %d copies hold the current generation; %d needed", p.ready, len(p.chosen), minReady(ds))
}
