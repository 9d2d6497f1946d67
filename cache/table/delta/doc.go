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

// Package delta turns a Delta Lake table's transaction log into the exact set of objects one
// committed version needs: the _delta_log entries a reader replays (the newest usable checkpoint at
// or below the version and every JSON commit after it) and every data file live in that version.
//
// A sync that copies that set, and nothing newer, gives readers (delta-rs, DuckDB's delta extension,
// Spark) a consistent table at that version even while writers keep committing to the source. The
// package is pure logic over a listing and a fetch function: it does no listing or storage I/O of
// its own beyond a temporary file for Parquet checkpoints, and imports no Kubernetes package.
//
// The bucket's content is untrusted: every size, count and line length is capped (Limits), every
// path is decoded and checked to stay inside the table, and a malformed log is an error, never a
// panic. The protocol is the one in github.com/delta-io/delta PROTOCOL.md.
package delta
