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

package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/internal/cli"
)

// kubelet plays the kubelet and the Job controller, which envtest lacks, for sync Jobs: it runs each
// new Job's worker container in this process (the real `pqcache sync` against the real versitygw,
// with the environment its Secret references resolve to), then records its pod and the Job's end as
// they would. One Job at a time: the worker reads its credentials from the process environment.
type kubelet struct {
	k    *cluster
	done map[types.UID]bool
	// volumes keep each Dataset's claim between its Jobs, as a PersistentVolume would.
	volumes map[string]string
}

func newKubelet(k *cluster) *kubelet {
	return &kubelet{k: k, done: map[types.UID]bool{}, volumes: map[string]string{}}
}

// run starts every new sync Job until ctx ends.
func (kl *kubelet) run(ctx context.Context) {
	for ctx.Err() == nil {
		var jobs batchv1.JobList
		if err := kl.k.c.List(ctx, &jobs, client.InNamespace(kl.k.ns)); err == nil {
			for i := range jobs.Items {
				if j := &jobs.Items[i]; !kl.done[j.UID] {
					kl.done[j.UID] = true
					kl.runJob(ctx, j)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runJob runs one Job's worker and records how it ended.
func (kl *kubelet) runJob(ctx context.Context, job *batchv1.Job) {
	c := job.Spec.Template.Spec.Containers[0]
	restore := kl.environment(ctx, job.Namespace, c.Env)
	defer restore()
	dataset := job.Labels[jobs.LabelDataset]
	if kl.volumes[dataset] == "" {
		kl.volumes[dataset] = kl.k.t.TempDir()
	}
	termination := filepath.Join(kl.k.t.TempDir(), "termination-log")
	paths := map[string]string{c.VolumeMounts[0].MountPath: kl.volumes[dataset], c.TerminationMessagePath: termination}
	args := slices.Clone(c.Args)
	for i, a := range args {
		if local, ok := paths[a]; ok {
			args[i] = local
		}
	}
	started := metav1.Now()
	cmd := cli.NewRootCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	exit := int32(0)
	if err := cmd.ExecuteContext(ctx); err != nil {
		exit = 1
	}
	message, _ := os.ReadFile(termination)
	kl.finish(ctx, job, c.Name, string(message), exit, started)
}

// environment sets the container's environment in this process (Secret references resolved; the
// downward API's pod name left out, so the worker publishes no live progress) and returns how to
// undo it.
func (kl *kubelet) environment(ctx context.Context, ns string, env []corev1.EnvVar) func() {
	type saved struct {
		value string
		had   bool
	}
	before := map[string]saved{}
	for _, e := range env {
		value := e.Value
		if ref := e.ValueFrom; ref != nil {
			if ref.SecretKeyRef == nil {
				continue
			}
			var secret corev1.Secret
			if err := kl.k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.SecretKeyRef.Name}, &secret); err != nil {
				continue
			}
			v, ok := secret.Data[ref.SecretKeyRef.Key]
			if !ok {
				continue
			}
			value = string(v)
		}
		if _, ok := before[e.Name]; !ok {
			v, had := os.LookupEnv(e.Name)
			before[e.Name] = saved{v, had}
		}
		_ = os.Setenv(e.Name, value)
	}
	return func() {
		for name, s := range before {
			if s.had {
				_ = os.Setenv(name, s.value)
			} else {
				_ = os.Unsetenv(name)
			}
		}
	}
}

// finish records the pod the Job ran, its container terminated with exit and message, and the Job's
// terminal conditions.
func (kl *kubelet) finish(ctx context.Context, job *batchv1.Job, container, message string, exit int32, started metav1.Time) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "-",
			Labels: map[string]string{"batch.kubernetes.io/controller-uid": string(job.UID), "job-name": job.Name}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: container, Image: job.Spec.Template.Spec.Containers[0].Image}}},
	}
	if err := kl.k.c.Create(ctx, pod); err != nil {
		kl.k.t.Logf("kubelet: creating the pod of Job %s: %v", job.Name, err)
		return
	}
	now := metav1.Now()
	phase, reason := corev1.PodSucceeded, "Completed"
	if exit != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, Message: message, StartedAt: started, FinishedAt: now}}}}
	if err := kl.k.c.Status().Update(ctx, pod); err != nil {
		kl.k.t.Logf("kubelet: the status of pod %s: %v", pod.Name, err)
		return
	}
	if err := kl.k.c.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
		kl.k.t.Logf("kubelet: Job %s: %v", job.Name, err)
		return
	}
	job.Status.StartTime = &started
	if exit == 0 {
		job.Status.CompletionTime, job.Status.Succeeded = &now, 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonBackoffLimitExceeded, LastTransitionTime: now},
		}
	}
	if err := kl.k.c.Status().Update(ctx, job); err != nil {
		kl.k.t.Logf("kubelet: the status of Job %s: %v", job.Name, err)
	}
}
