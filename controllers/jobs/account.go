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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ShareWorkerAccount makes the workers' ServiceAccount named sa in owner's namespace, or adds owner to
// its owners (shareOwnership): a Dataset's sync Jobs and a BenchRun's Jobs both run as it.
func ShareWorkerAccount(ctx context.Context, c client.Client, reader client.Reader, owner client.Object, sa string) error {
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: sa}}
	if err := ShareOwnership(ctx, c, reader, owner, account); err != nil {
		return fmt.Errorf("making the workers' ServiceAccount %s/%s: %w", owner.GetNamespace(), sa, err)
	}
	return nil
}

// ShareOwnership creates obj (as given) owned by owner, or adds owner to the owners of the obj
// pqcache made earlier; any pqcache object that several others need (a Dataset's, a BenchRun's) can
// share it this way. The manager caches only its own objects, so one made by someone else shows as
// missing: its create then fails with AlreadyExists, and a read past the cache (reader) tells whose
// it is. One that is not pqcache's is left as it is.
func ShareOwnership(ctx context.Context, c client.Client, reader client.Reader, owner, obj client.Object) error {
	key := client.ObjectKeyFromObject(obj)
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	err := c.Get(ctx, key, cur)
	if apierrors.IsNotFound(err) {
		obj.SetLabels(map[string]string{LabelName: "pqcache", LabelManagedBy: "pqcache"})
		if err := controllerutil.SetOwnerReference(owner, obj, c.Scheme()); err != nil {
			return err
		}
		if err = c.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			return err
		}
		err = reader.Get(ctx, key, cur) // made meanwhile, or not pqcache's
	}
	if err != nil {
		return err
	}
	if cur.GetLabels()[LabelManagedBy] != "pqcache" || ownedBy(cur, owner) {
		return nil
	}
	if err := controllerutil.SetOwnerReference(owner, cur, c.Scheme()); err != nil {
		return err
	}
	return c.Update(ctx, cur)
}

// ownedBy says whether owner is among obj's owners.
func ownedBy(obj, owner client.Object) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			return true
		}
	}
	return false
}
