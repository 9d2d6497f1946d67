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

// Package benchrun is the Kubernetes glue of a BenchRun: once its Dataset is Ready, one `pqcache bench`
// Job per engine, configuration and input, admitted under the cluster's and each node's caps, and
// the Jobs' reports summed up in status with the run's verdict and cost.
//
// One job per file: controller.go (the reconcile), workload.go (the run's workload, settled before
// its first Job), plan.go (which Jobs a run has), job.go (a Job's spec), nodes.go (Jobs that read
// per-node copies, on the nodes holding the pinned generation), placement.go (admission per node),
// account.go, refresh.go (runs during a refresh), spark*.go (the Spark engine's driver and
// executors), results.go (reading a finished Job), status.go (the Jobs summed up in status),
// outcome.go (the verdict), cost.go, pricing*.go and prices.go (cost and break-even, pure),
// metrics.go and setup.go.
package benchrun
