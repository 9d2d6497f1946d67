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

// Package worker is what a worker pod (and a person at a terminal) runs: a sync, a stage, a bench run,
// assembled from the sync engine (cache), the query runner (bench) and the worker contract
// (api/wire). The command line (internal/cli) parses flags into the contract's arguments and calls
// it. The environment a controller gives a worker pod (the endpoint guard, anonymous reads, the peer
// key) is read here; its one use of the Kubernetes API is to publish a sync's live progress on its own
// pod (podprogress).
package worker
