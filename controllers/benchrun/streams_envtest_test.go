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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/controllers/testenv"
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
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("refuses streams out of 1..16 plainly, and defaults to one", func() {
		for _, n := range []int32{17, -1} {
			err := k8sClient.Create(ctx, newBenchRun(ns, "too-many", "data", func(r *datav1alpha1.BenchRun) { r.Spec.Streams = n }))
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring("streams must be 1 to 16 concurrent query streams"))
		}
		run := newBenchRun(ns, "one", "data")
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(getRun(run).Spec.Streams).To(Equal(int32(1)))
		// 4 engines × 3 configs × 3 inputs = 36 Jobs: more than a run with streams may have.
		wide := func(r *datav1alpha1.BenchRun) {
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: "duckdb"}, {Name: "polars"}, {Name: "duckdb", Label: "duckdb-2"}, {Name: "polars", Label: "polars-2"}}
			r.Spec.Configs = append(r.Spec.Configs, datav1alpha1.ResourceConfig{Name: "medium", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")})
			r.Spec.Inputs = append(r.Spec.Inputs, datav1alpha1.BenchInput{Type: datav1alpha1.InputS3})
		}
		err := k8sClient.Create(ctx, newBenchRun(ns, "wide-streams", "data", wide, func(r *datav1alpha1.BenchRun) { r.Spec.Streams = 2 }))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("a run with streams has at most 32 Jobs"))
		Expect(k8sClient.Create(ctx, newBenchRun(ns, "wide", "data", wide))).To(Succeed(), "one stream: up to 64 Jobs, as before")
	})

	It("keeps the largest status of a run with streams under the API server's limit", func() {
		var st datav1alpha1.BenchRunStatus
		now := metav1.Now()
		long := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
		for j := range 32 {
			r := datav1alpha1.BenchResult{Engine: long("engine", 16), Config: long(fmt.Sprintf("config-%02d", j), 32), Input: "claim/" + long("mount", 253),
				JobName: long(fmt.Sprintf("job-%02d", j), 63), StartTime: &now, CompletionTime: &now, WallMillis: 123456789, ReadBytesPerSecond: 1234567890,
				StagedBytes: 12345678901, StageMillis: 1234567, NetworkReadBytes: 123456789012, GeometricMeanMillis: 123456, CostMicros: ptr.To[int64](123456789),
				Message: long("the longest message a result keeps: ", 1024), Streams: wire.MaxStreams, QueriesPerHour: 123456789}
			for range wire.MaxStreams {
				r.StreamMillis = append(r.StreamMillis, 123456789)
			}
			for q := 1; q <= 32; q++ {
				name := long(fmt.Sprintf("query-%02d-", q), 63)
				r.Queries = append(r.Queries, datav1alpha1.QueryResult{Name: name, Status: datav1alpha1.QueryOOMKilled, QueryMeasurements: wire.QueryMeasurements{
					MedianMillis: 123456789, MinMillis: 123456789, MaxMillis: 123456789, PeakMemoryBytes: 123456789012, PeakAnonBytes: 123456789012,
					PeakFileBytes: 123456789012, NetworkReadBytes: 123456789012, Rows: 123456789, Digest: "0123456789abcdef-123456789",
					P50Millis: 123456789, P95Millis: 123456789, P99Millis: 123456789}})
				r.FailedQueries = append(r.FailedQueries, name)
			}
			st.Results = append(st.Results, r)
		}
		data, err := json.Marshal(st)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("largest BenchRun status with streams (bytes)", len(data))
		GinkgoWriter.Printf("largest BenchRun status with streams: %d bytes\n", len(data))
		Expect(len(data)).To(BeNumerically("<", 1<<20), "the limit of a run without streams")
		run := newBenchRun(ns, "largest-streams", "whatever", func(r *datav1alpha1.BenchRun) { r.Spec.Streams = wire.MaxStreams })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var stored datav1alpha1.BenchRun
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
				return err
			}
			run.Status = st
			if err := k8sClient.Status().Update(ctx, run); err != nil {
				return err
			}
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &stored)
		})).To(Succeed())
		Expect(stored.Status.Results).To(HaveLen(32))
		Expect(stored.Status.Results[31].Queries[31].P99Millis).To(Equal(int64(123456789)))
	})

	It("passes streams to the Job's runner and records the streams' figures and percentiles", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "streams", "data", oneConfigOneInput, func(r *datav1alpha1.BenchRun) { r.Spec.Streams = 2 })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(found[0].Spec.Template.Spec.Containers[0].Args).To(ContainElements("--streams", "2"))
		finishBenchJob(&found[0], streamsSummary("small / volume"), false)
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
