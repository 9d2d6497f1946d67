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
	workerUID         = 65532
	syncContainerName = "sync"
)

// Worker credentials: the keys a credentials Secret must hold (AWS_SESSION_TOKEN is optional).
const (
	SecretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	SecretKeySessionToken    = "AWS_SESSION_TOKEN"
)

// WorkerOptions are the operator-wide settings of worker Jobs.
type WorkerOptions struct {
	// Image runs `pqcache sync`; by default the operator's own image.
	Image string
	// PolarsImage runs BenchRuns' polars engine: Node.js and pqcache's Polars program (the runner is
	// injected from Image).
	PolarsImage string
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
		ImagePullPolicy: corev1.PullIfNotPresent,
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		TTLAfterFinished: time.Hour,
	}
}

// claimName is the PersistentVolumeClaim that holds a Dataset's cache.
func claimName(ds *datav1alpha1.Dataset) string {
	if ds.Spec.Volume.ExistingClaim != "" {
		return ds.Spec.Volume.ExistingClaim
	}
	return fitName(ds.Name, "-cache", maxObjectName)
}

// syncJobName names the sync Job of one round: the same Dataset and the same last recorded sync give
// the same name, so a reconcile working from a stale cache cannot start a second Job for the round.
func syncJobName(ds *datav1alpha1.Dataset) string { return roundJobName(ds, componentSync) }

// sizeJobName names the Job that lists the source to size a claim, per round like syncJobName.
func sizeJobName(ds *datav1alpha1.Dataset) string { return roundJobName(ds, componentSize) }

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

// buildSizeJob returns the Job that lists the source, as a dry run into an empty directory, so that a
// claim whose Dataset omits volume.capacity can be sized from what it will hold. It needs no claim.
func buildSizeJob(ds *datav1alpha1.Dataset, opts WorkerOptions, hash string) *batchv1.Job {
	j := buildSyncJob(ds, opts, TriggerSizing, hash)
	j.Name = sizeJobName(ds)
	j.Labels[LabelComponent] = componentSize
	j.Spec.Template.Labels[LabelComponent] = componentSize
	j.Spec.ActiveDeadlineSeconds = ptr.To[int64](1800)
	c := &j.Spec.Template.Spec.Containers[0]
	c.Args = append([]string{"sync", c.Args[1], "/plan", "--dry-run", "--progress", "none", "--report-file", corev1.TerminationMessagePathDefault}, sourceFlags(ds)...)
	// The listing needs no claim: an empty directory stands in for the volume.
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == "data" {
			c.VolumeMounts[i].MountPath = "/plan"
		}
	}
	for i, v := range j.Spec.Template.Spec.Volumes {
		if v.Name == "data" {
			j.Spec.Template.Spec.Volumes[i].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		}
	}
	return j
}

// sizeForListing is the claim size for bytes of objects: 25% and 1 GiB of headroom, rounded up to
// whole GiB.
func sizeForListing(bytes int64) resource.Quantity {
	const gi = int64(1) << 30
	want := bytes + bytes/4 + gi
	return *resource.NewQuantity((want+gi-1)/gi*gi, resource.BinarySI)
}

// syncArgs are the worker's command line: `pqcache sync` with the Dataset's source and options.
func syncArgs(ds *datav1alpha1.Dataset) []string {
	s3 := ds.Spec.Source.S3
	sy := ds.Spec.Sync
	args := []string{"sync", "s3://" + s3.Bucket + "/" + s3.Prefix, dataMountPath,
		"--parallel", strconv.Itoa(int(max(sy.Parallelism, 1))),
		"--progress", "json",
		"--log-level", "info",
		"--report-file", corev1.TerminationMessagePathDefault,
	}
	if sy.PartSize != nil {
		args = append(args, "--part-size", sy.PartSize.String())
	}
	switch sy.Verify {
	case datav1alpha1.VerifySize:
		args = append(args, "--verify", "size")
	case datav1alpha1.VerifySHA256:
		args = append(args, "--verify", "sha256")
	}
	if !ptr.Deref(sy.Prune, true) {
		args = append(args, "--no-delete")
	}
	args = append(args, "--generations", strconv.Itoa(int(ptr.Deref(sy.KeepGenerations, 2))))
	return append(args, sourceFlags(ds)...)
}

