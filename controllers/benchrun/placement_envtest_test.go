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
	"maps"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// The suite's operator admits bench Jobs under a cluster cap only (the per-node admission would
// hold every other spec's Jobs until a pod nobody creates gets a node). These specs drive a
// reconciler of their own with the per-node cap, on runs that the API server never sees: the suite's
// controller then leaves their Jobs alone, and the Jobs, pods and nodes are real API objects.
var _ = Describe("Bench Jobs admitted per node", func() {
	var (
		ns   string
		node string
		ds   *datav1alpha1.Dataset
	)
	BeforeEach(func() {
		ns = testenv.NewNamespace()
		ds = testenv.ReadyDataset(ns, "data")
		node = ns + "-bench"
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"bench-node": ns}}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		// The API server taints a new node not-ready; the node controller lifts it once kubelet reports.
		n.Spec.Taints = nil
		Expect(k8sClient.Update(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
	})

	reconciler := func(perNode int) *Reconciler {
		w := jobs.DefaultWorkerOptions()
		w.Image = testWorkerImage
		return &Reconciler{Client: k8sClient, APIReader: k8sClient, Clock: fakeClock, Worker: w.WithDefaults(),
			MaxJobsPerNode: perNode, admission: admission.NewQueue(0)}
	}
	// run is a started two-Job run (two configurations, the volume input) whose only node is node.
	run := func(name string, mutate ...func(*datav1alpha1.BenchRun)) *datav1alpha1.BenchRun {
		r := newBenchRun(ns, name, "data", func(r *datav1alpha1.BenchRun) {
			r.UID = uuid.NewUUID()
			r.Spec.Inputs = r.Spec.Inputs[:1]
			r.Spec.NodeSelector = map[string]string{"bench-node": ns}
			r.Spec.Timeout = "1h"
			r.Status.StartTime = &metav1.Time{Time: fakeClock.Now()}
			r.Status.DatasetGeneration = 1
		}, func(r *datav1alpha1.BenchRun) {
			for _, m := range mutate {
				m(r)
			}
		})
		return r
	}
	jobsOf := func(r *datav1alpha1.BenchRun) []batchv1.Job {
		var list batchv1.JobList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{LabelBenchRun: datav1alpha1.LabelValue(r.Name)})).To(Succeed())
		return list.Items
	}
	// placeOn creates the Job's pod on node, running, as the scheduler and kubelet would.
	placeOn := func(j *batchv1.Job) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: j.Name + "-", Labels: maps.Clone(j.Spec.Template.Labels)},
			Spec:       corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: benchContainerName, Image: testWorkerImage}}},
		}
		pod.Labels[jobs.ControllerUIDLabel] = string(j.UID)
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Status.Phase = corev1.PodRunning
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	}
	// testenv.Finish ends a Job and its pods, so that they free their node (and the suite's cluster cap).
	finish := func(j *batchv1.Job) {
		var pods corev1.PodList
		Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{jobs.ControllerUIDLabel: string(j.UID)})).To(Succeed())
		for i := range pods.Items {
			pods.Items[i].Status.Phase = corev1.PodSucceeded
			Expect(k8sClient.Status().Update(ctx, &pods.Items[i])).To(Succeed())
		}
		testenv.MarkJobFinished(j, false, "")
	}
	reconcile := func(r *Reconciler, run *datav1alpha1.BenchRun) {
		_, err := r.reconcileRun(ctx, run)
		Expect(err).NotTo(HaveOccurred())
	}
	message := func(run *datav1alpha1.BenchRun) string {
		c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded)
		Expect(c).NotTo(BeNil())
		return c.Message
	}

	It("admits two Jobs for one node one at a time under the default cap of 1, and both at once without a cap", func() {
		r, one := reconciler(1), run("one")
		reconcile(r, one)
		found := jobsOf(one)
		Expect(found).To(HaveLen(1), "the second Job waits for the first one's pod to get a node")
		Expect(message(one)).To(ContainSubstring("1 waiting for a node: a bench Job admitted before it has no node yet"))
		first := found[0]
		anti := first.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		Expect(anti).To(ContainElement(HaveField("LabelSelector.MatchLabels", HaveKeyWithValue(jobs.LabelComponent, componentBench))),
			"under a cap of 1 the scheduler keeps bench pods apart too")

		placeOn(&first)
		reconcile(r, one)
		Expect(jobsOf(one)).To(HaveLen(1), "the node runs one bench Job, the cap")
		Expect(one.Status.Jobs.Queued).To(Equal(int32(1)))
		Expect(message(one)).To(ContainSubstring("1 waiting for a node: every node it can run on runs the operator's cap of 1 bench Job(s) per node"))

		finish(&first)
		reconcile(r, one)
		Expect(jobsOf(one)).To(HaveLen(2), "the node is free again")
		for _, j := range jobsOf(one) {
			if j.Name != first.Name {
				placeOn(&j)
				finish(&j)
			}
		}

		r0, both := reconciler(0), run("both")
		reconcile(r0, both)
		Expect(jobsOf(both)).To(HaveLen(2), "no cap per node: both at once")
		for _, j := range jobsOf(both) {
			Expect(j.Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1), "only the exclusive runs' pods are avoided")
			finish(&j)
		}
	})

	It("keeps a second run's Job off the node of an exclusive run's Job, and sync Jobs avoid exclusive pods", func() {
		r := reconciler(0)
		solo := run("solo", func(r *datav1alpha1.BenchRun) {
			r.Spec.Exclusive = true
			r.Spec.Configs = r.Spec.Configs[:1]
		})
		reconcile(r, solo)
		found := jobsOf(solo)
		Expect(found).To(HaveLen(1))
		tpl := found[0].Spec.Template
		Expect(tpl.Labels).To(HaveKeyWithValue(jobs.LabelExclusiveBench, "true"))
		anti := tpl.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		Expect(anti).To(HaveLen(1))
		Expect(anti[0].LabelSelector.MatchExpressions[0].Values).To(ConsistOf(componentBench, jobs.ComponentSync, jobs.ComponentSize))
		Expect(anti[0].NamespaceSelector).To(Equal(&metav1.LabelSelector{}), "pqcache pods of every namespace")
		placeOn(&found[0])

		other := run("other", func(r *datav1alpha1.BenchRun) { r.Spec.Configs = r.Spec.Configs[:1] })
		reconcile(r, other)
		Expect(jobsOf(other)).To(BeEmpty(), "the node is held by the exclusive run, even without a cap per node")
		Expect(message(other)).To(ContainSubstring("waiting for a node: node " + node + " runs a Job of exclusive BenchRun " + ns + "/solo"))

		finish(&found[0])
		reconcile(r, other)
		Expect(jobsOf(other)).To(HaveLen(1), "the exclusive Job ended")
		finish(&jobsOf(other)[0])

		// The Dataset's sync Jobs keep off nodes running exclusive bench pods, in any namespace.
		sync := testenv.SyncJobsOf(Default, ds)
		Expect(sync).NotTo(BeEmpty())
		terms := sync[0].Spec.Template.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		Expect(terms).To(ConsistOf(HaveField("LabelSelector.MatchLabels", Equal(map[string]string{jobs.LabelExclusiveBench: "true"}))))
		Expect(terms[0].TopologyKey).To(Equal(corev1.LabelHostname))
	})

	It("keeps a Job whose volume lives on a full node waiting, instead of admitting it where it cannot run", func() {
		// A second node, and a local volume on it: a Job of the claim input can run there only.
		local := ns + "-local"
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: local, Labels: map[string]string{"bench-node": ns, corev1.LabelHostname: local}}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		n.Spec.Taints = nil
		Expect(k8sClient.Update(ctx, n)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, n))).To(Succeed()) })
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: local}, Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disk"}},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{local}}}}}}},
		}}
		Expect(k8sClient.Create(ctx, pv)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pv))).To(Succeed()) })
		Expect(k8sClient.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "local"},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: local, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})).To(Succeed())
		onClaim := func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputClaim, ClaimName: "local"}}
		}

		By("another run's bench pod holds the volume's node")
		r := reconciler(1)
		busy := run("busy", onClaim)
		reconcile(r, busy)
		Expect(jobsOf(busy)).To(HaveLen(1))
		holder := jobsOf(busy)[0]
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: holder.Name + "-", Labels: maps.Clone(holder.Spec.Template.Labels)},
			Spec:       corev1.PodSpec{NodeName: local, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: benchContainerName, Image: testWorkerImage}}},
		}
		pod.Labels[jobs.ControllerUIDLabel] = string(holder.UID)
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		pod.Status.Phase = corev1.PodRunning
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		reconcile(r, busy)

		By("the next run on the same volume waits, though the other node is free")
		next := run("next", onClaim)
		reconcile(r, next)
		Expect(jobsOf(next)).To(BeEmpty(), "admitted with the volume's node excluded, the Job could never run")
		Expect(message(next)).To(ContainSubstring("waiting for a node: every node it can run on runs the operator's cap of 1 bench Job(s) per node"))

		By("once the volume's node is free, the Job starts without excluding it")
		finish(&holder)
		reconcile(r, next)
		Expect(jobsOf(next)).To(HaveLen(1))
		aff := jobsOf(next)[0].Spec.Template.Spec.Affinity
		if aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				for _, f := range term.MatchFields {
					Expect(f.Values).NotTo(ContainElement(local), "the Job excludes its volume's node")
				}
			}
		}
	})
})
