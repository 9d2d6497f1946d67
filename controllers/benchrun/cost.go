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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// priceRun writes the prices the run uses into status.pricing (spec.pricing over the prices file, the
// storage price for the Dataset's StorageClass) and returns the facts its cache costs are computed
// from. With the Dataset gone it changes nothing and returns nil: what was computed while it was there
// stays.
func (r *Reconciler) priceRun(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) (*cacheFacts, error) {
	prices, err := r.Prices.Get()
	if err != nil {
		// The last good prices apply; the operator's log says why the new ones do not.
		ctrl.LoggerFrom(ctx).Error(err, "the prices file cannot be used, keeping the last good prices")
	}
	if ds == nil {
		if run.Status.Pricing == nil {
			run.Status.Pricing = effectivePricing(prices, run.Spec.Pricing, storageClassDefault)
		}
		return nil, nil
	}
	class, err := r.claimClass(ctx, ds)
	if err != nil {
		return nil, err
	}
	facts := cacheFactsOf(ds, class, r.Worker.Resources)
	run.Status.Pricing = effectivePricing(prices, run.Spec.Pricing, facts.class)
	return &facts, nil
}

// claimClass is the StorageClass of the Dataset's claim: as the claim names it (the API server fills
// in the default class on creation), else as the Dataset asked; "" when neither says.
func (r *Reconciler) claimClass(ctx context.Context, ds *datav1alpha1.Dataset) (string, error) {
	if ds.Spec.Replicas != nil {
		return "", nil
	}
	if ds.Status.ClaimName != "" {
		var pvc corev1.PersistentVolumeClaim
		err := r.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: ds.Status.ClaimName}, &pvc)
		switch {
		case err == nil && pvc.Spec.StorageClassName != nil:
			return *pvc.Spec.StorageClassName, nil
		case err != nil && !apierrors.IsNotFound(err):
			return "", fmt.Errorf("reading claim %s: %w", ds.Status.ClaimName, err)
		}
	}
	if sc := ds.Spec.Volume.StorageClassName; sc != nil {
		return *sc, nil
	}
	return "", nil
}

// readsCache reports whether an input reads the Dataset's cache (wholly or, for the mixed inputs, all
// but the fresh prefixes), and so carries its storage and refresh costs.
func readsCache(input string) bool {
	switch datav1alpha1.InputType(input) {
	case datav1alpha1.InputVolume, datav1alpha1.InputMixedStaged, datav1alpha1.InputMixedDirect:
		return true
	}
	return false
}

// setCacheCosts gives every recorded result that reads the cache what the cache costs over time, and,
// with spec.runsPerDay, replaces the volume results' break-even (filling the cache against the
// saving per run) with one that also pays for a day of storage and refreshes per day of runs, in runs
// and in days. Without the facts (the Dataset is gone) it keeps what was computed.
func setCacheCosts(run *datav1alpha1.BenchRun, f *cacheFacts) {
	st := &run.Status
	if f == nil || st.Pricing == nil {
		return
	}
	cc := cacheCost(st.Pricing, *f)
	for i := range st.Results {
		r := &st.Results[i]
		r.Cache, r.BreakEvenDays = nil, nil
		if r.CompletionTime != nil && readsCache(r.Input) {
			r.Cache = cc.DeepCopy()
		}
	}
	st.BreakEvenDays = nil
	if run.Spec.RunsPerDay == nil {
		return
	}
	keys, saved := savings(st.Results)
	fill, daily := fillMicros(st.Pricing, f.bytes), dailyMicros(cc)
	type breakEven struct{ runs, days *int64 }
	at := map[string]breakEven{}
	for _, key := range keys {
		runs, days := breakEvenAtRate(fill, daily, saved[key], *run.Spec.RunsPerDay)
		at[key] = breakEven{runs, days}
	}
	for i := range st.Results {
		if r := &st.Results[i]; r.Input == string(datav1alpha1.InputVolume) && r.CompletionTime != nil {
			if be, ok := at[costKey(*r)]; ok {
				r.BreakEvenRuns, r.BreakEvenDays = be.runs, be.days
			}
		}
	}
	if len(keys) > 0 {
		st.BreakEvenRuns, st.BreakEvenDays = at[keys[0]].runs, at[keys[0]].days
	}
}
