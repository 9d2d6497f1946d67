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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// The data: TPC-H SF 0.01 in the partitioned layout (<table>/batch=N/part.parquet), generated in the
// cluster by the pqcache image's DuckDB and uploaded to the in-cluster S3 server.
const (
	bucket = "lake"
	prefix = "tpch/sf0.01/"
	// changedKey is rewritten with other data and deletedKey removed between the two syncs.
	changedKey = "orders/batch=1/part.parquet"
	deletedKey = "orders/batch=2/part.parquet"
)

// fromYAML decodes a manifest as a user would write it.
func fromYAML(obj client.Object, manifest string, args ...any) {
	Expect(yaml.UnmarshalStrict([]byte(fmt.Sprintf(manifest, args...)), obj)).To(Succeed())
}

var _ = Describe("A Dataset and BenchRuns on a real cluster", Ordered, func() {
	var (
		ns       string
		endpoint string
		loaded   putReport
		ds       datav1alpha1.Dataset
	)

	BeforeAll(func() {
		ns = newNamespace("pqcache-e2e-")
		// The other specs' namespaces get the workers' account from the operator.
		handMadeWorkerAccount(ns)
		By("starting versitygw in " + ns)
		endpoint = startS3(ns)
		By("generating TPC-H SF 0.01 and uploading it to s3://" + bucket + "/" + prefix + " at " + endpoint)
		loaded = parsePutReport(runJob(ns, "load-tpch",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "4", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+prefix,
				"--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"),
		))
		Expect(loaded.Files).To(BeNumerically(">", 8), "one file per small table and 4 per large one")
	})

	It("syncs the prefix into a volume and reports what it holds", func() {
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch, namespace: %s}
spec:
  source:
    s3:
      bucket: %s
      prefix: %s
      endpoint: %s
      forcePathStyle: true
      credentials: {secretRef: {name: %s}}
  include: ["**/*.parquet"]
  volume: {capacity: 1Gi}
  fresh: ["lineitem/"]
  sync: {parallelism: 4}
`, ns, bucket, prefix, endpoint, s3Secret)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitReady(&ds, 3*time.Minute)

		Expect(ds.Status.Manifest).NotTo(BeNil())
		Expect(ds.Status.Manifest.Files).To(Equal(loaded.Files), "files in the manifest vs files uploaded")
		Expect(ds.Status.Manifest.Bytes).To(Equal(loaded.Bytes), "bytes in the manifest vs bytes uploaded")
		last := ds.Status.LastSync
		Expect(last).NotTo(BeNil())
		Expect(last.Result).To(Equal(datav1alpha1.SyncOutcome("Succeeded")))
		Expect(last.Trigger).To(Equal("Initial"))
		Expect(last.FilesCopied).To(Equal(loaded.Files))
		Expect(last.BytesCopied).To(Equal(loaded.Bytes))
		Expect(last.FilesDeleted).To(BeZero())
		Expect(last.ListRequests).To(Equal(int64(1)))
		Expect(last.GetRequests).To(BeNumerically(">=", loaded.Files))
		Expect(ds.Status.ClaimName).To(Equal("tpch-cache"))

		By("the claim is bound, owned by the Dataset")
		var pvc corev1.PersistentVolumeClaim
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ds.Status.ClaimName}, &pvc)).To(Succeed())
		Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		Expect(metav1.IsControlledBy(&pvc, &ds)).To(BeTrue())

		By("the workers' account made by hand is used as it is: the operator takes no ownership of it")
		var sa corev1.ServiceAccount
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: workerServiceAccount}, &sa)).To(Succeed())
		Expect(sa.OwnerReferences).To(BeEmpty())
	})

	It("shows the Dataset with kubectl pqcache status, found by kubectl on PATH", func() {
		out, err := kubectlPqcache("status", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(MatchRegexp(`(?m)^tpch +True +%d +\S+ +\d+[smh] ago `, loaded.Files), "a row for the Dataset: ready, its files, its size, when it synced")
		Expect(out).To(ContainSubstring("1 (current 1)"), "its generations")
	})

	It("copies only what changed after a manual refresh", func() {
		By("rewriting " + changedKey + " with other data and deleting " + deletedKey)
		// The new batch=1 (the second quarter of the orders) is the first half of that quarter (the
		// third eighth): other data, and still no order key twice. Duplicate keys would make TPC-H's
		// queries ambiguous: the engines' plans for q4, EXISTS in SQL and a join plus unique in
		// Polars, would rightly differ.
		runJob(ns, "change-tpch",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "8", "--out", "/work/tpch"),
			pqcacheContainer("rewrite", "s3", "put", "/work/tpch/orders/batch=2/part.parquet", "s3://"+bucket+"/"+prefix+changedKey,
				"--endpoint", endpoint, "--path-style"),
			pqcacheContainer("delete", "s3", "rm", "s3://"+bucket+"/"+prefix+deletedKey, "--endpoint", endpoint, "--path-style"),
		)

		By("setting spec.refresh.manual")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
		patch := client.MergeFrom(ds.DeepCopy())
		ds.Spec.Refresh.Manual = "e2e-1"
		Expect(c.Patch(ctx, &ds, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.LastManualSync).To(Equal("e2e-1"))
			g.Expect(ds.Status.LastSync.Trigger).To(Equal("Manual"))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		waitReady(&ds, time.Minute)

		last := ds.Status.LastSync
		Expect(last.FilesCopied).To(Equal(int64(1)), "only the rewritten partition is copied")
		Expect(last.FilesDeleted).To(Equal(int64(1)), "only the deleted partition is removed")
		Expect(last.FilesUnchanged).To(Equal(loaded.Files - 2))
		Expect(last.GetRequests).To(Equal(int64(1)), "one GET for the one small changed file")
		Expect(last.ListRequests).To(Equal(int64(1)))
		Expect(ds.Status.Manifest.Files).To(Equal(loaded.Files - 1))
	})

	It("keeps whole generations, and the documented reader Job reads the current one", func() {
		g := ds.Status.Generations
		Expect(g).NotTo(BeNil(), "status.generations")
		Expect(g.Current).To(Equal(ds.Status.Manifest.Generation))
		Expect(g.Kept).To(HaveLen(2), "keepGenerations defaults to 2: the initial sync's and the refresh's")
		Expect(g.Kept[0].Generation).To(Equal(g.Current))
		Expect(g.Kept[0].Files).To(Equal(ds.Status.Manifest.Files))
		Expect(g.ExtraBytes).To(BeNumerically(">", 0), "the previous generation still holds the rewritten and the deleted partition")

		By("applying config/samples/reader_job.yaml as docs/datasets.md shows")
		var job batchv1.Job
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "reader_job.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.UnmarshalStrict(data, &job)).To(Succeed())
		job.Namespace = ns
		c0 := &job.Spec.Template.Spec.Containers[0]
		c0.Image, c0.ImagePullPolicy = image, corev1.PullIfNotPresent
		Expect(job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal(ds.Status.ClaimName))
		Expect(c.Create(ctx, &job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&job), &job)).To(Succeed())
			g.Expect(job.Status.Failed).To(BeZero(), "reader Job failed: %s", describePods(ns, job.Name))
			g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		By("reading the query's output from the pod's log, as kubectl logs does")
		var pods corev1.PodList
		Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job.Name})).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		out, err := podLog(ns, pods.Items[0].Name, c0.Name, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^orders\tstatuses\n[1-9][0-9]*\t3$`), "the sample's query output")

		// A pod that uses the claim keeps it from being deleted (pvc-protection): the reader goes, as
		// a user's finished Job would, before the last spec deletes the Dataset and expects the claim
		// to go with it.
		Expect(c.Delete(ctx, &job, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job.Name})).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("benchmarks two configurations on the volume and mixed-staged inputs with equal answers", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: compare, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  inputs: [{type: volume}, {type: mixed-staged}]
  configs:
    - {name: 1cpu-1gi, cpu: "1", memory: 1Gi}
    - {name: 500m-768mi, cpu: 500m, memory: 768Mi}
  iterations: 1
  warmups: 0
`, ns, e2eQueries)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 15*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
			"BenchRun conditions: %+v", br.Status.Conditions)

		Expect(br.Status.Queries).To(Equal(int32(e2eQueryCount)))
		Expect(br.Status.Results).To(HaveLen(4), "2 configs x 2 inputs")
		digests := map[string]string{}
		for _, r := range br.Status.Results {
			Expect(r.FailedQueries).To(BeEmpty(), "%s/%s", r.Config, r.Input)
			Expect(r.Queries).To(HaveLen(e2eQueryCount), "%s/%s", r.Config, r.Input)
			Expect(r.WallMillis).To(BeNumerically(">", 0))
			if r.Input == "mixed-staged" {
				Expect(r.StagedBytes).To(BeNumerically(">", 0), "lineitem/ is staged before the queries")
			}
			for _, q := range r.Queries {
				where := fmt.Sprintf("%s/%s %s", r.Config, r.Input, q.Name)
				Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), where)
				Expect(q.MedianMillis).To(BeNumerically(">", 0), where)
				Expect(q.PeakMemoryBytes).To(BeNumerically(">", 1<<20), where+": peak memory")
				Expect(q.Digest).NotTo(BeEmpty(), where)
				if want, ok := digests[q.Name]; ok {
					Expect(q.Digest).To(Equal(want), where+": the same answer on every config and input")
				} else {
					digests[q.Name] = q.Digest
				}
			}
		}
	})

	It("measures the volume while the Dataset refreshes, with the idle run's answers and generations published meanwhile", func() {
		var idle datav1alpha1.BenchRun
		Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compare"}, &idle)).To(Succeed())
		want := map[string]string{}
		for _, r := range idle.Status.Results {
			if r.Input == "volume" && r.Config == "1cpu-1gi" {
				for _, q := range r.Queries {
					want[q.Name] = q.Digest
				}
			}
		}
		Expect(want).To(HaveLen(e2eQueryCount), "the idle run's answers on the volume")
		var before datav1alpha1.Dataset
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &before)).To(Succeed())

		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: during-refresh, namespace: %s}
spec:
  datasetRef: {name: tpch}
  inputs: [{type: volume}]
  configs:
    - {name: 1cpu-1gi, cpu: "1", memory: 1Gi}
  # Long enough (22 queries x 10 runs, some 30 s at SF 0.01) for sync Jobs, which start a pod each,
  # to publish while the queries run.
  iterations: 9
  warmups: 1
  duringRefresh: true
  refresh: {percent: 25, every: 3s}
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 15*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
			"BenchRun conditions: %s", conditionsString(br.Status.Conditions))
		Expect(br.Status.Results).To(HaveLen(1))
		r := br.Status.Results[0]
		// All 22 run (for their length); the idle run answered e2eQueries, which must match.
		compared := 0
		for _, q := range r.Queries {
			Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), q.Name)
			if idleDigest, ok := want[q.Name]; ok {
				Expect(q.Digest).To(Equal(idleDigest), q.Name+": the idle run's answer, though the files were rewritten meanwhile")
				compared++
			}
		}
		Expect(compared).To(Equal(e2eQueryCount), "queries compared with the idle run's answers")
		Expect(r.Refresh).NotTo(BeNil())
		Expect(r.Refresh.Rewrites).To(BeNumerically(">", 0), "the Job rewrote files in the bucket")
		Expect(r.Refresh.ReadGeneration).To(Equal(br.Status.DatasetGeneration), "every query read the generation the run pinned")
		st := br.Status.Refresh
		Expect(st).NotTo(BeNil())
		Expect(st.Requests).To(BeNumerically(">", 0), "the run asked the Dataset for refreshes")
		Expect(st.GenerationsPublished).To(BeNumerically(">", 0), "syncs published new generations while the queries ran: %+v", st)

		var cur datav1alpha1.Dataset
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &cur)).To(Succeed())
		Expect(cur.Status.Manifest.Files).To(Equal(before.Status.Manifest.Files), "the rewrites added and removed no file")
		Expect(cur.Status.Manifest.Generation).To(BeNumerically(">", before.Status.Manifest.Generation))
	})

	It("runs two concurrent query streams with an idle run's answers, and reports their percentiles and throughput", func() {
		runs := map[int32]*datav1alpha1.BenchRun{}
		for _, streams := range []int32{1, 2} {
			var br datav1alpha1.BenchRun
			fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: streams-%d, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  inputs: [{type: volume}]
  configs: [{name: 1cpu-1gi, cpu: "1", memory: 1Gi}]
  iterations: 2
  warmups: 0
  streams: %d
`, streams, ns, e2eQueries, streams)
			Expect(c.Create(ctx, &br)).To(Succeed())
			runs[streams] = &br
		}
		for _, br := range runs {
			waitBenchRun(br, 15*time.Minute)
			Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
				"BenchRun %s conditions: %s", br.Name, conditionsString(br.Status.Conditions))
			Expect(br.Status.Results).To(HaveLen(1))
			Expect(br.Status.Results[0].FailedQueries).To(BeEmpty())
			Expect(br.Status.Results[0].Queries).To(HaveLen(e2eQueryCount))
		}
		idle, loaded := runs[1].Status.Results[0], runs[2].Status.Results[0]
		Expect(idle.Streams).To(Equal(int32(1)))
		Expect(loaded.Streams).To(Equal(int32(2)))
		Expect(loaded.StreamMillis).To(HaveLen(2))
		Expect(loaded.QueriesPerHour).To(BeNumerically(">", 0))
		for i, q := range loaded.Queries {
			Expect(q.Name).To(Equal(idle.Queries[i].Name))
			Expect(q.Digest).NotTo(BeEmpty(), q.Name)
			Expect(q.Digest).To(Equal(idle.Queries[i].Digest), q.Name+": two streams return the idle run's answer")
			Expect(q.P50Millis).To(BeNumerically(">", 0), q.Name+": p50 in status")
			Expect(q.P95Millis).To(BeNumerically(">=", q.P50Millis), q.Name)
			Expect(q.P99Millis).To(BeNumerically(">=", q.P95Millis), q.Name)
		}
	})

	It("compares DuckDB and Polars on every input path with equal answers, reading S3 only where it should", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: engines, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  engines: [{name: duckdb}, {name: polars}]
  inputs: [{type: volume}, {type: s3}, {type: mixed-staged}, {type: mixed-direct}]
  configs: [{name: 1cpu-1gi, cpu: "1", memory: 1Gi}]
  iterations: 1
  warmups: 0
`, ns, e2eQueries)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 20*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
			"BenchRun conditions: %s", conditionsString(br.Status.Conditions))
		Expect(br.Status.Jobs.Total).To(Equal(int32(8)), "both engines on all four inputs")
		Expect(br.Status.Results).To(HaveLen(8))
		digests := map[string]string{}
		engines := map[string]int{}
		for _, r := range br.Status.Results {
			where := r.Engine + "/" + r.Input
			engines[r.Engine]++
			Expect(r.FailedQueries).To(BeEmpty(), where)
			Expect(r.Queries).To(HaveLen(e2eQueryCount), where)
			readsS3 := r.Input == "s3" || r.Input == "mixed-direct"
			if readsS3 {
				Expect(r.NetworkReadBytes).To(BeNumerically(">", 0), where+": the queries read the bucket")
			} else {
				// Only the pod's own small traffic (none to S3: the stage step's copy is not the queries').
				Expect(r.NetworkReadBytes).To(BeNumerically("<", 64<<10), where+": the queries read only the volume")
			}
			for _, q := range r.Queries {
				qw := fmt.Sprintf("%s %s", where, q.Name)
				Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), qw)
				Expect(q.PeakMemoryBytes).To(BeNumerically(">", 1<<20), qw+": peak memory")
				if want, ok := digests[q.Name]; ok {
					Expect(q.Digest).To(Equal(want), qw+": the same answer on every engine and input")
				} else {
					digests[q.Name] = q.Digest
				}
			}
		}
		Expect(engines).To(Equal(map[string]int{"duckdb": 4, "polars": 4}))

		By("kubectl pqcache results: a column per result, priced at the default list prices")
		out, err := kubectlPqcache("results", "engines", "-n", ns)
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(ContainSubstring("polars / 1cpu-1gi / mixed-direct"))
		Expect(out).To(MatchRegexp(`(?m)^ *q19 `))
		Expect(out).To(MatchRegexp(`(?m)^ *cost of a run .*USD`))
	})

	It("runs DuckDB in both isolations with equal answers, its query times below its wall times", func() { benchBothIsolations(ns) })

	It("runs a user's own workload on both engines, from the volume and from S3, with equal answers", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: mine, namespace: %s}
spec:
  datasetRef: {name: tpch}
  workload:
    inline:
      name: lake
      tables:
        - {name: facts, path: "lineitem/**/*.parquet"}
        - {name: orders, path: orders, hive: true}
        - {name: nation, path: nation}
      queries:
        - name: revenue-by-flag
          sql: SELECT l_returnflag, sum(l_extendedprice) AS revenue FROM facts GROUP BY l_returnflag
        - name: orders-per-batch
          sql: SELECT batch, count(*) AS n FROM orders GROUP BY batch
        - name: nations
          sql: SELECT n_name FROM nation WHERE n_regionkey = 1
          polars: |
            def query(t):
                return t["nation"].filter(pl.col("n_regionkey") == 1).select("n_name")
  engines: [{name: duckdb}, {name: polars}]
  inputs: [{type: volume}, {type: s3}]
  configs: [{name: 1cpu-1gi, cpu: "1", memory: 1Gi}]
  iterations: 1
  warmups: 0
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 10*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
			"BenchRun conditions: %s", conditionsString(br.Status.Conditions))
		Expect(br.Status.Workload).To(Equal("lake"))
		Expect(br.Status.Results).To(HaveLen(4))
		digests := map[string]string{}
		for _, r := range br.Status.Results {
			Expect(r.Queries).To(HaveLen(3), r.Engine+"/"+r.Input)
			for _, q := range r.Queries {
				where := r.Engine + "/" + r.Input + " " + q.Name
				Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), where)
				if want, ok := digests[q.Name]; ok {
					Expect(q.Digest).To(Equal(want), where+": the same answer on every engine and input")
				} else {
					digests[q.Name] = q.Digest
				}
			}
		}
		Expect(digests).To(HaveKey("orders-per-batch"))
	})

	It("reports OOMKilled for a query that outgrows a too-small memory limit, and DuckDB's own limit prevents it", func() {
		// SF 0.01 fits in any memory limit the API accepts (64Mi and up), so this run reads SF 0.5. With
		// DuckDB's memory_limit left at its default (memoryLimit: None), the kernel kills what outgrows
		// 64Mi; with the default Auto, DuckDB keeps under the limit: it spills, or fails a query with
		// its own out-of-memory error (status Failed), and nothing is killed.
		By("loading TPC-H SF 0.5 into a second Dataset")
		runJob(ns, "load-tpch-sf05",
			pqcacheContainer("datagen", "datagen", "--scale", "0.5", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/tpch/sf0.5/", "--endpoint", endpoint, "--path-style"),
		)
		var big datav1alpha1.Dataset
		fromYAML(&big, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch-sf05, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: tpch/sf0.5/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
`, ns, bucket, endpoint, s3Secret)
		Expect(c.Create(ctx, &big)).To(Succeed())
		waitReady(&big, 3*time.Minute)
		Expect(big.Status.Manifest.Files).To(BeNumerically(">", 8))

		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: too-small, namespace: %s}
