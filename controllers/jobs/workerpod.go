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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// What every worker pod shares, sync and bench alike: who it runs as, what it may not do, how it
// reports, and how it reaches the Dataset's bucket.

// WorkerUID runs every worker container: the image's nonroot user.
const WorkerUID = 65532

// WorkerPodSecurity is the pod security context of the restricted Pod Security profile, as the
// worker's nonroot user.
func WorkerPodSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](WorkerUID),
		RunAsGroup:     ptr.To[int64](WorkerUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// WorkerContainerSecurity is the container security context of the restricted profile, with a
// read-only root file system: workers write only to their volumes.
func WorkerContainerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// WithTerminationReport makes a container's report reach the controller: the worker writes it to
// the termination message file, which Kubernetes keeps on the pod's status.
func WithTerminationReport(c *corev1.Container) {
	c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
}

// SourceOptions select and reach the objects, for every worker that reads the bucket with the sync
// engine: globs, endpoint, region, addressing (the part of syncspec.Args that stage and sizing take).
func SourceOptions(ds *datav1alpha1.Dataset) wire.SyncOptions {
	a := syncspec.Args(ds)
	return wire.SyncOptions{Include: a.Include, Exclude: a.Exclude, S3Access: a.S3Access}
}

// CredentialsEnv passes credentials from the Dataset's Secret by reference: their values never pass
// through the operator, the Job spec or status.
func CredentialsEnv(ds *datav1alpha1.Dataset) []corev1.EnvVar {
	c := ds.Spec.Source.S3.Credentials
	if c == nil || c.SecretRef == nil {
		return nil
	}
	ref := func(key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: c.SecretRef.Name}, Key: key, Optional: ptr.To(optional),
		}}}
	}
	return []corev1.EnvVar{ref(wire.EnvAccessKeyID, false), ref(wire.EnvSecretAccessKey, false), ref(wire.EnvSessionToken, true)}
}

// CredentialsAccount is the service account that gives a worker the bucket by IRSA or Pod Identity,
// or "".
func CredentialsAccount(ds *datav1alpha1.Dataset) string {
	if c := ds.Spec.Source.S3.Credentials; c != nil {
		return c.ServiceAccountName
	}
	return ""
}
