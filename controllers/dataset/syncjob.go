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

package dataset

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// Annotations on a sync Job carry the facts the Job was started with, so its result can be recorded
// against them.
const (
	AnnotationTrigger        = "data.pqcache.dev/trigger"
	AnnotationSourceHash     = "data.pqcache.dev/source-hash"
	AnnotationSpecGeneration = "data.pqcache.dev/spec-generation"
	AnnotationManualToken    = "data.pqcache.dev/manual-token"
	// AnnotationAfter names the Job whose result was the last recorded when this one was created
	// (empty for the first): a chain that tells which finished Job is still to be recorded.
	AnnotationAfter = "data.pqcache.dev/after"
)

// syncJobName names the sync Job of one round: the same Dataset and the same last recorded sync give
// the same name, so a reconcile working from a stale cache cannot start a second Job for the round.
func syncJobName(ds *datav1alpha1.Dataset) string { return roundJobName(ds, jobs.ComponentSync) }

func roundJobName(ds *datav1alpha1.Dataset, kind string) string {
	return jobs.FitName(ds.Name, "-"+kind+"-"+jobs.HashOf(10, string(ds.UID), kind, lastRecordedJob(ds)), jobs.MaxJobName)
}

// lastRecordedJob is the Job whose result status holds, or "" before the first.
func lastRecordedJob(ds *datav1alpha1.Dataset) string {
	if ls := ds.Status.LastSync; ls != nil {
		return ls.JobName
	}
	return ""
}

// syncArgs are the worker's arguments: `pqcache sync` with the Dataset's arguments (syncspec.Args,
// which a node agent runs with too), into the claim, reporting to the controller.
func syncArgs(ds *datav1alpha1.Dataset) wire.SyncArgs {
	a := syncspec.Args(ds)
	a.Dir = jobs.DataMountPath
	a.Progress, a.LogLevel, a.ReportFile = "json", "info", corev1.TerminationMessagePathDefault
	return a
}

// SyncJobArgs is the command line of ds's sync Job's worker, for tests outside this package that
// compare what a Job runs with what a node agent runs (internal/cli): syncArgs rendered, before the
// generations a Job pins or the change set it applies.
func SyncJobArgs(ds *datav1alpha1.Dataset) []string { return syncArgs(ds).Args() }

// podIdentityEnv names the pod to the worker (downward API), for its progress annotation.
func podIdentityEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{field(wire.EnvPodName, "metadata.name"), field(wire.EnvPodNamespace, "metadata.namespace")}
}

// buildSyncJob returns the Job that syncs ds into its claim, keeping the generations pinned lists.
// A targeted sync (trigger Events) reads its change set from the ConfigMap named after the Job.
// Retries are the controller's (with backoff in status), so the Job itself never retries:
// BackoffLimit 0.
func buildSyncJob(ds *datav1alpha1.Dataset, opts jobs.WorkerOptions, trigger, hash string, pinned ...int64) *batchv1.Job {
	args := syncArgs(ds)
	args.KeepGenerations = pinned
	if trigger == TriggerEvents {
		args.Changes = changesMountPath + "/" + changesKey
	}
	labels := map[string]string{
		jobs.LabelName: "pqcache", jobs.LabelComponent: jobs.ComponentSync, jobs.LabelManagedBy: "pqcache", jobs.LabelDataset: datav1alpha1.LabelValue(ds.Name),
	}
	timeout := syncspec.Timeout(&ds.Spec)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      syncJobName(ds),
			Namespace: ds.Namespace,
			Labels:    labels,
			Annotations: map[string]string{
				AnnotationTrigger:        trigger,
				AnnotationSourceHash:     hash,
				AnnotationSpecGeneration: strconv.FormatInt(ds.Generation, 10),
				AnnotationManualToken:    ds.Spec.Refresh.Manual,
				AnnotationAfter:          lastRecordedJob(ds),
				AnnotationDataset:        ds.Name,
			},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(int64(timeout.Seconds())),
			TTLSecondsAfterFinished: ptr.To(int32(opts.TTLAfterFinished.Seconds())),
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: syncPod(ds, opts, args)},
		},
	}
	if trigger == TriggerEvents {
		mountChanges(&job.Spec.Template.Spec, job.Name)
	}
	return job
}

// syncPod runs the sync worker with args on the Dataset's claim, as the nonroot user that owns the
// volume's files (fsGroup).
func syncPod(ds *datav1alpha1.Dataset, opts jobs.WorkerOptions, args wire.SyncArgs) corev1.PodSpec {
	resources := opts.Resources
	if ds.Spec.Sync.Resources != nil {
		resources = *ds.Spec.Sync.Resources
	}
	sa := opts.ServiceAccount
	if own := jobs.CredentialsAccount(ds); own != "" {
		sa = own
	}
	security := jobs.WorkerPodSecurity()
	security.FSGroup = ptr.To[int64](jobs.WorkerUID)
	security.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	c := corev1.Container{
		Name:            jobs.SyncContainerName,
		Image:           opts.Image,
		ImagePullPolicy: opts.ImagePullPolicy,
		Args:            args.Args(),
		Env:             append(jobs.CredentialsEnv(ds), podIdentityEnv()...),
		Resources:       resources,
		SecurityContext: jobs.WorkerContainerSecurity(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: jobs.DataMountPath}},
	}
	jobs.WithTerminationReport(&c)
	pod := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: sa,
		// The worker needs the API only to publish progress, which only pqcache's own worker account
		// may; IRSA, Pod Identity and Workload Identity mount their own tokens either way.
		AutomountServiceAccountToken: ptr.To(sa != "" && sa == opts.ServiceAccount),
		SecurityContext:              security,
		Containers:                   []corev1.Container{c},
		Volumes: []corev1.Volume{{
			Name:         "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(ds)}},
		}},
	}
	jobs.WithCABundle(&pod, opts.CABundle)
	jobs.WithAccessPolicy(&pod, ds, opts.Access)
	jobs.AvoidExclusiveBench(&pod)
	return pod
}
