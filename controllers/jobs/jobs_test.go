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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

func TestWorkerOptionsKeepWhatIsSetAndRefuseAZeroTTL(t *testing.T) {
	got := WorkerOptions{CABundle: &ConfigMapKey{Name: "ca", Key: "ca.crt"}, ServiceAccount: "worker"}.WithDefaults()
	if got.Image == "" || got.TTLAfterFinished != time.Hour || got.Resources.Limits == nil {
		t.Errorf("defaults not filled: %+v", got)
	}
	if got.CABundle == nil || got.ServiceAccount != "worker" {
		t.Errorf("an empty image replaced the options that were set: %+v", got)
	}
	for _, ttl := range []time.Duration{time.Second, 59 * time.Second, 100 * 365 * 24 * time.Hour} {
		if err := (WorkerOptions{TTLAfterFinished: ttl}).Validate(); err == nil {
			t.Errorf("TTL %s accepted", ttl)
		}
	}
	if err := (WorkerOptions{TTLAfterFinished: time.Minute}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestInspectPodsSaysWhatKeepsAContainerFromStarting(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	scheduled := func(at time.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}
	}
	waiting := func(reason, msg string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{Name: "sync", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
	pod := func(conds []corev1.PodCondition, cs, inits []corev1.ContainerStatus) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: conds, ContainerStatuses: cs, InitContainerStatuses: inits}}
	}
	for _, tc := range []struct {
		name      string
		pod       corev1.Pod
		state     PodState
		reason    string
		contains  string
		wantQuiet bool
	}{
		{"image", pod([]corev1.PodCondition{scheduled(now)}, waiting("ImagePullBackOff", `Back-off pulling image "x"`), nil), PodStuck, datav1alpha1.ReasonPodNotStarting, `ImagePullBackOff: Back-off pulling image "x"`, false},
		{"secret, in an init container", pod([]corev1.PodCondition{scheduled(now)}, nil, waiting("CreateContainerConfigError", `secret "s3" not found`)), PodStuck, datav1alpha1.ReasonPodNotStarting, `secret "s3" not found`, false},
		{"creating, just scheduled", pod([]corev1.PodCondition{scheduled(now.Add(-5 * time.Second))}, waiting("ContainerCreating", ""), nil), PodNotStarted, "", "", false},
		{"creating for long: read its events", pod([]corev1.PodCondition{scheduled(now.Add(-time.Minute))}, waiting("ContainerCreating", ""), nil), PodNotStarted, "", "", true},
		{"no room", pod([]corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes"}}, nil, nil), PodStuck, datav1alpha1.ReasonUnschedulable, "0/1 nodes", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, problem, quiet := InspectPods([]corev1.Pod{tc.pod}, now)
			if state != tc.state || problem.Reason != tc.reason || !strings.Contains(problem.Message, tc.contains) || (quiet != nil) != tc.wantQuiet {
				t.Errorf("inspectPods = %v %+v quiet=%v", state, problem, quiet != nil)
			}
		})
	}
	if state, _, _ := InspectPods([]corev1.Pod{{Status: corev1.PodStatus{Phase: corev1.PodRunning}}}, now); state != PodRunning {
		t.Error("a running pod is not stuck")
	}
}
