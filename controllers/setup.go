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

package controllers

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure the reconcilers; the manager command fills them from its flags.
type Options struct {
	// Clock is the time source of refresh schedules and backoff; tests inject a fake one.
	Clock clock.PassiveClock
	// Worker configures the Jobs that move data.
	Worker WorkerOptions
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
	Events EventHub
	// AgentPods finds the node agents' pods (the chart's DaemonSet); nil: not looked for.
	AgentPods *AgentPods
	// AgentAccount is the node agents' ServiceAccount: the manager grants it, by name, the Secret
	// each Dataset with spec.replicas names (agent_grant.go). Empty: no agents, no grants.
	AgentAccount types.NamespacedName
}

// CacheOptions configures the manager's informers: only the watched namespaces (none: all), and of
// the Jobs only pqcache's own, so that a cluster running ten thousand other Jobs costs the manager
// no memory for them. Pods and events are never cached (the controllers read the few they need).
func CacheOptions(namespaces []string) crcache.Options {
	ours := labels.SelectorFromSet(labels.Set{labelManagedBy: "pqcache"})
	opts := crcache.Options{ByObject: map[client.Object]crcache.ByObject{
		&batchv1.Job{}: {Label: ours},
		// The Roles, RoleBindings and ServiceAccounts the manager makes (agent_grant.go,
		// worker_account.go): the cluster's others are none of its business.
		&rbacv1.Role{}:           {Label: ours},
		&rbacv1.RoleBinding{}:    {Label: ours},
		&corev1.ServiceAccount{}: {Label: ours},
	}}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	return opts
}

// SetupAll registers every pqcache reconciler with mgr. The manager command and the envtest suite both
// call it, so the suite runs exactly what ships.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.Worker = opts.Worker.withDefaults()
	if err := opts.Worker.validate(); err != nil {
		return err
	}
	ds := &DatasetReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Clock:              opts.Clock,
		Recorder:           mgr.GetEventRecorder("pqcache-dataset"),
		Worker:             opts.Worker,
		MaxConcurrentSyncs: opts.MaxConcurrentSyncs,
		SweepInterval:      opts.AdmissionSweepInterval,
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
	prices, err := NewPrices(opts.PricesFile)
	if err != nil {
		return fmt.Errorf("--prices-file: %w", err)
	}
	br := &BenchRunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: opts.Clock, Worker: opts.Worker,
		MaxConcurrentJobs: opts.MaxConcurrentBenchJobs, MaxJobsPerNode: opts.MaxBenchJobsPerNode, Namespaces: opts.Namespaces,
		SweepInterval: opts.AdmissionSweepInterval, Prices: prices,
	}
	if err := br.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up benchrun controller: %w", err)
	}
	return nil
}
