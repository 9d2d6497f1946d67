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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions configures the manager's informers: only the watched namespaces (none: all), and of
// the Jobs only pqcache's own, so that a cluster running ten thousand other Jobs costs the manager
// no memory for them. Pods and events are never cached (the controllers read the few they need).
func CacheOptions(namespaces []string) crcache.Options {
	ours := labels.SelectorFromSet(labels.Set{LabelManagedBy: "pqcache"})
	opts := crcache.Options{ByObject: map[client.Object]crcache.ByObject{
		&batchv1.Job{}: {Label: ours},
		// The Roles, RoleBindings and ServiceAccounts the manager makes (dataset's agent_grant.go and
		// worker_account.go, jobs.ShareOwnership): the cluster's others are none of its business.
		&rbacv1.Role{}:           {Label: ours},
		&rbacv1.RoleBinding{}:    {Label: ours},
		&corev1.ServiceAccount{}: {Label: ours},
	}}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]crcache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = crcache.Config{}
		}
	}
	return opts
}
