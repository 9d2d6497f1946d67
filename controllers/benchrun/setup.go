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
	"fmt"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/pqcache/pqcache/controllers/jobs"
)

// Options configure the BenchRun side of the manager.
type Options struct {
	// Clock is the time source of deadlines and refresh requests; tests inject a fake one.
	Clock clock.PassiveClock
	// Worker configures the bench Jobs (defaults filled and validated by the caller).
	Worker jobs.WorkerOptions
	// MaxConcurrentJobs caps bench Jobs across the cluster; 0 means no cap.
	MaxConcurrentJobs int
	// MaxJobsPerNode caps unfinished bench pods on one node; 0 means no cap.
	MaxJobsPerNode int
	// PricesFile is the operator's prices file (NewPrices); "": the built-in list prices.
	PricesFile string
	// SweepInterval is how often the admission queue drops keys of deleted BenchRuns (default 5m).
	SweepInterval time.Duration
	// Namespaces are the namespaces the manager watches (none: all).
	Namespaces []string
}

// Setup registers the BenchRun reconciler with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	prices, err := NewPrices(opts.PricesFile)
	if err != nil {
		return fmt.Errorf("--prices-file: %w", err)
	}
	br := &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Clock: opts.Clock, Worker: opts.Worker,
		MaxConcurrentJobs: opts.MaxConcurrentJobs, MaxJobsPerNode: opts.MaxJobsPerNode, Namespaces: opts.Namespaces,
		SweepInterval: opts.SweepInterval, Prices: prices,
	}
	if err := br.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up benchrun controller: %w", err)
	}
	return nil
}
