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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podState is how far a running Job's pod has got.
type podState int

const (
	podRunning podState = iota
	podNotStarted
	podUnschedulable
)

// schedulingOf says whether the scheduler has found no node for any of a Job's pods, with its message
// ("0/3 nodes are available: 3 Insufficient cpu."), or whether some pod has not started yet. Neither
// shows on the Job, so both controllers look at the pods of their running Jobs.
func schedulingOf(pods []corev1.Pod) (podState, string) {
	if len(pods) == 0 {
		return podNotStarted, ""
	}
	state := podRunning
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return podUnschedulable, c.Message
			}
		}
		state = podNotStarted
	}
	return state, ""
}

// listJobPods reads a Job's pods uncached: the manager keeps no cluster-wide pod informer.
func listJobPods(ctx context.Context, reader client.Reader, j *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{jobNameLabel: j.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", describeJob(j), err)
	}
	return pods.Items, nil
}
