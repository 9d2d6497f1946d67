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
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
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

	It("seeds one node, fans the generation out to the others, and is Ready at minReady copies", func() {
		a, b, c := addNode("a"), addNode("b"), addNode("c")
		ds := newReplicated("lake", 2)

		var seed datav1alpha1.DatasetReplica
		Eventually(func(g Gomega) {
			reps := replicasOf(g, ds)
			g.Expect(reps).To(HaveLen(3))
			seed = reps["a"]
			g.Expect(seed.Spec.Role).To(Equal(datav1alpha1.RoleSeed))
			g.Expect(seed.Spec.SyncToken).To(HavePrefix(TriggerInitial + "."))
			g.Expect(metav1.IsControlledBy(&seed, testenv.GetDataset(ds))).To(BeTrue())
			g.Expect(seed.Labels).To(HaveKeyWithValue(datav1alpha1.LabelReplicaNode, a.Name))
			cur := testenv.GetDataset(ds)
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionSyncing)).To(BeTrue())
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionReady).Reason).To(Equal(datav1alpha1.ReasonReplicasNotReady))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&seed), &seed)).To(Succeed())
		agentReports(&seed, 1, seed.Spec.SyncToken)

		Eventually(func(g Gomega) {
			reps := replicasOf(g, ds)
			for _, n := range []string{"b", "c"} {
				g.Expect(reps[n].Spec.Role).To(Equal(datav1alpha1.RoleFollower))
				g.Expect(reps[n].Spec.Generation).To(Equal(int64(1)))
				g.Expect(reps[n].Spec.Peer).To(Equal(seed.Status.Endpoint))
			}
			g.Expect(reps["a"].Spec.MinGeneration).To(Equal(int64(1)), "the seed numbers its next generation above what any copy holds")
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.Replicas.ReadyOfDesired).To(Equal("1/3"))
			g.Expect(cur.Status.Manifest.Generation).To(Equal(int64(1)))
			g.Expect(cur.Status.LastSync.Trigger).To(Equal(TriggerInitial))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeFalse())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		reps := map[string]datav1alpha1.DatasetReplica{}
		Eventually(func(g Gomega) { reps = replicasOf(g, ds) }).Should(Succeed())
		for _, n := range []string{"b", "c"} {
			r := reps[n]
			agentReports(&r, 1, "")
		}
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.Replicas.ReadyOfDesired).To(Equal("3/3"))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("a stopped node's copy stops counting; the Dataset stays Ready at minReady 2")
		setNodeReady(b, false)
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.Replicas.ReadyOfDesired).To(Equal("2/3"))
			g.Expect(cur.Status.Replicas.Nodes).To(ContainElement(datav1alpha1.ReplicaNodeStatus{Node: b.Name, Generation: 1, Reason: datav1alpha1.ReasonNodeNotReady}))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("a node taken out of the selector loses its copy, with an event")
		Expect(k8sClient.Patch(ctx, c, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, label))))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(replicasOf(g, ds)).NotTo(HaveKey("c"))
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.Replicas.ReadyOfDesired).To(Equal("1/2"))
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionReady).Reason).To(Equal(datav1alpha1.ReasonReplicasNotReady))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(g, ns, datav1alpha1.EventReplicaRemoved)).To(ContainElement(ContainSubstring(c.Name)))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("a node NotReady past the grace period loses its copy")
		fakeClock.Step(nodeLossGrace + time.Minute)
		testenv.Touch(ds)
		Eventually(func(g Gomega) {
			g.Expect(replicasOf(g, ds)).NotTo(HaveKey("b"))
			cur := testenv.GetDataset(ds)
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionReady).Reason).To(Equal(datav1alpha1.ReasonNotEnoughNodes))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("a manual token asks the seed for a listing sync")
		// A merge patch, not an update: the controller writes status meanwhile.
		Expect(k8sClient.Patch(ctx, testenv.GetDataset(ds), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"refresh":{"manual":"now"}}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(replicasOf(g, ds)["a"].Spec.SyncToken).To(HavePrefix(TriggerManual + "."))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("says at once when minReady is above the number of matching nodes", func() {
		addNode("a")
		addNode("b")
		ds := newReplicated("wide", 3)
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			ready := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(datav1alpha1.ReasonNotEnoughNodes))
			g.Expect(ready.Message).To(ContainSubstring("minReady is 3 but 2 node(s) match"))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses a volume on a Dataset with copies, and adding copies later", func() {
		ds := testenv.NewDataset(ns, "both", func(ds *datav1alpha1.Dataset) {
			ds.Spec.Replicas = &datav1alpha1.ReplicaPolicy{MaxReplicas: ptr.To[int32](2)}
		})
		err := k8sClient.Create(ctx, ds)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("spec.volume applies to a Dataset on one claim"))
	})
})

// eventNotes lists the notes of the events with reason in ns.
func eventNotes(g Gomega, ns, reason string) []string {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

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
