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

import "testing"

// A report's reason reaches status as it is when it is a sync failure reason, and as SyncFailed
// otherwise: the termination message is written by whatever runs in the worker's pod.
func TestSyncFailureReasonPassesKnownReasonsOnly(t *testing.T) {
	for _, r := range syncFailureReasons {
		if got := SyncFailureReason(r); got != r {
			t.Errorf("%q: %q, want it unchanged", r, got)
		}
	}
	for _, r := range []string{"", "syncfailed", "QueueNotFound", "MissingTables", "Whatever the pod wrote"} {
		if got := SyncFailureReason(r); got != ReasonSyncFailed {
			t.Errorf("%q: %q, want %q", r, got, ReasonSyncFailed)
		}
	}
}
