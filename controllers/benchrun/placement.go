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
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// workerComponents are the pqcache pods an exclusive bench Job keeps off its node: bench and sync
// Jobs (and the size probes that sync rounds run). The node agents carry another component and
// cannot move.
var workerComponents = []string{componentBench, jobs.ComponentSync, jobs.ComponentSize}

// benchNodes is what one reconcile reads, at most once, for the per-node admission: the nodes, and
// what pqcache runs on each.
type benchNodes struct {
	nodes []corev1.Node
	use   map[string]admission.NodeUse
}

// placementRound reads the nodes lazily, once per reconcile, and only when a Job is to be admitted
// per node.
type placementRound struct {
	read  func(context.Context) (*benchNodes, error)
	nodes *benchNodes
}

func (p *placementRound) get(ctx context.Context) (*benchNodes, error) {
	if p.nodes == nil {
		bn, err := p.read(ctx)
		if err != nil {
			return nil, err
		}
		p.nodes = bn
	}
	return p.nodes, nil
}

// readBenchNodes lists the nodes (cached) and pqcache's unfinished worker pods (uncached, by label, in
// the watched namespaces), and counts the pods per node. A pod without a node counts nowhere: the
// admission waits for it instead (AdmitOnNode).
func (r *Reconciler) readBenchNodes(ctx context.Context) (*benchNodes, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	req, err := labels.NewRequirement(jobs.LabelComponent, selection.In, workerComponents)
	if err != nil {
		return nil, fmt.Errorf("selecting worker pods: %w", err)
	}
	sel := labels.SelectorFromSet(labels.Set{jobs.LabelManagedBy: "pqcache"}).Add(*req)
	namespaces := r.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	bn := &benchNodes{nodes: nodes.Items, use: map[string]admission.NodeUse{}}
	for _, ns := range namespaces {
		var pods corev1.PodList
		if err := r.APIReader.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, fmt.Errorf("listing pqcache worker pods: %w", err)
		}
		for i := range pods.Items {
			countPod(bn.use, &pods.Items[i])
		}
	}
	return bn, nil
}

// countPod adds one pod to what its node runs, if it is placed and not finished.
func countPod(use map[string]admission.NodeUse, p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return
	}
	u := use[p.Spec.NodeName]
	switch {
	case p.Labels[jobs.LabelComponent] != componentBench:
		u.Others++
	default:
		u.Bench++
		if p.Labels[jobs.LabelExclusiveBench] == "true" {
			u.ExclusiveRun = p.Namespace + "/" + p.Labels[LabelBenchRun]
		}
	}
	use[p.Spec.NodeName] = u
}

// wantOf is where one planned Job may run as far as the controller knows: the nodes holding the
// pinned generation of a per-node copy, or else the nodes that its selector, affinity, taints and
// cordons allow. Resources and volumes are the scheduler's to weigh.
func wantOf(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, nodes []corev1.Node) admission.NodeWant {
	w := admission.NodeWant{Exclusive: run.Spec.Exclusive}
	if readsCopies(ds, j.input) {
		w.Nodes = nodesHolding(ds, run.Status.DatasetGeneration)
		return w
	}
	fits := nodeaffinity.NewRequiredNodeAffinity(run.Spec.NodeSelector, run.Spec.Affinity)
	noSchedule := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Spec.Unschedulable {
			continue
		}
		if ok, err := fits.Match(n); err != nil || !ok {
			continue
		}
		if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, run.Spec.Tolerations, noSchedule, true); untolerated {
			continue
		}
		w.Nodes = append(w.Nodes, n.Name)
	}
	return w
}

// volumeNodes are the nodes where a claim's volume can be used: those its PersistentVolume's required
// node affinity matches (a local volume lives on one node); nil when the claim is not bound yet or its
// volume reaches every node. Admission per node must know it: a Job admitted with its volume's one
// node excluded (because another Job seemed to take its room there) can never run, and would hold a
// bench slot until its deadline. The volume is read past the cache: PersistentVolumes are
// cluster-wide, and an informer on them would cost memory for every volume of the cluster.
func (r *Reconciler) volumeNodes(ctx context.Context, namespace, claim string, nodes []corev1.Node) ([]string, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: claim}, &pvc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	var pv corev1.PersistentVolume
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil, nil
	}
	sel, err := nodeaffinity.NewNodeSelector(pv.Spec.NodeAffinity.Required)
	if err != nil {
		return nil, nil //nolint:nilerr // a selector the API server took but we cannot read: the scheduler decides
	}
	out := []string{}
	for i := range nodes {
		if sel.Match(&nodes[i]) {
			out = append(out, nodes[i].Name)
		}
	}
	return out, nil
}

// onVolumeNodes narrows a Job's nodes to those its volume can be used on (bound: nil for none known).
// When none of its nodes can, the volume's own stand: the Job waits for one of them, and the scheduler
// says why it cannot place the Job there, instead of the Job being admitted where it cannot run.
func onVolumeNodes(nodes, bound []string) []string {
	if bound == nil {
		return nodes
	}
	var both []string
	for _, n := range nodes {
		if slices.Contains(bound, n) {
			both = append(both, n)
		}
	}
	if len(both) == 0 {
		return bound
	}
	return both
}

