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
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// NodeLabelReconciler labels each node with the Datasets it holds a ready copy of
// (datav1alpha1.NodeLabelKey, valued with the Dataset's namespace), so that readers can be placed
// beside the data with a plain node affinity, as the locality webhook does. It reconciles nodes, not
// Datasets: a node's labels are computed from every Dataset's status at once, so a Dataset deleted
// while the manager was down loses its labels when the manager starts again.
type NodeLabelReconciler struct {
	client.Client
	// Namespaces are the namespaces this manager watches (none: all). Labels valued with another
	// namespace belong to another installation and are left alone.
	Namespaces []string
}

// Reconcile makes the node's pqcache labels match the copies it holds.
func (r *NodeLabelReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var node corev1.Node
	if err := r.Get(ctx, req.NamespacedName, &node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var datasets datav1alpha1.DatasetList
	if err := r.List(ctx, &datasets); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing Datasets: %w", err)
	}
	want := readyCopyLabels(node.Name, datasets.Items)
	patch := nodeLabelPatch(node.Labels, want, r.owns)
	if len(patch) == 0 {
		return ctrl.Result{}, nil
	}
	body, err := mergePatchOfLabels(patch)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Patch(ctx, &node, client.RawPatch(types.MergePatchType, body)); err != nil {
		return ctrl.Result{}, fmt.Errorf("labelling node %s: %w", node.Name, err)
	}
	return ctrl.Result{}, nil
}

// owns says whether a label valued with namespace ns is this manager's to remove.
func (r *NodeLabelReconciler) owns(ns string) bool {
	return len(r.Namespaces) == 0 || slices.Contains(r.Namespaces, ns)
}

// readyCopyLabels are the labels a node should carry: one per Dataset whose status says the node
// holds a ready copy.
func readyCopyLabels(node string, datasets []datav1alpha1.Dataset) map[string]string {
	want := map[string]string{}
	for i := range datasets {
		ds := &datasets[i]
		if ds.Status.Replicas == nil || !ds.DeletionTimestamp.IsZero() {
			continue
		}
		for _, n := range ds.Status.Replicas.Nodes {
			if n.Node == node && n.Ready {
				want[datav1alpha1.NodeLabelKey(ds.Namespace, ds.Name)] = ds.Namespace
			}
		}
	}
	return want
}

// nodeLabelPatch is the change from the node's labels to want: labels to set, and pqcache labels to
// remove (nil values) among those owns says are ours.
func nodeLabelPatch(have, want map[string]string, owns func(namespace string) bool) map[string]*string {
	patch := map[string]*string{}
	for k, v := range want {
		if have[k] != v {
			patch[k] = &v
		}
	}
	for k, v := range have {
		if _, keep := want[k]; !keep && strings.HasPrefix(k, datav1alpha1.NodeLabelPrefix) && owns(v) {
			patch[k] = nil
		}
	}
	return patch
}

// mergePatchOfLabels is a JSON merge patch of metadata.labels: nil values remove a label.
func mergePatchOfLabels(labels map[string]*string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
}

// SetupWithManager watches nodes (created, or their labels changed by someone else) and Datasets
// (a copy becoming ready or not, on the nodes in the old and the new status).
func (r *NodeLabelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodelabels").
		For(&corev1.Node{}, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&datav1alpha1.Dataset{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { enqueueCopyNodes(q, e.Object) },
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { enqueueCopyNodes(q, e.Object) },
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
				if readyNodesOf(e.ObjectOld) != readyNodesOf(e.ObjectNew) {
					enqueueCopyNodes(q, e.ObjectOld)
					enqueueCopyNodes(q, e.ObjectNew)
				}
			},
		}).
		Complete(r)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// readyNodesOf is the Dataset's ready nodes, as one comparable string.
func readyNodesOf(o client.Object) string {
	ds, ok := o.(*datav1alpha1.Dataset)
	if !ok || ds.Status.Replicas == nil {
		return ""
	}
	var b strings.Builder
	for _, n := range ds.Status.Replicas.Nodes {
		if n.Ready && ds.DeletionTimestamp.IsZero() {
			b.WriteString(n.Node + ",")
		}
	}
	return b.String()
}

// enqueueCopyNodes enqueues every node the Dataset has a copy on, ready or not: a copy that stopped
// being ready loses its label.
func enqueueCopyNodes(q queue, o client.Object) {
	ds, ok := o.(*datav1alpha1.Dataset)
	if !ok || ds.Status.Replicas == nil {
		return
	}
	for _, n := range ds.Status.Replicas.Nodes {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Node}})
	}
}
