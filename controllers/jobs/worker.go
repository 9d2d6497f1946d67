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
	"fmt"
	"math"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Labels on the objects pqcache's controllers create: its worker Jobs and their pods, claims,
// accounts and bindings. LabelComponent says which kind of worker a Job is.
const (
	// LabelDataset holds the Dataset's name on its Jobs and claim, shortened with a hash when longer
	// than a label value may be (AnnotationDataset has it whole).
	LabelDataset   = "data.pqcache.dev/dataset"
	LabelComponent = "app.kubernetes.io/component"
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ComponentSync  = "sync"
	ComponentSize  = "size"

	DataMountPath     = "/data"
	SyncContainerName = "sync"
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
	// ReadersEndpoint is the URL pods reach their node's S3 endpoint for readers at (the Service
	// --readers-service names); empty: the installation serves none.
	ReadersEndpoint string
}

// ConfigMapKey names one key of a ConfigMap.
type ConfigMapKey struct {
	Name, Key string
}

const caBundleDir = "/etc/pqcache/ca"

// WithCABundle mounts the CA bundle, if one is configured, into the given container of a pod (by
// default the first): a ConfigMap volume, a read-only mount, and AWS_CA_BUNDLE pointing at the key.
func WithCABundle(spec *corev1.PodSpec, ca *ConfigMapKey, into ...*corev1.Container) {
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

// Describe names a Job in messages.
func Describe(j *batchv1.Job) string { return fmt.Sprintf("job %s/%s", j.Namespace, j.Name) }

// minJobTTL is the shortest TTLAfterFinished the operator accepts: a finished Job's report is read
// from its pod, which the TTL deletes with it, so the controller needs a moment to read it.
const minJobTTL = time.Minute

// WithDefaults fills the worker options a caller left empty from DefaultWorkerOptions, field by
// field: an operator that sets only a CA bundle keeps it, and gets the default image.
func (o WorkerOptions) WithDefaults() WorkerOptions {
	d := DefaultWorkerOptions()
	if o.Image == "" {
		o.Image = d.Image
	}
	if o.PolarsImage == "" {
		o.PolarsImage = d.PolarsImage
	}
	if o.SparkImage == "" {
		o.SparkImage = d.SparkImage
	}
	if o.ImagePullPolicy == "" {
		o.ImagePullPolicy = d.ImagePullPolicy
	}
	if o.Resources.Requests == nil && o.Resources.Limits == nil && o.Resources.Claims == nil {
		o.Resources = d.Resources
	}
	if o.TTLAfterFinished == 0 {
		o.TTLAfterFinished = d.TTLAfterFinished
	}
	return o
}

// Validate refuses options the Jobs cannot carry.
func (o WorkerOptions) Validate() error {
	if o.TTLAfterFinished < minJobTTL || o.TTLAfterFinished.Seconds() > math.MaxInt32 {
		return fmt.Errorf("the finished-Job TTL %s must be between %s and %d seconds: a Job's report is read from its pod, which the TTL deletes", o.TTLAfterFinished, minJobTTL, math.MaxInt32)
	}
	return nil
}
