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

package v1alpha1

// Condition types. Dataset is long-running and reports Ready; BenchRun is bounded and reports
// Succeeded. Both also report Reconciling and Stalled, the "abnormal-true" pair that kstatus (Flux,
// cli-utils) and Argo CD read to tell in-progress from failed.
const (
	// ConditionReady is True on a Dataset once a complete sync of the current spec is published on
	// its volume. It stays True, with the previous data, while a later refresh runs.
	ConditionReady = "Ready"
	// ConditionSyncing is True on a Dataset while a sync Job runs.
	ConditionSyncing = "Syncing"
	// ConditionDegraded is True on a Dataset whose last sync attempt failed; the data from the last
	// good sync is still served.
	ConditionDegraded = "Degraded"
	// ConditionSucceeded is True on a BenchRun that finished with every Job complete, False on one
	// that finished otherwise, and Unknown while it runs.
	ConditionSucceeded = "Succeeded"
	// ConditionEventSource is True on a Dataset whose spec.refresh.events source delivers, False with a
	// reason (QueueNotFound, AccessDenied, InvalidCredentials, Unavailable, TokenRejected) when it is
	// broken. It does not affect Ready: the schedule keeps the data fresh meanwhile.
	ConditionEventSource = "EventSource"
	// ConditionReconciling is True while the controller is still working towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the controller cannot make progress without a change from a
	// person (a spec it cannot act on, a failure that retries will not fix).
	ConditionStalled = "Stalled"
)

