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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/testenv"
)

var _ = Describe("BenchRun during refresh", func() {
	It("passes duringRefresh to its Jobs, asks the Dataset for refreshes while they run, and records the generations published", func() {
		ns := testenv.NewNamespace()
		ds := testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "refresh", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}}
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.DuringRefresh = true
			r.Spec.Refresh = &datav1alpha1.BenchRefresh{Percent: ptr.To[int32](10), Every: "1s"}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var job *batchv1.Job
		Eventually(func(g Gomega) {
			found := benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(1))
			job = &found[0]
		}).WithTimeout(10 * time.Second).Should(Succeed())
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--during-refresh", "--refresh-source", "s3://analytics/tpch/", "--refresh-percent", "10", "--refresh-every", "1s"))
		var env []string
		for _, e := range c.Env {
			env = append(env, e.Name)
		}
		Expect(env).To(ContainElement(wire.EnvAccessKeyID), "the rewrites need the Dataset's credentials, whatever the input")

		// While the Job runs, the run asks for a refresh, and the Dataset starts a sync for it.
		sync := testenv.WaitForJobs(ds, 2)
		Expect(sync.Annotations).To(HaveKeyWithValue(dataset.AnnotationTrigger, dataset.TriggerRequested))
		Expect(testenv.GetDataset(ds).Annotations).To(HaveKey(dataset.AnnotationRefreshRequested))
		report := testenv.SuccessReport(2, 200)
		report.Manifest.Generation = 2
		testenv.FinishJob(sync, testenv.Finish{Report: report})
		Eventually(func(g Gomega) {
			st := getRun(run).Status.Refresh
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.FirstGeneration).To(Equal(int64(1)))
			g.Expect(st.LastGeneration).To(Equal(int64(2)))
			g.Expect(st.GenerationsPublished).To(Equal(int64(1)))
			g.Expect(st.Requests).To(BeNumerically(">=", 1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// A period later, served, the run asks again: a third sync.
		testenv.WaitForJobs(ds, 3)

		res := refreshSummary(job.Annotations[annotationConfig] + " / volume")
		finishBenchJob(job, res, false)
		Eventually(func(g Gomega) {
			cur := getRun(run)
			cond := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
			g.Expect(cur.Status.Results).To(HaveLen(1))
			g.Expect(cur.Status.Results[0].Refresh).NotTo(BeNil())
			g.Expect(cur.Status.Results[0].Refresh.Rewrites).To(Equal(int32(7)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses a Dataset whose refreshes are suspended", func() {
		ns := testenv.NewNamespace()
		testenv.ReadyDataset(ns, "data")
		ds := testenv.GetDataset(&datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}})
		ds.Spec.Refresh.Suspend = true
		Expect(k8sClient.Update(ctx, ds)).To(Succeed())
		// The manager's cache must hold the suspension before the run is created: the Dataset
		// controller observing the new generation shows that the shared informer has it.
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		run := newBenchRun(ns, "refresh", "data", func(r *datav1alpha1.BenchRun) { r.Spec.DuringRefresh = true })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(datav1alpha1.ReasonUnsupported))
			g.Expect(cond.Message).To(ContainSubstring("suspended"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

// A table's files change only by commits: a run that rewrites the bucket's files would make a
// state no writer committed.
var _ = Describe("A BenchRun during refreshes of a table Dataset", func() {
	It("is refused, saying to commit to the table instead", func() {
		ns := testenv.NewNamespace()
		testenv.ReadyDataset(ns, "orders")
		ds := testenv.GetDataset(&datav1alpha1.Dataset{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders"}})
		ds.Spec.Source.S3.Prefix = "tables/orders/"
		ds.Spec.Include, ds.Spec.Exclude, ds.Spec.Fresh = nil, nil, nil
		ds.Spec.Source.Table = &datav1alpha1.TableSource{Format: datav1alpha1.TableDelta}
		Expect(k8sClient.Update(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		run := newBenchRun(ns, "refresh", "orders", func(r *datav1alpha1.BenchRun) { r.Spec.DuringRefresh = true })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(datav1alpha1.ReasonUnsupported))
			g.Expect(cond.Message).To(ContainSubstring("commit to the table while the run runs instead"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

// refreshSummary is a runner's summary of a run during refreshes that rewrote 7 files.
func refreshSummary(label string) string {
	GinkgoHelper()
	res, err := wire.DecodeBenchSummary(runnerSummary(label, "same answer"))
	Expect(err).NotTo(HaveOccurred())
	res.Refresh = &wire.RefreshResult{Percent: 10, EveryMillis: 1000, Files: 70, Rounds: 1, Rewrites: 7}
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}