// sourceFlags select and reach the objects: globs, endpoint, region, addressing.
func sourceFlags(ds *datav1alpha1.Dataset) []string {
	s3 := ds.Spec.Source.S3
	var args []string
	for _, g := range ds.Spec.Include {
		args = append(args, "--include", g)
	}
	for _, g := range ds.Spec.Exclude {
		args = append(args, "--exclude", g)
	}
	if s3.Endpoint != "" {
		args = append(args, "--endpoint", s3.Endpoint)
	}
	if s3.Region != "" {
		args = append(args, "--region", s3.Region)
	}
	if s3.ForcePathStyle {
		args = append(args, "--path-style")
	}
	return args
}

// syncEnv passes credentials from the Dataset's Secret by reference: their values never pass through
// the operator, the Job spec or status.
func syncEnv(ds *datav1alpha1.Dataset) []corev1.EnvVar {
	c := ds.Spec.Source.S3.Credentials
	if c == nil || c.SecretRef == nil {
		return nil
	}
	ref := func(key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.SecretRef.Name}, Key: key, Optional: ptr.To(optional),
		}}}
	}
	return []corev1.EnvVar{ref(SecretKeyAccessKeyID, false), ref(SecretKeySecretAccessKey, false), ref(SecretKeySessionToken, true)}
}

// podIdentityEnv names the pod to the worker (downward API), for its progress annotation.
func podIdentityEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{field(wire.EnvPodName, "metadata.name"), field(wire.EnvPodNamespace, "metadata.namespace")}
}

// buildSyncJob returns the Job that syncs ds into its claim. Retries are the controller's (with
// backoff in status), so the Job itself never retries: BackoffLimit 0.
func buildSyncJob(ds *datav1alpha1.Dataset, opts WorkerOptions, trigger, hash string) *batchv1.Job {
	labels := map[string]string{
		labelName: "pqcache", LabelComponent: componentSync, labelManagedBy: "pqcache", LabelDataset: labelValue(ds.Name),
	}
	resources := opts.Resources
	if ds.Spec.Sync.Resources != nil {
		resources = *ds.Spec.Sync.Resources
	}
	timeout := 6 * time.Hour
	if ds.Spec.Sync.Timeout != nil {
		timeout = ds.Spec.Sync.Timeout.Duration
	}
	sa := opts.ServiceAccount
	if c := ds.Spec.Source.S3.Credentials; c != nil && c.ServiceAccountName != "" {
		sa = c.ServiceAccountName
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
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: sa,
					// The worker needs the API only to publish progress; IRSA and Pod Identity mount their own
					// tokens either way.
					AutomountServiceAccountToken: ptr.To(sa != ""),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:        ptr.To(true),
						RunAsUser:           ptr.To[int64](workerUID),
						RunAsGroup:          ptr.To[int64](workerUID),
						FSGroup:             ptr.To[int64](workerUID),
						FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
						SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            syncContainerName,
						Image:           opts.Image,
						ImagePullPolicy: opts.ImagePullPolicy,
						Args:            syncArgs(ds),
						Env:             append(syncEnv(ds), podIdentityEnv()...),
						Resources:       resources,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							RunAsNonRoot:             ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: dataMountPath}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "data",
						VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(ds)}},
					}},
				},
			},
		},
	}
	withCABundle(&job.Spec.Template.Spec, opts.CABundle)
	return job
}

// describeJob is used in messages.
func describeJob(j *batchv1.Job) string { return fmt.Sprintf("job %s/%s", j.Namespace, j.Name) }
