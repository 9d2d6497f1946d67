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

// Event reasons. Like condition reasons they are part of the API: alerts key on them.
const (
	// EventSyncStarted: a sync Job was created.
	EventSyncStarted = "SyncStarted"
	// EventSyncSucceeded: a sync published the bucket's data.
	EventSyncSucceeded = "SyncSucceeded"
	// EventSyncFailed: a sync failed; it will be retried with backoff.
	EventSyncFailed = "SyncFailed"
	// EventSyncFailing: syncs keep failing (a Warning, sent once the failures persist).
	EventSyncFailing = "SyncFailing"
	// EventChangesFoundByListing: listing syncs in a row found changes no event notification
	// announced (a Warning): the store, or the way to the operator, loses notifications.
	EventChangesFoundByListing = "ChangesFoundByListing"
	// EventFilesUnverified: a sync copied files with a weaker check than the store vouches for (a
	// Warning): a store that ignores part reads; status.lastSync.warning says why.
	EventFilesUnverified = "FilesUnverified"
	// EventClaimCreated: the controller created the Dataset's PersistentVolumeClaim.
	EventClaimCreated = "ClaimCreated"
	// EventReplicaRemoved: a node's copy was given up (the node stopped matching spec.replicas, or is
	// gone); its agent removes the files.
	EventReplicaRemoved = "ReplicaRemoved"
)
