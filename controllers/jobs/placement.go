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

package jobs

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AvoidExclusiveBench keeps a sync Job's pod off the nodes where an exclusive bench Job runs.
func AvoidExclusiveBench(pod *corev1.PodSpec) {
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	AddAntiAffinity(pod.Affinity, ExclusiveBenchTerm())
}

// ExclusiveBenchTerm matches the pods of exclusive bench Jobs, in every namespace, on one node.
func ExclusiveBenchTerm() corev1.PodAffinityTerm {
	return OnOtherNodes(&metav1.LabelSelector{MatchLabels: map[string]string{LabelExclusiveBench: "true"}})
}

// OnOtherNodes is a term for "not on a node running pods that sel matches, in any namespace".
func OnOtherNodes(sel *metav1.LabelSelector) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{LabelSelector: sel, NamespaceSelector: &metav1.LabelSelector{}, TopologyKey: corev1.LabelHostname}
}

// AddAntiAffinity adds required pod anti-affinity terms to a.
func AddAntiAffinity(a *corev1.Affinity, terms ...corev1.PodAffinityTerm) {
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
}

// LabelExclusiveBench marks the pods of an exclusive run's bench Jobs. Other bench pods and sync pods
// keep off their node with a required pod anti-affinity on it: no node is written, and no RBAC is
// needed beyond what the Jobs already have.
const LabelExclusiveBench = "data.pqcache.dev/exclusive-bench"
