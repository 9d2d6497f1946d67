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
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/testenv"
)

var _ = Describe("BenchRun cache costs", func() {
	It("gives the results that read a synced Dataset's cache its storage and refresh costs, and the break-even in days at runsPerDay", func() {
		ns := testenv.NewNamespace()
		// 50 GB on a gp2 claim, refreshed daily; its one sync copied the 50 GB in 1 s with 8 GETs and 1 LIST.
		ds := testenv.NewDataset(ns, "data", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume.StorageClassName, d.Spec.Volume.Capacity = ptr.To("gp2"), ptr.To(resource.MustParse("100G"))
			d.Spec.Refresh.Schedule = "0 3 * * *"
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(8, 50_000_000_000)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		run := newBenchRun(ns, "cost", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineCommand, Image: "example.test/polars:1.0", Command: []string{"run", "{query}", "{data}"}}}
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}, {Type: datav1alpha1.InputVolume}}
			r.Spec.RunsPerDay = ptr.To[int32](10)
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(getRun(run).Spec.Pricing).To(Equal(&datav1alpha1.Pricing{}), "the API server fills no price in: the prices file does")
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		for i := range found {
			finishBenchJob(&found[i], runnerSummary(found[i].Name, "answer"), false)
		}

		// The suite's manager has no prices file: the built-in prices, gp2 at $0.10 a GB-month. A day of
		// refreshes is one sync: 50 GB × $0.09, 1 s of the worker's 250m and 256Mi requests, and
		// (8 × $0.0004 + $0.005) / 1000.
		want := &datav1alpha1.CacheCost{StorageClass: "gp2", Copies: 1, StorageBytes: 50_000_000_000, StorageMicrosPerMonth: ptr.To[int64](5_000_000),
			SyncIntervalSeconds: 86_400, RefreshBytesPerDay: 50_000_000_000, TransferMicrosPerDay: ptr.To[int64](4_500_000),
			ComputeMicrosPerDay: ptr.To[int64](3), RequestMicrosPerDay: ptr.To[int64](8), RefreshMicrosPerDay: ptr.To[int64](4_500_011)}
		Eventually(func(g Gomega) {
			cur := getRun(run)
			g.Expect(cur.Status.CompletionTime).NotTo(BeNil())
			g.Expect(cur.Status.Pricing).NotTo(BeNil())
			g.Expect(cur.Status.Pricing.Currency).To(Equal("USD"))
			g.Expect(cur.Status.Pricing.StorageGBMonth).To(Equal("0.10"))
			g.Expect(cur.Status.Results).To(HaveLen(2))
			for _, r := range cur.Status.Results {
				switch r.Input {
				case "s3":
					g.Expect(r.Cache).To(BeNil(), "an s3 run keeps no cache")
				case "volume":
					g.Expect(r.Cache).To(Equal(want))
					// A run on s3 reads the 50 GB ($4.50) that the volume run does not; 10 runs a day save
					// $45 against $4.66 of storage and refreshes: filling ($4.50) pays off within a day.
					g.Expect(r.BreakEvenDays).To(Equal(ptr.To[int64](1)))
					g.Expect(r.BreakEvenRuns).To(Equal(ptr.To[int64](2)))
				}
			}
			g.Expect(cur.Status.BreakEvenDays).To(Equal(ptr.To[int64](1)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
