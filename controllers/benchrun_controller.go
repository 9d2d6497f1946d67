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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// BenchRunReconciler runs a BenchRun's query Jobs and collects their results.
//
// Today it only acknowledges each BenchRun in status; the Jobs and results come with the BenchRun
// controller issue.
type BenchRunReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns/status,verbs=get;update;patch

// Reconcile brings one BenchRun's status up to date with what the controller knows.
func (r *BenchRunReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var run datav1alpha1.BenchRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := run.DeepCopy()

	markInitializing(&run.Status.Conditions, run.Generation, datav1alpha1.ConditionSucceeded, "Waiting to start")
	run.Status.ObservedGeneration = run.Generation

	if equality.Semantic.DeepEqual(orig.Status, run.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.Status().Patch(ctx, &run, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating status of benchrun %s: %w", klog.KObj(&run), err)
	}
	log.V(1).Info("Updated benchrun status", "benchrun", klog.KObj(&run), "generation", run.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with mgr.
func (r *BenchRunReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.BenchRun{}).
		Named("benchrun").
		Complete(r)
}
