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

// DatasetReconciler keeps a Dataset's volume in step with its S3 prefix.
//
// Today it only acknowledges each generation of a Dataset in status; the volume, the sync Jobs and
// their triggers come with the Dataset controller issue.
type DatasetReconciler struct {
	client.Client
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets/status,verbs=get;update;patch

// Reconcile brings one Dataset's status up to date with what the controller knows.
func (r *DatasetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var ds datav1alpha1.Dataset
	if err := r.Get(ctx, req.NamespacedName, &ds); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := ds.DeepCopy()

	markInitializing(&ds.Status.Conditions, ds.Generation, datav1alpha1.ConditionReady, "Waiting for the first sync")
	ds.Status.ObservedGeneration = ds.Generation

	if equality.Semantic.DeepEqual(orig.Status, ds.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.Status().Patch(ctx, &ds, client.MergeFrom(orig)); err != nil {
		return ctrl.Result{}, fmt.Errorf("updating status of dataset %s: %w", klog.KObj(&ds), err)
	}
	log.V(1).Info("Updated dataset status", "dataset", klog.KObj(&ds), "generation", ds.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with mgr.
func (r *DatasetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.Dataset{}).
		Named("dataset").
		Complete(r)
}
