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

package benchrun

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// benchRunsFinished counts finished BenchRuns on the manager's metrics endpoint.
var benchRunsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pqcache_benchruns_finished_total",
	Help: "BenchRuns that finished, by result (Succeeded or Failed) and reason (Completed, OOMKilled, ResultMismatch, ...).",
}, []string{"namespace", "result", "reason"})

func init() {
	metrics.Registry.MustRegister(benchRunsFinished)
}

// observeRunFinished counts a BenchRun that has just finished.
func observeRunFinished(namespace string, succeeded bool, reason string) {
	result := "Failed"
	if succeeded {
		result = "Succeeded"
	}
	benchRunsFinished.With(prometheus.Labels{"namespace": namespace, "result": result, "reason": reason}).Inc()
}