// Condition reasons. They are part of the API: alerts, dashboards and the troubleshooting guide key on
// them, so they never change meaning once released.
//
// The reasons that a worker, the sync engine or an event source decides are not here but in api/wire
// (reasons.go), the one place they are written: the packages that decide them import no Kubernetes
// package, so they cannot import this one, and a second name here would be a second list to keep.
// Controllers and the agent use them from there:
//   - a failed sync: wire.ReasonAccessDenied, ReasonNoSuchBucket, ReasonInvalidCredentials,
//     ReasonInsufficientCapacity, ReasonHostileKeys, ReasonSourceMisbehaving, ReasonVolumeReadOnly,
//     ReasonVolumePermissionDenied, ReasonVolumeIOError, ReasonPanicked, ReasonSyncDeadlineExceeded,
//     ReasonSyncFailed;
//   - an event source (the EventSource condition): wire.ReasonQueueNotFound, ReasonAccessDenied,
//     ReasonInvalidCredentials, ReasonUnavailable, and ReasonTokenRejected below;
//   - a bench runner that ran no query: wire.ReasonInvalidWorkload, ReasonMissingTables.
const (
	// ReasonInitializing: the controller has seen the object but not acted on it yet.
	ReasonInitializing = "Initializing"
	// ReasonSynced: the last sync published the data of the current spec.
	ReasonSynced = "Synced"
	// ReasonSyncInProgress: a sync Job is running.
	ReasonSyncInProgress = "SyncInProgress"
	// ReasonJobFailed: a worker Job failed without a report that says why (wire's sync failure reasons),
	// for example because it was OOMKilled.
	ReasonJobFailed = "JobFailed"
	// ReasonDeadlineExceeded: a worker Job ran past its deadline and was stopped.
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonNotSynced: no sync has run and none is due (refresh.onCreate is false).
	ReasonNotSynced = "NotSynced"
	// ReasonSourceChanged: the source changed since the published data was synced.
	ReasonSourceChanged = "SourceChanged"
	// ReasonSizingVolume: volume.capacity is omitted and a Job lists the source to size the claim.
	ReasonSizingVolume = "SizingVolume"
	// ReasonIdle: no sync is running.
	ReasonIdle = "Idle"
	// ReasonQueued: a sync is due but waits for a slot under the operator's concurrency cap.
	ReasonQueued = "Queued"
	// ReasonSuspended: refresh.suspend holds every trigger.
	ReasonSuspended = "Suspended"
	// ReasonClaimNotFound: volume.existingClaim names a claim that does not exist.
	ReasonClaimNotFound = "ClaimNotFound"
	// ReasonClaimFailed: the controller could not create or update the Dataset's claim.
	ReasonClaimFailed = "ClaimFailed"
	// ReasonClaimInUse: the claim already holds another Dataset's cache; two Datasets syncing into one
	// volume would prune each other's files.
	ReasonClaimInUse = "ClaimInUse"
	// ReasonEventsFlowing: the event source is reachable (and, for a webhook, no wrong token was
	// presented lately).
	ReasonEventsFlowing = "EventsFlowing"
	// ReasonTokenRejected: a store posted notifications with a missing or wrong webhook token.
	ReasonTokenRejected = "TokenRejected"
	// ReasonNoFailures: the last sync succeeded.
	ReasonNoFailures = "NoFailures"
	// ReasonInvalidSpec: the spec passed API validation but cannot be acted on (for example a cron
	// schedule the cron library rejects).
	ReasonInvalidSpec = "InvalidSpec"

	// ReasonWaitingForDataset: a BenchRun waits for its Dataset to become Ready.
	ReasonWaitingForDataset = "WaitingForDataset"
	// ReasonWaitingForWorkload: a BenchRun waits for the ConfigMap (or its key) that holds its workload.
	ReasonWaitingForWorkload = "WaitingForWorkload"
	// ReasonRunning: a BenchRun's Jobs are running.
	ReasonRunning = "Running"
	// ReasonUnschedulable: a Job's pod fits no node: a BenchRun's query pod (its configuration's cpu
	// and memory, or its placement; it waits until spec.timeout) or a Dataset's sync pod (its
	// resources, or its claim's node; it waits until sync.timeout).
	ReasonUnschedulable = "Unschedulable"
	// ReasonCompleted: every query of every Job ran and returned.
	ReasonCompleted = "Completed"
	// ReasonNoisy: every query of every Job ran and returned (Succeeded is True), but in at least one
	// Job the typical query's spread over its iterations (the median of the spreadPermille of its
	// queries of 20 ms or more) is above 15%: its times are too noisy to rank close results. The
	// message names the Jobs and their spread.
	ReasonNoisy = "Noisy"
	// ReasonQueriesFailed: some queries failed or timed out; the others' results are in status.
	ReasonQueriesFailed = "QueriesFailed"
	// ReasonOOMKilled: a query was killed for exceeding its configuration's memory limit.
	ReasonOOMKilled = "OOMKilled"
	// ReasonTimeout: the whole run exceeded spec.timeout.
	ReasonTimeout = "Timeout"
	// ReasonResultMismatch: the same query returned different results on different inputs or
	// configurations.
	ReasonResultMismatch = "ResultMismatch"
	// ReasonDatasetNotReady: the Dataset stopped being usable while the run waited for it.
	ReasonDatasetNotReady = "DatasetNotReady"
	// ReasonUnsupported: the run asks for an input or engine this release cannot run yet.
	ReasonUnsupported = "Unsupported"
	// ReasonJobLost: a BenchRun's Job disappeared (deleted by a person or a policy) before its result
	// was recorded; its queries count as not run.
	ReasonJobLost = "JobLost"
	// ReasonJobConflict: a Job with the name the controller derives for this object exists and
	// belongs to something else; the controller will not touch it.
	ReasonJobConflict = "JobConflict"
	// ReasonJobRejected: the API server refused to create a Job, or the pods of a Job (a
	// ResourceQuota, a LimitRange, a missing ServiceAccount, an admission policy or webhook); the
	// message quotes it. The controller tries again every 10 s (the Job controller, with backoff, for a
	// Job's pods) until spec.timeout or sync.timeout.
	ReasonJobRejected = "JobRejected"
	// ReasonPodNotStarting: a worker pod was scheduled but its container cannot start (an image that
	// cannot be pulled, a missing Secret or ConfigMap, a volume that cannot be mounted); the message
	// carries the kubelet's words. It waits until the Job's deadline, or until the cause is fixed.
	ReasonPodNotStarting = "PodNotStarting"
	// ReasonGenerationNotHeld: the run reads per-node copies of its Dataset, and no node holds the
	// generation it pinned at its start (yet, or any more); its Jobs wait for one until spec.timeout.
	ReasonGenerationNotHeld = "GenerationNotHeld"
)
