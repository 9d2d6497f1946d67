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

// Condition reasons that a worker, an agent's sync engine or an event source decides. They are
// defined here, once, and not in api/v1alpha1 with the other reasons, because the packages that
// decide them (cache, cache/s3store, cache/notify, the bench runner) import no Kubernetes package
// and so cannot import api/v1alpha1. The controllers and the agent put them into conditions and
// status as they are: a report's reason is already the Dataset's reason, with no translation. They
// are part of the API: alerts, dashboards and docs/troubleshooting.md key on them, so they never
// change meaning once released.

// Reasons a failed sync reports, in SyncReport.Reason and then in a Dataset's (or a
// DatasetReplica's) lastSync.reason and conditions.
const (
	// ReasonAccessDenied: the store refused the credentials' access to the bucket or prefix. An
	// event source's queue that refuses them reports it too.
	ReasonAccessDenied = "AccessDenied"
	// ReasonNoSuchBucket: the bucket does not exist at the endpoint.
	ReasonNoSuchBucket = "NoSuchBucket"
	// ReasonInvalidCredentials: the credentials are missing, malformed or rejected (by the store, or
	// by an event source's queue).
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonInsufficientCapacity: the volume cannot hold what the sync would write (ENOSPC, EDQUOT
	// included).
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonHostileKeys: some keys would escape the cache directory (a key outside the listed prefix
	// among them) or were listed with a negative size, and were refused; the rest synced.
	ReasonHostileKeys = "HostileKeys"
	// ReasonSourceMisbehaving: the store's listing broke the protocol in a way no retry within the
	// sync fixes (a page over the size cap, a continuation token that came back, an endless run of
	// empty pages that say more follow, a page that does not parse as a listing); the sync stopped
	// and the published data stays as it was.
	ReasonSourceMisbehaving = "SourceMisbehaving"
	// ReasonSourceTooSlow: the store sent an answer so slowly (a byte every few seconds) that it
	// cannot be one: under a floor of 1 MiB a minute while it was waited for. The sync stopped well
	// before its deadline, gave back its transfer slots, and the published data stays as it was.
	ReasonSourceTooSlow = "SourceTooSlow"
	// ReasonVolumeReadOnly: the cache volume is mounted read-only (EROFS); nothing could be published.
	ReasonVolumeReadOnly = "VolumeReadOnly"
	// ReasonVolumePermissionDenied: the worker may not write to the cache volume (EACCES, EPERM), e.g.
	// an existing claim whose files belong to another user.
	ReasonVolumePermissionDenied = "VolumePermissionDenied"
	// ReasonVolumeIOError: the cache volume failed writes (EIO); retried with backoff.
	ReasonVolumeIOError = "VolumeIOError"
	// ReasonPanicked: the sync hit a bug (a panic) while listing, downloading, or in the node agent's
	// handling of the copy; it was recovered, the published data stays as it was, and the agent
	// serves its other copies as before; the copy is retried with backoff.
	ReasonPanicked = "Panicked"
	// ReasonOverByteCap: the generation the sync planned is larger than the Dataset's byte cap
	// (spec.replicas.maxBytes); nothing past the cap was copied, and the last published generation
	// stands.
	ReasonOverByteCap = "OverByteCap"
	// ReasonNodeReserve: the copies the sync planned would leave less free space on the node's cache
	// root than the node agent keeps for the node (its node reserve); nothing past it was copied, and
	// the last published generation stands.
	ReasonNodeReserve = "NodeReserve"
	// ReasonSyncDeadlineExceeded: the sync ran past its deadline (its listing past a fixed bound, or
	// its copies past a time derived from their bytes); it stopped, gave back its transfer slots, and
	// the published data stays as it was; retried with backoff.
	ReasonSyncDeadlineExceeded = "SyncDeadlineExceeded"
	// ReasonSyncFailed: the worker ran and reported failures not covered by a more specific reason.
	ReasonSyncFailed = "SyncFailed"
	// ReasonTableCorrupt: the table's log does not read as a committed snapshot (a line that is not
	// JSON, a truncated commit, a gap in its versions, a checkpoint that does not parse), or a commit
	// names a file the bucket does not hold; nothing of it was published, and the last published
	// snapshot stands.
	ReasonTableCorrupt = "TableCorrupt"
	// ReasonTableUnsupported: the table needs a protocol version or a table feature pqcache does not
	// read (the message names it); the last published snapshot stands.
	ReasonTableUnsupported = "TableUnsupported"
)

// syncFailureReasons are the reasons a sync report may carry.
var syncFailureReasons = []string{
	ReasonAccessDenied, ReasonNoSuchBucket, ReasonInvalidCredentials, ReasonInsufficientCapacity,
	ReasonHostileKeys, ReasonSourceMisbehaving, ReasonSourceTooSlow, ReasonVolumeReadOnly, ReasonVolumePermissionDenied,
	ReasonVolumeIOError, ReasonPanicked, ReasonOverByteCap, ReasonNodeReserve, ReasonSyncDeadlineExceeded, ReasonSyncFailed,
	ReasonAmbientCredentialsNotAllowed, ReasonTableCorrupt, ReasonTableUnsupported,
}

// SyncFailureReason returns the reason a failed sync's report gave, or ReasonSyncFailed when it gave
// none or one this release does not know: a report is read from a worker's termination message, which
// any process in the pod can write, and a condition's reason must be one the API documents.
func SyncFailureReason(reported string) string {
	for _, r := range syncFailureReasons {
		if reported == r {
			return r
		}
	}
	return ReasonSyncFailed
}

// Reasons an event source's health gives (besides ReasonAccessDenied and ReasonInvalidCredentials),
// for a Dataset's EventSource condition.
const (
	// ReasonQueueNotFound: spec.refresh.events.sqs names a queue that does not exist.
	ReasonQueueNotFound = "QueueNotFound"
	// ReasonUnavailable: the event source cannot be reached right now; it is retried with backoff.
	ReasonUnavailable = "Unavailable"
)

// Reasons a bench runner gives for running no query, in BenchResult.ErrorReason and then in the
// BenchRun's results and conditions.
const (
	// ReasonInvalidWorkload: a BenchRun's workload cannot run: it does not parse, breaks a rule (an
	// empty query, two queries with one name), names queries it lacks, or has too many queries. The
	// controller gives it too, for a workload it refuses before any Job starts.
	ReasonInvalidWorkload = "InvalidWorkload"
	// ReasonMissingTables: the data has no files for a table of the workload; the Job checked every
	// table before running any query, and the message names those it did not find.
	ReasonMissingTables = "MissingTables"
	// ReasonRefreshRefused: a run asked to be measured during refreshes could not rewrite the files
	// it reads (RefreshResult.Error says what the store answered when it was not AccessDenied,
	// InvalidCredentials or NoSuchBucket).
	ReasonRefreshRefused = "RefreshRefused"
)
