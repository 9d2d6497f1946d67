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
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// The agents do not run in envtest: these specs play their part by writing DatasetReplica status,
// as an agent would, and check what the controller makes of it.
var _ = Describe("Dataset with per-node copies", func() {
	var ns, label string
	BeforeEach(func() {
		ns = testenv.NewNamespace()
		label = "pqcache.dev/test-" + ns
	})

	// addNode creates a Ready node carrying this spec's label.
	addNode := func(name string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name, Labels: map[string]string{label: "yes"}}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		DeferCleanup(func() { _ = k8sClient.Delete(ctx, n) })
		setNodeReady(n, true)
		return n
	}
	replicasOf := func(g Gomega, ds *datav1alpha1.Dataset) map[string]datav1alpha1.DatasetReplica {
		var list datav1alpha1.DatasetReplicaList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ds.Namespace))).To(Succeed())
		out := map[string]datav1alpha1.DatasetReplica{}
		for _, r := range list.Items {
			out[strings.TrimPrefix(r.Spec.NodeName, ns+"-")] = r
		}
		return out
	}
	newReplicated := func(name string, minReady int32) *datav1alpha1.Dataset {
		ds := testenv.NewDataset(ns, name, func(ds *datav1alpha1.Dataset) {
			ds.Spec.Volume = datav1alpha1.DatasetVolume{}
			ds.Spec.Replicas = &datav1alpha1.ReplicaPolicy{NodeSelector: map[string]string{label: "yes"}, MinReady: minReady}
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		return ds
	}

	It("labels the nodes holding a ready copy, and runs BenchRuns there through the CSI driver", func() {
		a, b := addNode("a"), addNode("b")
		ds := newReplicated("lake", 1)
		var reps map[string]datav1alpha1.DatasetReplica
		Eventually(func(g Gomega) { reps = replicasOf(g, ds); g.Expect(reps).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		seed := reps["a"]
		agentReports(&seed, 1, seed.Spec.SyncToken)
		Eventually(func(g Gomega) {
			g.Expect(replicasOf(g, ds)["b"].Spec.Generation).To(Equal(int64(1)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		follower := replicasOf(Default, ds)["b"]
		agentReports(&follower, 1, "")

		key := datav1alpha1.NodeLabelKey(ns, "lake")
		Eventually(func(g Gomega) {
			replicas := testenv.GetDataset(ds).Status.Replicas
			g.Expect(replicas).NotTo(BeNil(), "no status of its replicas yet")
			g.Expect(replicas.NodeLabel).To(Equal(key))
			for _, n := range []*corev1.Node{a, b} {
				var cur corev1.Node
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(n), &cur)).To(Succeed())
				g.Expect(cur.Labels).To(HaveKeyWithValue(key, ns), n.Name)
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("a BenchRun reads the pinned generation through the driver, on the nodes that hold it")
		run := newBenchRun(ns, "oncopies", "lake", func(r *datav1alpha1.BenchRun) {
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}}
			r.Spec.NodeSelector = nil
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(2), "run status %+v", getRun(run).Status)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		for _, j := range found {
			pod := j.Spec.Template.Spec
			Expect(pod.Volumes[0].CSI).NotTo(BeNil())
			Expect(pod.Volumes[0].CSI.Driver).To(Equal("data.pqcache.dev"))
			Expect(pod.Volumes[0].CSI.VolumeAttributes).To(Equal(map[string]string{"dataset": "lake", "generation": "1"}))
			terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			Expect(terms).To(HaveLen(2), "a term per node holding the generation")
			for i, n := range []*corev1.Node{a, b} {
				Expect(terms[i].MatchFields).To(ConsistOf(corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name}}))
			}
			Expect(pod.TopologySpreadConstraints).To(HaveLen(1))
			Expect(pod.Containers[0].Args).To(ContainElements("--data", "/data"))
		}

		By("a node taken out of the selector loses its copy and its label")
		Expect(k8sClient.Patch(ctx, b, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label))))).To(Succeed())
		Eventually(func(g Gomega) {
			var cur corev1.Node
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(b), &cur)).To(Succeed())
			g.Expect(cur.Labels).NotTo(HaveKey(key))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		for i := range found {
			finishBenchJob(&found[i], runnerSummary(found[i].Annotations[annotationConfig], "answer"), false)
		}
	})

})

// setNodeReady sets the node's Ready condition, as its kubelet would, at the controller's time.
func setNodeReady(n *corev1.Node, ready bool) {
	GinkgoHelper()
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
	at := metav1.NewTime(fakeClock.Now())
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastTransitionTime: at, LastHeartbeatTime: at}}
	Expect(k8sClient.Status().Update(ctx, n)).To(Succeed())
}

// agentReports writes what a node agent writes after publishing generation g (and answering token).
func agentReports(r *datav1alpha1.DatasetReplica, g int64, token string) {
	GinkgoHelper()
	now := metav1.Now()
	st := datav1alpha1.DatasetReplicaStatus{
		Generation: g, Files: 43, Bytes: 22 << 20, ObservedSyncToken: token, Endpoint: "http://" + r.Spec.NodeName + ":7480",
		Conditions: []metav1.Condition{{Type: datav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: datav1alpha1.ReasonSynced, Message: "published", LastTransitionTime: now}},
		LastSync:   &datav1alpha1.SyncResult{Result: datav1alpha1.SyncSucceeded, StartTime: &now, CompletionTime: &now, FilesCopied: 43, BytesCopied: 22 << 20},
	}
	// The controller patches the spec meanwhile: read again on a conflict, as an agent's patch would not care.
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(r), r); err != nil {
			return err
		}
		r.Status = st
		return k8sClient.Status().Update(ctx, r)
	})).To(Succeed())
}
