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

// Package controllers holds the Kubernetes glue of pqcache: reconcilers that read a Dataset or
// BenchRun, build the PVCs and Jobs that do the work, and write status. The work itself (moving bytes,
// running queries) lives in the cache and bench packages and runs in worker pods, never here.
package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// markInitializing records that the controller has seen generation gen of an object and has not yet
// acted on it: the outcome condition (Ready or Succeeded) is Unknown and Reconciling is True, which
// kstatus reads as InProgress. Conditions already present keep their LastTransitionTime; only their
// ObservedGeneration moves forward.
func markInitializing(conds *[]metav1.Condition, gen int64, outcome, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               outcome,
		Status:             metav1.ConditionUnknown,
		Reason:             datav1alpha1.ReasonInitializing,
		Message:            message,
		ObservedGeneration: gen,
	})
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               datav1alpha1.ConditionReconciling,
		Status:             metav1.ConditionTrue,
		Reason:             datav1alpha1.ReasonInitializing,
		Message:            message,
		ObservedGeneration: gen,
	})
}