spec:
  datasetRef: {name: tpch-sf05}
  queries: [q1, q9, q18, q21]
  engines: [{name: duckdb, label: capped}, {name: duckdb, label: uncapped, memoryLimit: None}]
  inputs: [{type: volume}]
  configs:
    - {name: starved, cpu: "1", memory: 64Mi}
  iterations: 1
  warmups: 0
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 5*time.Minute)
		Expect(br.Status.Results).To(HaveLen(2))
		killed := map[string][]string{}
		var result datav1alpha1.BenchResult
		for _, r := range br.Status.Results {
			for _, q := range r.Queries {
				switch {
				case q.Name == "q1":
					// The runner outlives the queries that die: q1 needs little memory and still runs.
					Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), "%s q1: %+v", r.Engine, q)
					Expect(q.PeakMemoryBytes).To(BeNumerically(">", 0))
				case q.Status == datav1alpha1.QueryOOMKilled:
					killed[r.Engine] = append(killed[r.Engine], q.Name)
				}
			}
			if r.Engine == "uncapped" {
				result = r
			}
		}
		Expect(killed["capped"]).To(BeEmpty(), "DuckDB with its memory_limit from the container's limit was OOM-killed")
		oom := killed["uncapped"]
		Expect(oom).NotTo(BeEmpty(), "no query was OOMKilled: %+v", result.Queries)
		Expect(result.FailedQueries).To(ContainElements(oom))
		cond := meta.FindStatusCondition(br.Status.Conditions, datav1alpha1.ConditionSucceeded)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		Expect(cond.Reason).To(Equal(datav1alpha1.ReasonOOMKilled), "%+v", cond)
		Expect(cond.Message).To(ContainSubstring(fmt.Sprintf("%s on uncapped / starved / volume (memory limit 64Mi)", oom[0])))
	})

	It("says so when a configuration fits no node", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: too-big, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: [q1]
  inputs: [{type: volume}]
  configs: [{name: 64cpu, cpu: "64", memory: 1Gi}]
  timeout: 20m
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&br), &br)).To(Succeed())
			cond := meta.FindStatusCondition(br.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(cond.Reason).To(Equal(datav1alpha1.ReasonUnschedulable), cond.Message)
			// The scheduler's own words.
			g.Expect(cond.Message).To(ContainSubstring("64cpu/volume: 0/"))
			g.Expect(cond.Message).To(ContainSubstring("Insufficient cpu"))
			// Its volume lives on one node, which runs one bench Job at a time (maxBenchJobsPerNode): a
			// parallel spec's run may hold that node for minutes before this Job gets to the scheduler.
		}).WithTimeout(12 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("never puts the S3 secret into status, events or the Jobs it creates", func() {
		var datasets datav1alpha1.DatasetList
		var runs datav1alpha1.BenchRunList
		var events corev1.EventList
		var jobs batchv1.JobList
		Expect(c.List(ctx, &datasets, client.InNamespace(ns))).To(Succeed())
		Expect(c.List(ctx, &runs, client.InNamespace(ns))).To(Succeed())
		Expect(c.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		Expect(events.Items).NotTo(BeEmpty(), "the controllers send events")
		for _, obj := range []any{datasets, runs, events, jobs} {
			data, err := json.Marshal(obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(data)).NotTo(ContainSubstring(s3SecretKey), "%T", obj)
		}
	})

	It("deletes what the Dataset and BenchRuns own when they are deleted", func() {
		var owned []client.Object
		var jobs batchv1.JobList
		Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		for i := range jobs.Items {
			if len(jobs.Items[i].OwnerReferences) > 0 {
				owned = append(owned, &jobs.Items[i])
			}
		}
		Expect(owned).NotTo(BeEmpty(), "sync and bench Jobs are owned")
		var claims corev1.PersistentVolumeClaimList
		Expect(c.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
		var pvNames []string
		for i := range claims.Items {
			Expect(claims.Items[i].OwnerReferences).NotTo(BeEmpty(), "claim %s has no owner", claims.Items[i].Name)
			owned = append(owned, &claims.Items[i])
			pvNames = append(pvNames, claims.Items[i].Spec.VolumeName)
		}
		Expect(pvNames).To(HaveLen(2), "one claim per Dataset")

		var runs datav1alpha1.BenchRunList
		Expect(c.List(ctx, &runs, client.InNamespace(ns))).To(Succeed())
		for i := range runs.Items {
			Expect(c.Delete(ctx, &runs.Items[i])).To(Succeed())
		}
		var datasets datav1alpha1.DatasetList
		Expect(c.List(ctx, &datasets, client.InNamespace(ns))).To(Succeed())
		Expect(datasets.Items).To(HaveLen(2))
		for i := range datasets.Items {
			Expect(c.Delete(ctx, &datasets.Items[i])).To(Succeed())
		}

		Eventually(func(g Gomega) {
			for _, obj := range owned {
				err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s still exists", obj, obj.GetName())
			}
			for _, name := range pvNames {
				var pv corev1.PersistentVolume
				err := c.Get(ctx, client.ObjectKey{Name: name}, &pv)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PersistentVolume %s is not reclaimed", name)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// waitReady waits until the Dataset is Ready for its current generation and not syncing.
func waitReady(ds *datav1alpha1.Dataset, timeout time.Duration) {
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ds), ds)).To(Succeed())
		ready := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(meta.IsStatusConditionTrue(ds.Status.Conditions, "Stalled")).To(BeFalse(), "Stalled: %+v", ds.Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s (last sync %+v)", ready.Reason, ready.Message, ds.Status.LastSync)
		g.Expect(ready.ObservedGeneration).To(Equal(ds.Generation))
		g.Expect(meta.IsStatusConditionTrue(ds.Status.Conditions, "Reconciling")).To(BeFalse())
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
}

// waitBenchRun waits until the BenchRun has finished, whatever the outcome.
func waitBenchRun(br *datav1alpha1.BenchRun, timeout time.Duration) {
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
		g.Expect(br.Status.CompletionTime).NotTo(BeNil(), "progress %q, conditions %s", br.Status.Progress, conditionsString(br.Status.Conditions))
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())
}

func conditionStatus(conds []metav1.Condition, t string) metav1.ConditionStatus {
	if cond := meta.FindStatusCondition(conds, t); cond != nil {
		return cond.Status
	}
	return metav1.ConditionUnknown
}

func conditionsString(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}
