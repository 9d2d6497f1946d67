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

package dataset

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/controllers/jobs"
)

// Options configure the Dataset side of the manager.
type Options struct {
	// Clock is the time source of refresh schedules and backoff; tests inject a fake one.
	Clock clock.PassiveClock
	// Worker configures the sync Jobs (defaults filled and validated by the caller).
	Worker jobs.WorkerOptions
	// MaxConcurrentSyncs caps sync Jobs across the cluster; 0 means no cap.
	MaxConcurrentSyncs int
	// SweepInterval is how often the admission queue drops keys of deleted Datasets (default 5m).
	SweepInterval time.Duration
	// Namespaces are the namespaces the manager watches (none: all); the node labeller leaves other
	// installations' labels alone.
	Namespaces []string
	// Events runs the Datasets' event sources (spec.refresh.events); nil: such Datasets refresh on
	// their schedule only, and their EventSource condition says so.
	Events EventHub
	// AgentPods finds the node agents' pods (the chart's DaemonSet); nil: not looked for.
	AgentPods *AgentPods
	// AgentAccount is the node agents' ServiceAccount: the manager grants it, by name, the Secret
	// each Dataset with spec.replicas names (agent_grant.go). Empty: no agents, no grants.
	AgentAccount types.NamespacedName
}

// Setup registers the Dataset reconciler and the node labeller with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	ds := &Reconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Clock:              opts.Clock,
		Recorder:           mgr.GetEventRecorder("pqcache-dataset"),
		Worker:             opts.Worker,
		MaxConcurrentSyncs: opts.MaxConcurrentSyncs,
		SweepInterval:      opts.SweepInterval,
		Events:             opts.Events,
		AgentPods:          opts.AgentPods,
		AgentAccount:       opts.AgentAccount,
	}
	if err := ds.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up dataset controller: %w", err)
	}
	nl := &NodeLabelReconciler{Client: mgr.GetClient(), Namespaces: opts.Namespaces}
	if err := nl.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up node label controller: %w", err)
	}
	return nil
}
