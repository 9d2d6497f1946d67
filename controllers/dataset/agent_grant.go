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
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// The node agents hold no Secret grant of their own (docs/security.md, "Secrets the agent can read").
// For each Dataset with spec.replicas that names a credentials Secret, the manager grants the agents'
// ServiceAccount `get` on exactly that Secret, in the Dataset's namespace, with a Role and RoleBinding
// that the Dataset controls: the garbage collector removes them with the Dataset, and the manager
// removes them as soon as the Dataset stops naming a Secret or stops keeping per-node copies.
// The API server lets the manager write such a Role only because it may read Secrets itself (the
// `get secrets` it holds for the event sources' webhook tokens and SQS credentials): it needs neither
// `bind` nor `escalate` for it.
//
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete

// agentGrantName names a Dataset's Role and RoleBinding for the agents: one of each per Dataset.
func agentGrantName(ds *datav1alpha1.Dataset) string {
	return jobs.FitName(ds.Name, "-pqcache-agent", jobs.MaxObjectName)
}

// agentSecret is the Secret the agents must read for ds, or "" when they need none: only the seed's
// agent reads the bucket, and only a Dataset with per-node copies has one.
func agentSecret(ds *datav1alpha1.Dataset) string {
	c := ds.Spec.Source.S3.Credentials
	if ds.Spec.Replicas == nil || c == nil || c.SecretRef == nil || !ds.DeletionTimestamp.IsZero() {
		return ""
	}
	return c.SecretRef.Name
}

// reconcileAgentGrant makes the Role and RoleBinding that let the agents read ds's Secret, or removes
// them when ds names none. Without an agent account (no agents installed) it does nothing.
func (r *Reconciler) reconcileAgentGrant(ctx context.Context, ds *datav1alpha1.Dataset) error {
	if r.AgentAccount.Name == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: ds.Namespace, Name: agentGrantName(ds)}
	secret := agentSecret(ds)
	if secret == "" {
		return r.removeAgentGrant(ctx, ds, key)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, role, func() error {
		role.Labels = grantLabels(role.Labels, ds)
		role.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{secret}}}
		return controllerutil.SetControllerReference(ds, role, r.Scheme())
	}); err != nil {
		return fmt.Errorf("granting the node agents Secret %s/%s: %w", ds.Namespace, secret, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, binding, func() error {
		binding.Labels = grantLabels(binding.Labels, ds)
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: key.Name} // immutable, and always this
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: r.AgentAccount.Namespace, Name: r.AgentAccount.Name}}
		return controllerutil.SetControllerReference(ds, binding, r.Scheme())
	}); err != nil {
		return fmt.Errorf("binding the node agents to Role %s/%s: %w", key.Namespace, key.Name, err)
	}
	return nil
}

// removeAgentGrant deletes ds's Role and RoleBinding for the agents, if it has them. Only objects ds
// controls are deleted: a Role of that name that someone else made is left alone.
func (r *Reconciler) removeAgentGrant(ctx context.Context, ds *datav1alpha1.Dataset, key types.NamespacedName) error {
	var errs []error
	for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}} {
		if err := r.Get(ctx, key, obj); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if !metav1.IsControlledBy(obj, ds) {
			continue
		}
		if err := r.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing the node agents' grant %s/%s: %w", key.Namespace, key.Name, err))
		}
	}
	return errors.Join(errs...)
}

// grantLabels marks an object as pqcache's (the manager caches only those) and names its Dataset.
func grantLabels(l map[string]string, ds *datav1alpha1.Dataset) map[string]string {
	if l == nil {
		l = map[string]string{}
	}
	l[jobs.LabelName], l[jobs.LabelManagedBy], l[jobs.LabelDataset] = "pqcache", "pqcache", datav1alpha1.LabelValue(ds.Name)
	return l
}
