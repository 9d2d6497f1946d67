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
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeWaitWhy(t *testing.T) {
	w := admission.NodeWant{Nodes: []string{"node-a"}}
	for _, tc := range []struct {
		w    admission.NodeWant
		use  admission.NodeUse
		want string
	}{
		{w: w, use: admission.NodeUse{Bench: 1}, want: "every node it can run on runs the operator's cap of 1 bench Job(s) per node"},
		{w: w, use: admission.NodeUse{Bench: 1, ExclusiveRun: "team/solo"}, want: "node node-a runs a Job of exclusive BenchRun team/solo"},
		{w: admission.NodeWant{Nodes: w.Nodes, Exclusive: true}, use: admission.NodeUse{Others: 1}, want: "waiting for a node that runs no other pqcache Job (spec.exclusive)"},
		{w: w, use: admission.NodeUse{}, want: ""},
	} {
		if got := nodeWaitWhy(tc.w, map[string]admission.NodeUse{"node-a": tc.use}, 1); got != tc.want {
			t.Errorf("nodeWaitWhy(%+v) = %q, want %q", tc.use, got, tc.want)
		}
	}
}

// An exclusive Job's pod is labelled and keeps off pqcache's worker pods; any other keeps off
// exclusive pods, and under a cap of 1 off other bench pods; both avoid the full nodes, in every term
// of the run's own node affinity, without changing the run's affinity that its other Jobs share.
func TestWithBenchPlacement(t *testing.T) {
	shared := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}, {}},
	}}}
	job := func() *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobs.LabelComponent: componentBench}},
			Spec:       corev1.PodSpec{Affinity: shared}}}}
	}
	ex := job()
	withBenchPlacement(ex, true, 1, []string{"node-b"})
	if ex.Spec.Template.Labels[jobs.LabelExclusiveBench] != "true" {
		t.Errorf("exclusive pod labels %v", ex.Spec.Template.Labels)
	}
	terms := ex.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].LabelSelector.MatchExpressions[0].Values[1] != jobs.ComponentSync || terms[0].NamespaceSelector == nil {
		t.Errorf("exclusive anti-affinity %+v", terms)
	}
	for _, term := range ex.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		want := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-b"}}
		if diff := cmp.Diff([]corev1.NodeSelectorRequirement{want}, term.MatchFields); diff != "" {
			t.Errorf("term %+v (-want +got):\n%s", term, diff)
		}
	}
	if len(shared.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields) != 0 || shared.PodAntiAffinity != nil {
		t.Errorf("the run's own affinity changed: %+v", shared)
	}

	other := job()
	withBenchPlacement(other, false, 1, nil)
	terms = other.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 2 || terms[0].LabelSelector.MatchLabels[jobs.LabelExclusiveBench] != "true" || terms[1].LabelSelector.MatchLabels[jobs.LabelComponent] != componentBench {
		t.Errorf("anti-affinity under cap 1: %+v", terms)
	}
	uncapped := job()
	withBenchPlacement(uncapped, false, 0, nil)
	if n := len(uncapped.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution); n != 1 {
		t.Errorf("without a cap a bench pod should keep off exclusive pods only; %d terms", n)
	}
}
