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

	corev1 "k8s.io/api/core/v1"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// AccessPolicy is whose identity a worker reads a tenant's bucket with, and which endpoint addresses
// it may connect to: the manager's flags (the chart's ambientCredentials and endpoints values).
type AccessPolicy struct {
	// AmbientNamespaces may read, for a Dataset that names no credentials, with the worker pod's own
	// identity (its environment, the node's instance role); "*" is every namespace. Elsewhere the
	// worker reads anonymously.
	AmbientNamespaces []string
	// DeniedCIDRs and AllowedCIDRs: the worker never connects to a store at an address in a denied
	// range unless an allowed range holds it.
	DeniedCIDRs, AllowedCIDRs []string
}

// ambientRefused reports whether ds's worker must read its bucket anonymously.
func (p AccessPolicy) ambientRefused(ds *datav1alpha1.Dataset) bool {
	return !syncspec.NamesCredentials(ds) && !wire.AmbientAllowed(p.AmbientNamespaces, ds.Namespace)
}

// env is what a worker of ds needs in its environment to apply the policy; none when nothing applies.
func (p AccessPolicy) env(ds *datav1alpha1.Dataset) []corev1.EnvVar {
	var env []corev1.EnvVar
	if p.ambientRefused(ds) {
		env = append(env, corev1.EnvVar{Name: wire.EnvNoAmbientCredentials, Value: "true"})
	}
	if len(p.DeniedCIDRs) > 0 {
		env = append(env, corev1.EnvVar{Name: wire.EnvDeniedCIDRs, Value: strings.Join(p.DeniedCIDRs, ",")})
		if len(p.AllowedCIDRs) > 0 {
			env = append(env, corev1.EnvVar{Name: wire.EnvAllowedCIDRs, Value: strings.Join(p.AllowedCIDRs, ",")})
		}
	}
	return env
}

// WithAccessPolicy puts the policy's environment into the given containers of a pod (by default the
// first), like withCABundle: every container that reads ds's bucket with pqcache's store.
func WithAccessPolicy(spec *corev1.PodSpec, ds *datav1alpha1.Dataset, p AccessPolicy, into ...*corev1.Container) {
	env := p.env(ds)
	if len(env) == 0 {
		return
	}
	if len(into) == 0 {
		into = []*corev1.Container{&spec.Containers[0]}
	}
	for _, c := range into {
		c.Env = append(c.Env, env...)
	}
}
