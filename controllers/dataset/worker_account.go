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
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=pqcache-worker-progress
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch

// WorkerProgressRole is the ClusterRole (charts/pqcache/templates/worker-progress.yaml,
// config/rbac/worker_progress.yaml) that lets a sync worker annotate its own pod with its progress.
// The manager binds it, in each namespace where it starts a sync Job, to the workers' ServiceAccount
// (WorkerOptions.ServiceAccount). It may bind that one ClusterRole and no other: `bind` by name, not
// the pod permissions themselves, which the manager does not hold.
const WorkerProgressRole = "pqcache-worker-progress"

// ensureWorkerAccount makes, before a sync Job of ds starts, the workers' ServiceAccount and its
// RoleBinding to WorkerProgressRole in ds's namespace, so that live progress needs nothing made by
// hand. Each Dataset that runs its workers under that account adds itself as an owner (not the
// controller): the garbage collector removes both with the last such Dataset. An account or binding
// of that name that pqcache did not make (the chart's, in watched namespaces, or one made by hand) is
// left as it is.
func (r *Reconciler) ensureWorkerAccount(ctx context.Context, ds *datav1alpha1.Dataset) error {
	sa := r.Worker.ServiceAccount
	if sa == "" || jobs.CredentialsAccount(ds) != "" {
		return nil // no live progress, or the pods run under the Dataset's own account
	}
	if err := jobs.ShareWorkerAccount(ctx, r.Client, r.APIReader, ds, sa); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: WorkerProgressRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: WorkerProgressRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ds.Namespace, Name: sa}},
	}
	if err := jobs.ShareOwnership(ctx, r.Client, r.APIReader, ds, binding); err != nil {
		return fmt.Errorf("binding the workers' ServiceAccount %s/%s to %s: %w", ds.Namespace, sa, WorkerProgressRole, err)
	}
	return nil
}
