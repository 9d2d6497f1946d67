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

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
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
}

// SetupAll registers every pqcache reconciler with mgr. The manager command and the envtest suite both
// call it, so the suite runs exactly what ships.
func SetupAll(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Worker.Image == "" {
		opts.Worker = DefaultWorkerOptions()
	}
	ds := &DatasetReconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		Clock:              opts.Clock,
		Recorder:           mgr.GetEventRecorder("pqcache-dataset"),
		Worker:             opts.Worker,
		MaxConcurrentSyncs: opts.MaxConcurrentSyncs,
	}
	if err := ds.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up dataset controller: %w", err)
	}
	br := &BenchRunReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: opts.Clock, Worker: opts.Worker,
		MaxConcurrentJobs: opts.MaxConcurrentBenchJobs,
	}
	if err := br.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up benchrun controller: %w", err)
	}
	return nil
}
