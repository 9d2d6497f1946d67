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
	"github.com/pqcache/pqcache/controllers/testenv"
)

// Issue 38, item 2: a Dataset that reads its bucket as a ServiceAccount (a cloud role) lends it to
// its syncs only. A BenchRun that reads the bucket gets it only by naming it (which the chart's
// admission policy allows only a user who may create pods), and no pod mounts an API token for it.
var _ = Describe("BenchRun accounts", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("refuses a run that would borrow its Dataset's ServiceAccount, and runs one that names it, without a token", func() {
		ds := testenv.NewDataset(ns, "irsa", func(d *datav1alpha1.Dataset) {
			d.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "bucket-reader"}
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		sync := testenv.WaitForJobs(ds, 1)
		Expect(sync.Spec.Template.Spec.ServiceAccountName).To(Equal("bucket-reader"), "the sync reads the bucket as the Dataset's account")
		Expect(sync.Spec.Template.Spec.AutomountServiceAccountToken).To(Equal(ptr.To(false)), "no progress as the Dataset's account: no token")
		testenv.FinishJob(sync, testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		borrow := newBenchRun(ns, "borrow", "irsa", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}}
		})
		Expect(k8sClient.Create(ctx, borrow)).To(Succeed())
		Eventually(func(g Gomega) {
			c := runCondition(g, borrow)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnsupported))
			g.Expect(c.Message).To(ContainSubstring("set spec.serviceAccountName: bucket-reader on the BenchRun"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, borrow)).To(BeEmpty())

		own := newBenchRun(ns, "own", "irsa", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}}
			r.Spec.ServiceAccountName = "bucket-reader"
		})
		Expect(k8sClient.Create(ctx, own)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, own); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		pod := found[0].Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal("bucket-reader"))
		Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		// Finish it: an unfinished Job would hold one of the suite's bench Job slots for good.
		finishBenchJob(&found[0], runnerSummary("small / s3", "answer"), false)
		Eventually(func(g Gomega) {
			g.Expect(getRun(own).Status.CompletionTime).NotTo(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
