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

package controllers

import (
	"context"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/workload"
)

// streamsSummary runs the real runner with two streams of a shell engine and returns its summary.
func streamsSummary(label string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	script := filepath.Join(dir, "engine.sh")
	Expect(os.WriteFile(script, []byte("#!/bin/sh\nsleep 0.02\necho \"row-$1|same\"\n"), 0o755)).To(Succeed())
	res, err := bench.Run(context.Background(), bench.Spec{
		Label: label, Engine: bench.CommandEngine{Args: []string{script, "{query}", "{data}"}}, Data: dir,
		Workload:   &workload.Resolved{Workload: "tpch", Queries: []workload.Query{{Name: "q1", SQL: "x"}, {Name: "q6", SQL: "x"}}},
		Iterations: 2, Streams: 2, QueryTimeout: time.Minute,
	})
	Expect(err).NotTo(HaveOccurred())
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}

var _ = Describe("A BenchRun with streams", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("refuses streams out of 1..16 plainly, and defaults to one", func() {
		for _, n := range []int32{17, -1} {
			err := k8sClient.Create(ctx, newBenchRun(ns, "too-many", "data", func(r *datav1alpha1.BenchRun) { r.Spec.Streams = n }))
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("streams must be 1 to 16 concurrent query streams"))
		}
		run := newBenchRun(ns, "one", "data")
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(getRun(run).Spec.Streams).To(Equal(int32(1)))
	})

	It("passes streams to the Job's runner and records the streams' figures and percentiles", func() {
		readyDataset(ns, "data")
		run := newBenchRun(ns, "streams", "data", oneConfigOneInput, func(r *datav1alpha1.BenchRun) { r.Spec.Streams = 2 })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) {
			jobs = benchJobsOf(g, run)
			g.Expect(jobs).To(HaveLen(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(jobs[0].Spec.Template.Spec.Containers[0].Args).To(ContainElements("--streams", "2"))
		finishBenchJob(&jobs[0], streamsSummary("small / volume"), false)
		Eventually(func(g Gomega) {
			rs := getRun(run).Status.Results
			g.Expect(rs).To(HaveLen(1))
			g.Expect(rs[0].Streams).To(Equal(int32(2)))
			g.Expect(rs[0].StreamMillis).To(HaveLen(2))
			g.Expect(rs[0].QueriesPerHour).To(BeNumerically(">", 0))
			g.Expect(rs[0].Queries).To(HaveLen(2))
			for _, q := range rs[0].Queries {
				g.Expect(q.P50Millis).To(BeNumerically(">", 0), q.Name)
				g.Expect(q.P99Millis).To(BeNumerically(">=", q.P50Millis), q.Name)
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
