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
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/controllers/testenv"
)

const lakeWorkload = `name: lake
tables:
  events: {path: events, hive: true}
queries:
  - {name: daily-active, sql: "SELECT date, count(DISTINCT user_id) FROM events GROUP BY date"}
  - {name: by-day, sql: "SELECT date, count(*) FROM events GROUP BY date"}
`

// workloadRun is a one-Job run of the workload in ConfigMap name.
func workloadRun(ns, name, configMap string, mutate ...func(*datav1alpha1.BenchRun)) *datav1alpha1.BenchRun {
	return newBenchRun(ns, name, "lake", append([]func(*datav1alpha1.BenchRun){oneConfigOneInput, func(r *datav1alpha1.BenchRun) {
		r.Spec.Queries = nil
		r.Spec.Workload = &datav1alpha1.BenchWorkload{ConfigMapRef: &datav1alpha1.WorkloadConfigMapRef{Name: configMap}}
	}}, mutate...)...)
}

func workloadConfigMap(ns, name, text string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"workload.yaml": text}}
}

var _ = Describe("A BenchRun of a user's workload", func() {
	var ns string
	BeforeEach(func() {
		ns = testenv.NewNamespace()
		testenv.ReadyDataset(ns, "lake")
	})

	It("waits for its ConfigMap, copies the workload when it starts, and its Jobs read the copy", func() {
		run := workloadRun(ns, "mine", "my-queries")
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonWaitingForWorkload))
			g.Expect(c.Message).To(ContainSubstring(`the workload's ConfigMap "my-queries" does not exist`))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, run)).To(BeEmpty())

		cm := workloadConfigMap(ns, "my-queries", lakeWorkload)
		Expect(k8sClient.Create(ctx, cm)).To(Succeed())
		var job batchv1.Job
		Eventually(func(g Gomega) {
			found := benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(1))
			job = found[0]
		}).WithTimeout(30 * time.Second).Should(Succeed())
		var cur *datav1alpha1.BenchRun
		Eventually(func(g Gomega) {
			cur = getRun(run)
			g.Expect(cur.Status.Workload).To(Equal("lake"))
			g.Expect(cur.Status.Queries).To(Equal(int32(2)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		c := job.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--workload", "/workload/workload.json"))
		Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "workload", MountPath: "/workload", ReadOnly: true}))

		// The copy is the run's: owned by it, and what the user changes later does not reach it.
		var copied corev1.ConfigMap
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mine-workload"}, &copied)).To(Succeed())
		Expect(metav1.IsControlledBy(&copied, cur)).To(BeTrue())
		var w workload.Workload
		Expect(json.Unmarshal([]byte(copied.Data["workload.json"]), &w)).To(Succeed())
		Expect(w.QueryNames()).To(Equal([]string{"daily-active", "by-day"}))
		testenv.Update(cm, func(cm *corev1.ConfigMap) { cm.Data["workload.yaml"] = "queries: [{name: changed, sql: x}]" })
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&copied), &copied)).To(Succeed())
			g.Expect(copied.Data["workload.json"]).To(ContainSubstring("daily-active"))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		// The Job found a table missing in the data: the run fails, saying which.
		missing := &wire.BenchResult{Engine: "duckdb", Error: "the data has no Parquet files for table events (events)", ErrorReason: wire.ReasonMissingTables}
		enc, err := wire.EncodeBenchSummary(missing, wire.TerminationMessageLimit)
		Expect(err).NotTo(HaveOccurred())
		finishBenchJob(&job, string(enc), false)
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(wire.ReasonMissingTables))
			g.Expect(c.Message).To(ContainSubstring("no Parquet files for table events (events)"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses, before any Job, a workload that cannot run", func() {
		Expect(k8sClient.Create(ctx, workloadConfigMap(ns, "broken", "tables: {t: {path: t}}\nqueries: [{name: a, sql: x}, {name: a, sql: y}]"))).To(Succeed())
		Expect(k8sClient.Create(ctx, workloadConfigMap(ns, "good", lakeWorkload))).To(Succeed())
		for _, tc := range []struct {
			run  *datav1alpha1.BenchRun
			want string
		}{
			{workloadRun(ns, "dup", "broken"), `two queries are named "a"`},
			{workloadRun(ns, "unknown", "good", func(r *datav1alpha1.BenchRun) { r.Spec.Queries = []string{"by-day", "by-hour"} }), "has no query by-hour"},
			{newBenchRun(ns, "tpch-names", "lake", oneConfigOneInput, func(r *datav1alpha1.BenchRun) { r.Spec.Queries = []string{"q23"} }), "has no query q23"},
		} {
			Expect(k8sClient.Create(ctx, tc.run)).To(Succeed())
			Eventually(func(g Gomega) {
				c := runCondition(g, tc.run)
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(wire.ReasonInvalidWorkload))
				g.Expect(c.Message).To(ContainSubstring(tc.want))
			}).WithTimeout(10*time.Second).Should(Succeed(), tc.run.Name)
			Expect(benchJobsOf(Default, tc.run)).To(BeEmpty())
		}
	})
})
