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

package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// pruneEvery is, by default, how often the agent removes the copies its node no longer keeps (a
// Dataset deleted, a node taken out of a selector).
const pruneEvery = 30 * time.Second

// concurrentCopies is how many copies the agent works on at once; their GETs share the Budget.
const concurrentCopies = 4

// CacheOptions makes the agent's informer of DatasetReplicas hold only its node's: a node agent in a
// cluster of many nodes never caches the others'. It caches every Dataset (small objects, and the
// agent needs the source of each copy it keeps).
func CacheOptions(node string) crcache.Options {
	return crcache.Options{ByObject: map[client.Object]crcache.ByObject{
		&datav1alpha1.DatasetReplica{}: {Label: labels.SelectorFromSet(labels.Set{datav1alpha1.LabelReplicaNode: datav1alpha1.LabelValue(node)})},
	}}
}

// SetupWithManager registers the agent's reconciler and its pruner.
func (a *Agent) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(pruner{a}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.DatasetReplica{}).
		// A DatasetReplica can reach this cache before its Dataset does (two watches): Reconcile then
		// finds no Dataset and ends, and nothing would wake it again. The Dataset's arrival does.
		Watches(&datav1alpha1.Dataset{}, handler.EnqueueRequestsFromMapFunc(a.replicasOf),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return true },
				UpdateFunc:  func(event.UpdateEvent) bool { return false }, // status writes: the replica's own events suffice
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Named("agent").
		// One agent runs per process in a cluster; tests run several, one per node, in one process.
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrentCopies, SkipNameValidation: ptr.To(true)}).
		Complete(a)
}

// replicasOf is this node's DatasetReplicas of the Dataset obj: the cache holds only this node's, and
// a shortened label value can name another Dataset too, so the spec's name decides.
func (a *Agent) replicasOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var reps datav1alpha1.DatasetReplicaList
	if err := a.List(ctx, &reps, client.InNamespace(obj.GetNamespace()),
		client.MatchingLabels{datav1alpha1.LabelReplicaDataset: datav1alpha1.LabelValue(obj.GetName())}); err != nil {
		a.Log.Warn("Listing this node's copies of a Dataset", "dataset", obj.GetNamespace()+"/"+obj.GetName(), "error", err)
		return nil
	}
	var out []reconcile.Request
	for _, r := range reps.Items {
		if r.Spec.DatasetName == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&r)})
		}
	}
	return out
}

// pruner removes, now and then, the copies of this node that no DatasetReplica asks for any more.
type pruner struct{ a *Agent }

func (p pruner) Start(ctx context.Context) error {
	every := p.a.PruneEvery
	if every <= 0 {
		every = pruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		p.a.prune(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// prune removes the directories of copies this node no longer keeps.
func (a *Agent) prune(ctx context.Context) {
	// Taken before the listing: a copy that starts after it is not in the listing, and is kept.
	since := a.Copies.Mark()
	var reps datav1alpha1.DatasetReplicaList
	if err := a.List(ctx, &reps); err != nil {
		a.Log.Warn("Listing this node's copies", "error", err)
		return
	}
	keep := map[string]bool{}
	if a.InUse != nil {
		if keep = a.InUse(); keep == nil {
			return // what pods read is not known yet (the mount container has not reported): remove nothing
		}
	}
	for _, r := range reps.Items {
		if r.Spec.NodeName != a.Node {
			continue
		}
		var ds datav1alpha1.Dataset
		if err := a.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Spec.DatasetName}, &ds); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return // unsure what to keep: remove nothing
			}
			continue
		}
		keep[a.Copies.Dir(&ds)] = true
	}
	removed, err := a.Copies.Prune(keep, since)
	for _, dir := range removed {
		a.Log.Info("Removed a copy this node no longer keeps", "dir", dir)
	}
	if err != nil {
		a.Log.Warn("Removing copies this node no longer keeps", "error", err)
	}
}
