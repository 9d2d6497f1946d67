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

package manager

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// expectCondition asserts that conds holds a condition of type t with the given status and reason,
// observed at generation gen.
func expectCondition(g Gomega, conds []metav1.Condition, t string, status metav1.ConditionStatus, reason string, gen int64) {
	c := meta.FindStatusCondition(conds, t)
	g.Expect(c).NotTo(BeNil(), "no %s condition in %v", t, conds)
	g.Expect(c.Status).To(Equal(status), "%s status", t)
	g.Expect(c.Reason).To(Equal(reason), "%s reason", t)
	g.Expect(c.ObservedGeneration).To(Equal(gen), "%s observedGeneration", t)
}

var _ = Describe("The samples", func() {
	It("apply twice with server-side apply as a no-op: no new generation, no status churn, no new Job", func() {
		ns := testenv.NewNamespace()
		apply := func() *unstructured.Unstructured {
			GinkgoHelper()
			f := testenv.LoadFixture(testenv.Path("config", "samples", "data_v1alpha1_dataset.yaml"))
			u := f.Objects[0]
			u.SetNamespace(ns)
			Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("gitops"), client.ForceOwnership)).To(Succeed())
			return u
		}
		first := apply()
		key := client.ObjectKeyFromObject(first)
		var ds datav1alpha1.Dataset
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, &ds)).To(Succeed())
			g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Generation))
			g.Expect(testenv.SyncJobsOf(g, &ds)).To(HaveLen(1))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { // settled: nothing writes any more
			var cur datav1alpha1.Dataset
			g.Expect(k8sClient.Get(ctx, key, &cur)).To(Succeed())
			g.Expect(cur.ResourceVersion).To(Equal(ds.ResourceVersion))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		apply()
		Consistently(func(g Gomega) {
			var cur datav1alpha1.Dataset
			g.Expect(k8sClient.Get(ctx, key, &cur)).To(Succeed())
			g.Expect(cur.Generation).To(Equal(ds.Generation))
			g.Expect(cur.ResourceVersion).To(Equal(ds.ResourceVersion), "the second apply changed the object")
			g.Expect(testenv.SyncJobsOf(g, &cur)).To(HaveLen(1))
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})

	It("apply, and the manager reports their status for every generation", func() {
		ns := testenv.NewNamespace()
		samples := map[string]testenv.Fixture{}
		for _, name := range []string{"data_v1alpha1_dataset", "data_v1alpha1_benchrun"} {
			f := testenv.LoadFixture(testenv.Path("config", "samples", name+".yaml"))
			Expect(f.Apply(ns)).To(Succeed(), "sample %s", name)
			samples[name] = f
		}
		dsKey := client.ObjectKey{Namespace: ns, Name: samples["data_v1alpha1_dataset"].Objects[0].GetName()}
		runKey := client.ObjectKey{Namespace: ns, Name: samples["data_v1alpha1_benchrun"].Objects[0].GetName()}

		var ds datav1alpha1.Dataset
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, dsKey, &ds)).To(Succeed())
			g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Generation))
			// The first sync has started: not Ready yet, and Reconciling for kstatus.
			expectCondition(g, ds.Status.Conditions, datav1alpha1.ConditionReady, metav1.ConditionFalse, datav1alpha1.ReasonSyncInProgress, ds.Generation)
			expectCondition(g, ds.Status.Conditions, datav1alpha1.ConditionReconciling, metav1.ConditionTrue, datav1alpha1.ReasonSyncInProgress, ds.Generation)
		}).WithTimeout(20 * time.Second).Should(Succeed())

		var run datav1alpha1.BenchRun
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, runKey, &run)).To(Succeed())
			g.Expect(run.Status.ObservedGeneration).To(Equal(run.Generation))
			// The sample Dataset is not Ready (no kubelet runs its sync here): the run waits for it.
			expectCondition(g, run.Status.Conditions, datav1alpha1.ConditionSucceeded, metav1.ConditionUnknown, datav1alpha1.ReasonWaitingForDataset, run.Generation)
			expectCondition(g, run.Status.Conditions, datav1alpha1.ConditionReconciling, metav1.ConditionTrue, datav1alpha1.ReasonWaitingForDataset, run.Generation)
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// A spec change is a new generation; status must follow it, keeping the original transition time.
		firstTransition := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady).LastTransitionTime
		ds.Spec.Refresh.Manual = "now"
		Expect(k8sClient.Update(ctx, &ds)).To(Succeed())
		Expect(ds.Generation).To(BeNumerically(">", 1))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, dsKey, &ds)).To(Succeed())
			g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Generation))
			expectCondition(g, ds.Status.Conditions, datav1alpha1.ConditionReady, metav1.ConditionFalse, datav1alpha1.ReasonSyncInProgress, ds.Generation)
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady).LastTransitionTime).To(Equal(firstTransition))
	})
})
