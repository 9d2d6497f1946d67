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
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteStatus is the one status write at the end of a reconcile: obj's status, patched from orig's
// when changed. The patch carries the resourceVersion read, so a reconcile that started from a stale
// copy (before another recorded the same Job) is refused instead of writing over that record, and
// runs again from the newer copy, unless it failed already (reconcileErr), whose error wins.
//
// It returns written: false when the reconcile must end now with (res, err); true when the status is
// in the API server as computed, and what follows it (announcing recorded Jobs) may happen.
func WriteStatus(ctx context.Context, w client.SubResourceWriter, orig, obj client.Object, changed bool, kind string, reconcileErr error) (written bool, res ctrl.Result, err error) {
	if !changed {
		return true, ctrl.Result{}, nil
	}
	perr := w.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case perr == nil:
		return true, ctrl.Result{}, nil
	case apierrors.IsConflict(perr) && reconcileErr == nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Status changed meanwhile; reconciling again from the newer copy")
		return false, ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return false, ctrl.Result{}, errors.Join(reconcileErr, fmt.Errorf("updating status of %s %s: %w", kind, klog.KObj(obj), perr))
}
