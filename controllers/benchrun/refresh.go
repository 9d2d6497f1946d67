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
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/dataset"
)

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=datasets,verbs=get;list;watch;patch

// refreshRequestDue decides, for a run with duringRefresh whose Jobs run, whether to ask its Dataset
// for a refresh now, and otherwise when to look again (0: not while nothing changes). A Dataset with
// an event source gets no request: the Jobs' rewrites reach it as notifications. A suspended Dataset
// gets none either (it would not sync). One request is outstanding at a time: a new one waits until
// a sync started after the last (the Dataset served it) and a period has passed since it.
func refreshRequestDue(ds *datav1alpha1.Dataset, last *metav1.Time, every time.Duration, now time.Time) (due bool, wait time.Duration) {
	if ds.Spec.Refresh.Events != nil || ds.Spec.Refresh.Suspend {
		return false, 0
	}
	if last == nil {
		return true, 0
	}
	if dataset.RefreshRequested(ds) {
		return false, 0 // not served yet; the Dataset's status changes wake the run
	}
	if next := last.Add(every); now.Before(next) {
		return false, next.Sub(now)
	}
	return true, 0
}

// ensureRefreshes follows a run with duringRefresh while its Jobs run: it records the generations the
// Dataset publishes, and asks the Dataset for a refresh every spec.refresh.every (an annotation the
// Dataset controller treats as a one-off manual token). It returns when to look again (0: no need).
func (r *Reconciler) ensureRefreshes(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, views []jobView, now time.Time) (time.Duration, error) {
	if !run.Spec.DuringRefresh || ds == nil || run.Status.StartTime == nil {
		return 0, nil
	}
	st := run.Status.Refresh
	if st == nil {
		st = &datav1alpha1.BenchRefreshStatus{FirstGeneration: run.Status.DatasetGeneration, LastGeneration: run.Status.DatasetGeneration}
		run.Status.Refresh = st
	}
	if m := ds.Status.Manifest; m != nil && m.Generation > st.LastGeneration {
		st.LastGeneration = m.Generation
	}
	st.GenerationsPublished = st.LastGeneration - st.FirstGeneration
	running := false
	for _, v := range views {
		running = running || v.phase == jobRunning
	}
	if !running {
		return 0, nil
	}
	due, wait := refreshRequestDue(ds, st.LastRequestTime, refreshEvery(run), now)
	if !due {
		return wait, nil
	}
	patch := client.MergeFrom(ds.DeepCopy())
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[dataset.AnnotationRefreshRequested] = now.UTC().Format(time.RFC3339)
	if err := r.Patch(ctx, ds, patch); err != nil {
		return 0, fmt.Errorf("asking dataset %s for a refresh: %w", ds.Name, err)
	}
	st.Requests++
	st.LastRequestTime = &metav1.Time{Time: now}
	ctrl.LoggerFrom(ctx).Info("Asked for a refresh during the run", "benchrun", klog.KObj(run), "dataset", klog.KObj(ds), "requests", st.Requests)
	return refreshEvery(run), nil
}
