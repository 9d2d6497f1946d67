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

// Package controllers holds the Kubernetes glue of pqcache: reconcilers that read a Dataset or
// BenchRun, build the PVCs and Jobs (or, for per-node copies, the DatasetReplicas) that do the work,
// and write status. The work itself (moving bytes, running queries) lives in the cache and bench
// packages and runs in worker pods or node agents, never here.
//
// One job per file. The Dataset side: dataset_controller.go (the reconcile's steps), sync_policy.go
// (when a sync is due, a pure function), claims.go (the claim: ownership, sizing, growth),
// syncjob.go (the sync Job's spec), syncresult.go (recording a finished Job), dataset_conditions.go
// and events.go (S3 event notifications; the hub itself is controllers/eventhub). A Dataset with
// spec.replicas keeps copies on nodes instead, with no claim and no Job: dataset_replicas.go (its
// reconcile: the DatasetReplicas, the seed's sync requests, the copies summed up in status),
// replica_plan.go (which nodes keep a copy and where each copies from, a pure function) and
// node_labels.go (each node labelled with the Datasets it holds a ready copy of, for placing
// readers beside them; the webhook that does is controllers/locality). The BenchRun side:
// benchrun_controller.go, benchworkload.go (the run's workload, settled before its first Job),
// benchplan.go (which Jobs a run has), benchjob.go (a Job's spec), benchnodes.go (Jobs that read
// per-node copies: through the CSI driver, on the nodes holding the pinned generation), benchresults.go (reading a
// finished Job), benchrun_status.go (the Jobs summed up in status and conditions), benchoutcome.go
// (the run's verdict) and pricing.go (cost and break-even, pure). Shared: workerpod.go (what every
// worker pod has), admission.go (the cap on concurrent Jobs of each kind), status.go (the one
// status write), podstate.go (why a pod does not run), names.go, metrics.go and setup.go (wiring
// into a manager). This file, conditions.go, holds only this doc.
package controllers
