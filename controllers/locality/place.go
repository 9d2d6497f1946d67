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

// Package locality places pods that read a Dataset through the CSI driver beside its copies: a
// mutating admission webhook adds a node affinity for the nodes the node labeller marked as holding
// a ready copy (datav1alpha1.NodeLabelKey). Fluid's tiered locality is the model: required by
// default, or preferred with the node at weight 100 and the copies' zones at 50.
package locality

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// LabelMode is the label, on a namespace or a pod, that opts pods in: "required" or "preferred".
// A pod's own label wins over its namespace's.
const LabelMode = "data.pqcache.dev/locality"

// Modes of placement.
const (
	ModeRequired  = "required"
	ModePreferred = "preferred"
)

// Weights of the preferred terms: the node that holds a copy, then a node in the same zone as one.
const (
	weightNode = 100
	weightZone = 50
)

// csiDriver is the agent's CSI driver (agent/csi.DriverName; not imported, to keep the manager's
// binary free of the node plugin's gRPC code).
const csiDriver = "data.pqcache.dev"

// DatasetsRead lists the Datasets a pod mounts through the driver, in volume order, once each.
func DatasetsRead(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.CSI == nil || v.CSI.Driver != csiDriver {
			continue
		}
		if name := v.CSI.VolumeAttributes["dataset"]; name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// Place adds the node affinity for each Dataset the pod reads (its namespace's): with ModeRequired,
// a requirement on the Dataset's node label in every node selector term; with ModePreferred, a
// preferred term of weight 100 on the label and, when zones is not empty, one of weight 50 on those
// zones. It changes nothing already there, so placing a pod twice is placing it once, and reports
// whether it changed the pod.
func Place(pod *corev1.Pod, mode string, datasets []string, zones map[string][]string) bool {
	changed := false
	for _, name := range datasets {
		req := corev1.NodeSelectorRequirement{
			Key: datav1alpha1.NodeLabelKey(pod.Namespace, name), Operator: corev1.NodeSelectorOpIn, Values: []string{pod.Namespace},
		}
		if mode == ModeRequired {
			changed = require(pod, req) || changed
			continue
		}
		changed = prefer(pod, weightNode, req) || changed
		if z := zones[name]; len(z) > 0 {
			zoneReq := corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: z}
			changed = prefer(pod, weightZone, zoneReq) || changed
		}
	}
	return changed
}

func nodeAffinity(pod *corev1.Pod) *corev1.NodeAffinity {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return pod.Spec.Affinity.NodeAffinity
}

// require ANDs req into every term of the required node selector (terms are ORed, so each needs it).
func require(pod *corev1.Pod, req corev1.NodeSelectorRequirement) bool {
	na := nodeAffinity(pod)
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	sel := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(sel.NodeSelectorTerms) == 0 {
		sel.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	changed := false
	for i := range sel.NodeSelectorTerms {
		t := &sel.NodeSelectorTerms[i]
		if !hasRequirement(t.MatchExpressions, req) {
			t.MatchExpressions = append(t.MatchExpressions, req)
			changed = true
		}
	}
	return changed
}

// prefer adds a preferred term of one requirement, unless the same term is there.
func prefer(pod *corev1.Pod, weight int32, req corev1.NodeSelectorRequirement) bool {
	na := nodeAffinity(pod)
	for _, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		if t.Weight == weight && len(t.Preference.MatchExpressions) == 1 && hasRequirement(t.Preference.MatchExpressions, req) {
			return false
		}
	}
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}})
	return true
}

func hasRequirement(list []corev1.NodeSelectorRequirement, req corev1.NodeSelectorRequirement) bool {
	for _, r := range list {
		if r.Key == req.Key && r.Operator == req.Operator && slices.Equal(r.Values, req.Values) {
			return true
		}
	}
	return false
}
