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

package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// syncPanics counts the syncs of a copy that ended in a recovered panic, served on the agent's
// metrics endpoint (the manager's): any increase is a bug to report, and the copy's status says which
// Dataset reaches it. Labels are namespace and dataset only, so the series follow the Datasets.
var syncPanics = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pqcache_agent_sync_panics_total",
	Help: "Syncs of a node copy that ended in a recovered panic.",
}, []string{"namespace", "dataset"})

func init() { metrics.Registry.MustRegister(syncPanics) }
