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
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// PodState is how far a running Job's pod has got.
type PodState int

const (
	// PodRunning means the pod runs.
	PodRunning PodState = iota
	// PodNotStarted means no pod yet, or a pod on its way (scheduling, pulling, creating) with nothing wrong
	// reported so far.
	PodNotStarted
	// PodStuck means the scheduler found no node, or the kubelet cannot start a container; see PodProblem.
	PodStuck
)

// PodProblem is why a worker Job's pod does not run, in the scheduler's or the kubelet's own words.
type PodProblem struct {
	// Reason is ReasonUnschedulable or ReasonPodNotStarting.
	Reason  string
	Message string
}

// failedWaitingReasons are the container waiting reasons with which the kubelet says a container
// cannot start as things are (they show on the pod, not only as events). ContainerCreating and
// PodInitializing are normal steps; what holds them up shows only in the pod's events.
var failedWaitingReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"ImageInspectError": true, "CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true, "CrashLoopBackOff": true,
}

// podStartGrace is how long a scheduled pod may sit in ContainerCreating before the controller reads
// its events to find out why (a volume that cannot be mounted, a sandbox that cannot be created):
// attaching a volume or pulling a large image takes some seconds on any cluster.
const podStartGrace = 20 * time.Second

// InspectPods says how far a Job's pods have got. A stuck pod comes with its problem. quiet is a pod
// that was scheduled more than podStartGrace ago and still has not started, with nothing on its status
// to say why: the caller reads its events.
func InspectPods(pods []corev1.Pod, now time.Time) (state PodState, problem PodProblem, quiet *corev1.Pod) {
	if len(pods) == 0 {
		return PodNotStarted, PodProblem{}, nil
	}
	state = PodRunning
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase != corev1.PodPending {
			continue
		}
		state = PodNotStarted
		var scheduledAt time.Time
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodScheduled {
				continue
			}
			if c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return PodStuck, PodProblem{Reason: datav1alpha1.ReasonUnschedulable, Message: c.Message}, nil
			}
			if c.Status == corev1.ConditionTrue {
				scheduledAt = c.LastTransitionTime.Time
			}
		}
		statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range statuses {
			if w := cs.State.Waiting; w != nil && failedWaitingReasons[w.Reason] {
				msg := fmt.Sprintf("pod %s, container %s: %s", p.Name, cs.Name, w.Reason)
				if w.Message != "" {
					msg += ": " + w.Message
				}
				return PodStuck, PodProblem{Reason: datav1alpha1.ReasonPodNotStarting, Message: msg}, nil
			}
		}
		if !scheduledAt.IsZero() && now.Sub(scheduledAt) >= podStartGrace && quiet == nil {
			quiet = p
		}
	}
	return state, PodProblem{}, quiet
}

// podWarning reads the newest Warning event of pod (FailedMount, FailedCreatePodSandBox, ...), as
// "reason: message", or "" when it has none. Events are read uncached: only for a pod that is late.
func podWarning(ctx context.Context, reader client.Reader, pod *corev1.Pod) (string, error) {
	var list corev1.EventList
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)), fields.OneTermEqualSelector("type", corev1.EventTypeWarning))
	if err := reader.List(ctx, &list, client.InNamespace(pod.Namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return "", fmt.Errorf("listing events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if len(list.Items) == 0 {
		return "", nil
	}
	e := newestEvent(list.Items)
	return fmt.Sprintf("pod %s: %s: %s", pod.Name, e.Reason, e.Message), nil
}

// newestEvent is the event of items (not empty) that happened last, by the newest of its times.
func newestEvent(items []corev1.Event) corev1.Event {
	sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	return items[len(items)-1]
}

// eventTime is when e last happened: the newest of the times its writer filled in.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// JobPodProblem is what keeps a running Job's pods from running, reading events only for a pod that
// is late with nothing on its status, or for a Job with no live pod (the API server may refuse them);
// the state says whether some pod has not started yet.
func JobPodProblem(ctx context.Context, reader client.Reader, j *batchv1.Job, pods []corev1.Pod, now time.Time) (PodState, PodProblem, error) {
	state, problem, quiet := InspectPods(pods, now)
	if !hasLivePod(pods) {
		msg, err := jobRefusal(ctx, reader, j, newestPod(pods))
		if err != nil {
			return state, problem, err
		}
		if msg != "" {
			return PodStuck, PodProblem{Reason: datav1alpha1.ReasonJobRejected, Message: msg}, nil
		}
	}
	if state == PodNotStarted && quiet != nil {
		msg, err := podWarning(ctx, reader, quiet)
		if err != nil {
			return state, problem, err
		}
		if msg != "" {
			return PodStuck, PodProblem{Reason: datav1alpha1.ReasonPodNotStarting, Message: msg}, nil
		}
	}
	return state, problem, nil
}

// hasLivePod says whether some pod is pending or running: a Job with none either has not made its pod
// yet or cannot (the API server refused it).
func hasLivePod(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning {
			return true
		}
	}
	return false
}

// newestPod is when the newest of pods was created; zero when there is none.
func newestPod(pods []corev1.Pod) time.Time {
	var t time.Time
	for _, p := range pods {
		if c := p.CreationTimestamp.Time; c.After(t) {
			t = c
		}
	}
	return t
}

// jobRefusal is why the API server refuses a Job's pods (a ResourceQuota, a missing ServiceAccount,
// an admission policy or webhook), in its own words, from the newest FailedCreate Warning the Job
// controller left on the Job after since (its newest pod: an older refusal is over); "" when there is
// none. Read uncached, only while the Job has no live pod: the Job's status says nothing of it, and
// the Job controller retries with backoff for as long as the Job lives.
func jobRefusal(ctx context.Context, reader client.Reader, j *batchv1.Job, since time.Time) (string, error) {
	var list corev1.EventList
	sel := fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", string(j.UID)),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning), fields.OneTermEqualSelector("reason", "FailedCreate"))
	if err := reader.List(ctx, &list, client.InNamespace(j.Namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return "", fmt.Errorf("listing events of %s: %w", Describe(j), err)
	}
	if len(list.Items) == 0 {
		return "", nil
	}
	e := newestEvent(list.Items)
	if !eventTime(e).After(since) {
		return "", nil
	}
	return fmt.Sprintf("the API server refuses the pods of %s: %s", Describe(j), e.Message), nil
}

// ControllerUIDLabel is set by the Job controller on a Job's pods: the Job's UID. Unlike the job-name
// label it cannot match the pods of an older Job of the same name.
const ControllerUIDLabel = "batch.kubernetes.io/controller-uid"

// ListJobPods reads a Job's pods uncached: the manager keeps no cluster-wide pod informer.
func ListJobPods(ctx context.Context, reader client.Reader, j *batchv1.Job) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{ControllerUIDLabel: string(j.UID)}); err != nil {
		return nil, fmt.Errorf("listing pods of %s: %w", Describe(j), err)
	}
	return pods.Items, nil
}
