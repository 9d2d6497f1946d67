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

// Package wire is the contract between pqcache's worker processes and its controllers: the typed
// arguments a controller starts a worker with (args.go), what a worker writes where the controller
// reads it (the sync report and the bench summary in a termination message, live progress in a pod
// annotation: sync.go, bench.go, pod.go), the change sets of targeted syncs (changes.go) and the
// environment variables the controllers set for the workers. Both sides import it, and it imports
// nothing of pqcache's, nor Kubernetes, nor an S3 client: a controller reads a worker's report without
// linking the sync engine, and a change to the contract shows up in one place.
package wire

import "unicode/utf8"

// TerminationMessageLimit is the size Kubernetes keeps of a container's termination message, the
// channel both reports travel through.
const TerminationMessageLimit = 4096

// Truncate shortens s to at most n bytes, ending in "..." when it cut, without splitting a UTF-8
// sequence: status messages and events must stay valid UTF-8 whatever the worker wrote.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:cutPoint(s, n)]
	}
	return s[:cutPoint(s, n-3)] + "..."
}

// cutPoint is the largest index ≤ n that starts a rune (or ends s).
func cutPoint(s string, n int) int {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
