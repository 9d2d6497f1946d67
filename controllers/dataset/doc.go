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

// Package dataset is the Kubernetes glue of a Dataset: the reconciler that keeps a claim (or copies on
// nodes) in step with the Dataset's S3 prefix by starting worker Jobs, recording their reports, and
// writing status; it never reads S3 or a volume itself (that is the cache package, in the workers
// and node agents).
//
// One job per file: controller.go (the reconcile's steps), sync_policy.go (when a sync is due, a pure
// function), claims.go (the claim: ownership, sizing, growth), syncjob.go (the sync Job's spec),
// syncresult.go (recording a finished Job), conditions.go, events.go (S3 event notifications; the
// hub itself is controllers/eventhub), news.go (what a reconcile announces), metrics.go,
// worker_account.go and agent_grant.go (the accounts and grants made by name). A Dataset with
// spec.replicas keeps copies on nodes instead, with no claim and no Job: replicas.go (its
// DatasetReplicas, the seed's sync requests, the copies summed up in status), replica_plan.go
// (which nodes keep a copy and where each copies from, a pure function), agent_pods.go and
// node_labels.go (each node labelled with the Datasets it holds a ready copy of; the webhook that
// places readers by it is controllers/locality). setup.go registers it all with a manager.
package dataset