// nodeWaitWhy says why a Job that wants w waits for a node, for the run's status; empty when one of
// its nodes has room (it then waits for a slot, or for a Job admitted before it to be placed).
func nodeWaitWhy(w admission.NodeWant, use map[string]admission.NodeUse, perNode int) string {
	if _, ok := admission.PickNode(w, use, perNode); ok {
		return ""
	}
	for _, n := range w.Nodes {
		if run := use[n].ExclusiveRun; run != "" {
			return fmt.Sprintf("node %s runs a Job of exclusive BenchRun %s", n, run)
		}
	}
	if w.Exclusive {
		return "waiting for a node that runs no other pqcache Job (spec.exclusive)"
	}
	return fmt.Sprintf("every node it can run on runs the operator's cap of %d bench Job(s) per node", perNode)
}

// admitBench decides whether one planned Job may be created now, and returns the nodes it must avoid.
// Every Job is admitted per node, since any may meet an exclusive run's node; with both caps at 0 and
// no exclusive run, every Job is admitted at once, as before.
func (r *Reconciler) admitBench(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, v *jobView, round *placementRound, now time.Time) (bool, []string, error) {
	key := benchKey(run, v.plan)
	active := 0
	if r.MaxConcurrentJobs > 0 {
		active = jobs.CountActive(ctx, r.Client, componentBench, r.MaxConcurrentJobs)
	}
	bn, err := round.get(ctx)
	if err != nil {
		return false, nil, err
	}
	w := wantOf(run, ds, v.plan, bn.nodes)
	if claim := inputClaim(ds, v.plan.input); claim != "" {
		bound, err := r.volumeNodes(ctx, run.Namespace, claim, bn.nodes)
		if err != nil {
			return false, nil, err
		}
		w.Nodes = onVolumeNodes(w.Nodes, bound)
	}
	ok, avoid := r.admission.AdmitOnNode(key, w, bn.use, r.MaxJobsPerNode, active, now)
	if !ok {
		v.waitNode = nodeWaitWhy(w, bn.use, r.MaxJobsPerNode)
		v.placementHeld = r.admission.Placing()
		if v.waitNode == "" && v.placementHeld && len(w.Nodes) > 0 {
			v.waitNode = "a bench Job admitted before it has no node yet"
		}
	}
	return ok, avoid, nil
}

// benchKey is a bench Job's key in the admission queue: "namespace/run/job".
func benchKey(run *datav1alpha1.BenchRun, j benchJob) types.NamespacedName {
	return types.NamespacedName{Namespace: run.Namespace, Name: run.Name + "/" + j.name}
}

// placed says whether one of a Job's pods has a node.
func placed(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			return true
		}
	}
	return false
}

// withBenchPlacement adds what keeps a bench Job's pod where the per-node admission counted it: the
// nodes to avoid, and the pod anti-affinities of exclusive runs. An exclusive Job's pod is labelled
// and keeps off nodes running pqcache Jobs; any other keeps off nodes running an exclusive one, and
// under a cap of one per node off nodes running any bench pod, which the scheduler then enforces
// whatever the controller's memory holds.
func withBenchPlacement(job *batchv1.Job, exclusive bool, perNode int, avoid []string) {
	tpl := &job.Spec.Template
	var terms []corev1.PodAffinityTerm
	if exclusive {
		tpl.Labels[jobs.LabelExclusiveBench] = "true"
		terms = append(terms, jobs.OnOtherNodes(&metav1.LabelSelector{
			MatchLabels:      map[string]string{jobs.LabelManagedBy: "pqcache"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: jobs.LabelComponent, Operator: metav1.LabelSelectorOpIn, Values: workerComponents}},
		}))
	} else {
		terms = append(terms, jobs.ExclusiveBenchTerm())
		if perNode == 1 {
			terms = append(terms, jobs.OnOtherNodes(&metav1.LabelSelector{MatchLabels: map[string]string{jobs.LabelManagedBy: "pqcache", jobs.LabelComponent: componentBench}}))
		}
	}
	pod := &tpl.Spec
	pod.Affinity = pod.Affinity.DeepCopy() // may be the run's own, shared with its other Jobs
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	jobs.AddAntiAffinity(pod.Affinity, terms...)
	avoidNodes(pod.Affinity, avoid)
}

// avoidNodes keeps the pod off the named nodes: a NotIn on the node's name in every ORed term (a
// field requirement names one node, so one per node).
func avoidNodes(a *corev1.Affinity, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		req = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	for i := range req.NodeSelectorTerms {
		for _, n := range nodes {
			req.NodeSelectorTerms[i].MatchFields = append(req.NodeSelectorTerms[i].MatchFields,
				corev1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpNotIn, Values: []string{n}})
		}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = req
}
