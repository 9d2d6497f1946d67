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

package manager

import (
	"time"

	"github.com/pqcache/pqcache/controllers/benchrun"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure the reconcilers; the manager command fills them from its flags.
type Options struct {
	// Clock is the time source of refresh schedules and backoff; tests inject a fake one.
	Clock clock.PassiveClock
	// Worker configures the Jobs that move data.
	Worker jobs.WorkerOptions
	// MaxConcurrentSyncs caps sync Jobs across the cluster; 0 means no cap.
	MaxConcurrentSyncs int
	// MaxConcurrentBenchJobs caps bench Jobs across the cluster; 0 means no cap.
	MaxConcurrentBenchJobs int
	// PricesFile is the operator's prices file (NewPrices); "": the built-in list prices.
	PricesFile string
	// MaxBenchJobsPerNode caps unfinished bench pods on one node; 0 means no cap.
	MaxBenchJobsPerNode int
	// AdmissionSweepInterval is how often the admission queues drop keys of deleted objects (default 5m).
	AdmissionSweepInterval time.Duration
	// Namespaces are the namespaces the manager watches (none: all); the node labeller leaves other
	// installations' labels alone.
	Namespaces []string
	// Events runs the Datasets' event sources (spec.refresh.events); nil: such Datasets refresh on
	// their schedule only, and their EventSource condition says so.
	Events dataset.EventHub
	// AgentPods finds the node agents' pods (the chart's DaemonSet); nil: not looked for.
	AgentPods *dataset.AgentPods
	// AgentAccount is the node agents' ServiceAccount: the manager grants it, by name, the Secret
	// each Dataset with spec.replicas names (controllers/dataset, agent_grant.go). Empty: no agents, no grants.
	AgentAccount types.NamespacedName
}

// SetupAll registers every pqcache reconciler with mgr, each with the worker options defaulted and
// checked once. The manager command calls it; the envtest suites call the same Setup of each package.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.Worker = opts.Worker.WithDefaults()
	if err := opts.Worker.Validate(); err != nil {
		return err
	}
	err := dataset.Setup(mgr, dataset.Options{Clock: opts.Clock, Worker: opts.Worker, MaxConcurrentSyncs: opts.MaxConcurrentSyncs,
		SweepInterval: opts.AdmissionSweepInterval, Namespaces: opts.Namespaces, Events: opts.Events, AgentPods: opts.AgentPods,
		AgentAccount: opts.AgentAccount})
	if err != nil {
		return err
	}
	return benchrun.Setup(mgr, benchrun.Options{Clock: opts.Clock, Worker: opts.Worker, MaxConcurrentJobs: opts.MaxConcurrentBenchJobs,
		MaxJobsPerNode: opts.MaxBenchJobsPerNode, PricesFile: opts.PricesFile, SweepInterval: opts.AdmissionSweepInterval,
		Namespaces: opts.Namespaces})
}
