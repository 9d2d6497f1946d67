//go:build e2e

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

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// benchBothIsolations runs one BenchRun with DuckDB in both isolations over the Dataset tpch of ns
// (SF 0.01, on the volume): a fresh process per query, and one session per iteration running every
// query in turn. Both give the same answers; in status each query's time, measured inside the
// engine, is below its whole-process wall time, and each result reports its start-up.
func benchBothIsolations(ns string) {
	var br datav1alpha1.BenchRun
	fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: isolations, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  engines: [{name: duckdb}, {name: duckdb, label: duckdb-session, isolation: session}]
  configs: [{name: 1cpu-1gi, cpu: "1", memory: 1Gi}]
  iterations: 1
  warmups: 0
`, ns, e2eQueries)
	Expect(c.Create(ctx, &br)).To(Succeed())
	Expect(br.Spec.Engines[0].Isolation).To(BeEmpty(), "unset: the engine's default (process for duckdb; the results say so below)")
	waitBenchRun(&br, 10*time.Minute)
	Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
		"BenchRun conditions: %s", conditionsString(br.Status.Conditions))
	Expect(br.Status.Results).To(HaveLen(2))
	digests := map[string]string{}
	for _, r := range br.Status.Results {
		want := map[string]datav1alpha1.BenchIsolation{"duckdb": datav1alpha1.IsolationProcess, "duckdb-session": datav1alpha1.IsolationSession}[r.Engine]
		Expect(r.Isolation).To(Equal(want), r.Engine)
		Expect(r.Timing).To(Equal(datav1alpha1.TimingEngine), r.Engine+": DuckDB times its own queries")
		Expect(r.StartupMillis).To(BeNumerically(">", 0), r.Engine+": start-up")
		// In a session a query's wall time runs from the previous query's delimiter to its own, as the
		// runner reads them from the pipe; the engine starts the next query before the runner has read
		// the delimiter, so at SF 0.01 (queries of about 10 ms) the wall time can come out a millisecond
		// or two below the query time (13 against 12 once). Within 2 ms plus 10 % of it, then.
		Expect(r.GeometricMeanMillis).To(BeNumerically("<=", r.WallGeometricMeanMillis+2+r.WallGeometricMeanMillis/10),
			r.Engine+": query time within the whole process's")
		if r.Isolation == datav1alpha1.IsolationProcess {
			Expect(r.GeometricMeanMillis).To(BeNumerically("<", r.WallGeometricMeanMillis), r.Engine+": query time below the whole process's")
			// Each process's wall time holds its start-up too (per query in the runner's JSON; per
			// result in status).
			Expect(r.WallGeometricMeanMillis-r.GeometricMeanMillis).To(BeNumerically(">=", r.StartupMillis/2), r.Engine+": the wall time holds the start-up")
		}
		Expect(r.Queries).To(HaveLen(e2eQueryCount), r.Engine)
		for _, q := range r.Queries {
			where := fmt.Sprintf("%s %s", r.Engine, q.Name)
			Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), where)
			if d, ok := digests[q.Name]; ok {
				Expect(q.Digest).To(Equal(d), where+": the same answer in both isolations")
			} else {
				digests[q.Name] = q.Digest
			}
		}
	}

	By("kubectl pqcache results: each result's isolation and start-up")
	out, err := kubectlPqcache("results", "isolations", "-n", ns)
	Expect(err).NotTo(HaveOccurred(), out)
	Expect(out).To(MatchRegexp(`(?m)^ *isolation +(process +session|session +process) *$`))
	Expect(out).To(MatchRegexp(`(?m)^ *start-up \(median\) +\S*\d+m?s +\S*\d+m?s *$`))
}
