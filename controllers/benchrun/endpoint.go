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
	"fmt"

	corev1 "k8s.io/api/core/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// readersCA is the CA of the node's S3 endpoint for readers, from the ConfigMap the manager keeps
// in each namespace that has per-node copies (controllers/readeraccess).
var readersCA = &jobs.ConfigMapKey{Name: s3creds.ConfigMapName, Key: "ca.crt"}

// readersRegion is the region readers sign for: the endpoint takes any, and SDKs need one.
const readersRegion = "us-east-1"

// readersAccess is how an endpoint input reaches the node's S3 endpoint: by path, over TLS.
func readersAccess(endpoint string) wire.S3Access {
	return wire.S3Access{Endpoint: endpoint, Region: readersRegion, PathStyle: true}
}

// withReadersEndpoint gives a container the namespace's readers' key (from its Secret, by
// reference), the endpoint, and a pin token that makes every Job and executor of the run, on any
// node, read the generation the run pinned at its start: the same the volume input reads. No
// Dataset credential: a reader of the endpoint needs none.
func withReadersEndpoint(c *corev1.Container, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, endpoint string) {
	key := func(name string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s3creds.SecretName}, Key: name}}
	}
	pin := s3creds.Pin{Session: string(run.UID), Generations: map[string]int64{ds.Name: run.Status.DatasetGeneration}}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: wire.EnvAccessKeyID, ValueFrom: key(wire.EnvAccessKeyID)},
		corev1.EnvVar{Name: wire.EnvSecretAccessKey, ValueFrom: key(wire.EnvSecretAccessKey)},
		corev1.EnvVar{Name: wire.EnvSessionToken, Value: pin.String()},
		corev1.EnvVar{Name: "AWS_ENDPOINT_URL", Value: endpoint},
		corev1.EnvVar{Name: "AWS_REGION", Value: readersRegion})
}

// endpointUnsupported says why the run's endpoint input cannot read ds here, or "".
func endpointUnsupported(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, endpoint string) string {
	for _, in := range run.Spec.Inputs {
		if in.Type != datav1alpha1.InputEndpoint {
			continue
		}
		switch {
		case endpoint == "":
			return "input endpoint reads through the node agents' S3 endpoint for readers, which this installation does not serve (the chart's agent.readers.enabled)"
		case ds.Spec.Replicas == nil:
			return fmt.Sprintf("input endpoint reads a node's copy through its S3 endpoint, and Dataset %q keeps no copies on nodes (spec.replicas)", ds.Name)
		case run.Spec.DuringRefresh:
			return "input endpoint does not run during refreshes yet: the refreshes rewrite the bucket with the Dataset's credentials, which an endpoint reader does not hold"
		}
	}
	return ""
}
