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
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// Labels and annotations on the objects the Dataset controller creates. Annotations on a sync Job
// carry the facts the Job was started with, so its result can be recorded against them.
const (
	// LabelDataset holds the Dataset's name on its Jobs and claim, shortened with a hash when longer
	// than a label value may be (AnnotationDataset has it whole).
	LabelDataset   = "data.pqcache.dev/dataset"
	LabelComponent = "app.kubernetes.io/component"
	labelName      = "app.kubernetes.io/name"
	labelManagedBy = "app.kubernetes.io/managed-by"
	componentSync  = "sync"
	componentSize  = "size"

	AnnotationTrigger        = "data.pqcache.dev/trigger"
	AnnotationSourceHash     = "data.pqcache.dev/source-hash"
	AnnotationSpecGeneration = "data.pqcache.dev/spec-generation"
	AnnotationManualToken    = "data.pqcache.dev/manual-token"
	// AnnotationAfter names the Job whose result was the last recorded when this one was created
	// (empty for the first): a chain that tells which finished Job is still to be recorded.
	AnnotationAfter = "data.pqcache.dev/after"

	dataMountPath     = "/data"
	syncContainerName = "sync"
)

// WorkerOptions are the operator-wide settings of worker Jobs.
type WorkerOptions struct {
	// Image runs `pqcache sync`; by default the operator's own image.
	Image string
	// PolarsImage runs BenchRuns' polars engine: Python Polars and pqcache's run.py (the runner is
	// injected from Image).
	PolarsImage string
	// SparkImage runs BenchRuns' spark engine, its driver (with the runner injected) and its
	// executors: a JRE, PySpark with its jars, s3a's jars and pqcache's Spark programs.
	SparkImage string
	// ImagePullPolicy of the worker container.
	ImagePullPolicy corev1.PullPolicy
	// Resources of a worker container whose Dataset does not set spec.sync.resources.
	Resources corev1.ResourceRequirements
	// TTLAfterFinished keeps finished Jobs (and their pods' termination messages) this long.
	TTLAfterFinished time.Duration
	// ServiceAccount runs worker pods whose Dataset names no service account of its own. With it set,
	// the pod gets a token and publishes live progress on its own pod (the account needs get and patch
	// on pods; config/rbac/worker_progress_policy.yaml limits that to its own pod's progress annotation).
	// Empty: the namespace's default account, no token, no live progress.
	ServiceAccount string
	// CABundle, when set, is a ConfigMap (in each Dataset's namespace, as trust-manager distributes
	// them) holding the CA certificates of an S3-compatible store with a private CA. Workers mount it
	// and point AWS_CA_BUNDLE at it.
	CABundle *ConfigMapKey
	// Access is whose identity workers read a bucket with and where they may connect.
	Access AccessPolicy
}

// ConfigMapKey names one key of a ConfigMap.
type ConfigMapKey struct {
	Name, Key string
}

const caBundleDir = "/etc/pqcache/ca"

// withCABundle mounts the CA bundle, if one is configured, into the given container of a pod (by
// default the first): a ConfigMap volume, a read-only mount, and AWS_CA_BUNDLE pointing at the key.
func withCABundle(spec *corev1.PodSpec, ca *ConfigMapKey, into ...*corev1.Container) {
	if ca == nil {
		return
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "ca-bundle", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ca.Name},
		Items:                []corev1.KeyToPath{{Key: ca.Key, Path: ca.Key}},
	}}})
	c := &spec.Containers[0]
	if len(into) > 0 {
		c = into[0]
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "ca-bundle", MountPath: caBundleDir, ReadOnly: true})
	c.Env = append(c.Env, corev1.EnvVar{Name: "AWS_CA_BUNDLE", Value: caBundleDir + "/" + ca.Key})
}

// DefaultWorkerOptions are used where the operator's flags leave a field empty.
func DefaultWorkerOptions() WorkerOptions {
	return WorkerOptions{
		Image:           "pqcache:dev",
		PolarsImage:     "pqcache-polars:dev",
		SparkImage:      "pqcache-spark:dev",
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		TTLAfterFinished: time.Hour,
	}
}

// syncJobName names the sync Job of one round: the same Dataset and the same last recorded sync give
// the same name, so a reconcile working from a stale cache cannot start a second Job for the round.
func syncJobName(ds *datav1alpha1.Dataset) string { return roundJobName(ds, componentSync) }

func roundJobName(ds *datav1alpha1.Dataset, kind string) string {
	return fitName(ds.Name, "-"+kind+"-"+hashOf(10, string(ds.UID), kind, lastRecordedJob(ds)), maxJobName)
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
	a.Dir = dataMountPath
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
func buildSyncJob(ds *datav1alpha1.Dataset, opts WorkerOptions, trigger, hash string, pinned ...int64) *batchv1.Job {
	args := syncArgs(ds)
	args.KeepGenerations = pinned
	if trigger == TriggerEvents {
		args.Changes = changesMountPath + "/" + changesKey
	}
	labels := map[string]string{
		labelName: "pqcache", LabelComponent: componentSync, labelManagedBy: "pqcache", LabelDataset: datav1alpha1.LabelValue(ds.Name),
	}
	timeout := 6 * time.Hour
	if ds.Spec.Sync.Timeout != nil {
		timeout = ds.Spec.Sync.Timeout.Duration
	}
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
func syncPod(ds *datav1alpha1.Dataset, opts WorkerOptions, args wire.SyncArgs) corev1.PodSpec {
	resources := opts.Resources
	if ds.Spec.Sync.Resources != nil {
		resources = *ds.Spec.Sync.Resources
	}
	sa := opts.ServiceAccount
	if own := credentialsAccount(ds); own != "" {
		sa = own
	}
	security := workerPodSecurity()
	security.FSGroup = ptr.To[int64](workerUID)
	security.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	c := corev1.Container{
		Name:            syncContainerName,
		Image:           opts.Image,
		ImagePullPolicy: opts.ImagePullPolicy,
		Args:            args.Args(),
		Env:             append(credentialsEnv(ds), podIdentityEnv()...),
		Resources:       resources,
		SecurityContext: workerContainerSecurity(),
		VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: dataMountPath}},
	}
	withTerminationReport(&c)
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
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(ds)}},
		}},
	}
	withCABundle(&pod, opts.CABundle)
	withAccessPolicy(&pod, ds, opts.Access)
	avoidExclusiveBench(&pod)
	return pod
}

// describeJob is used in messages.
func describeJob(j *batchv1.Job) string { return fmt.Sprintf("job %s/%s", j.Namespace, j.Name) }
