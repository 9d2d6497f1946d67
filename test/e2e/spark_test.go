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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// sparkLabel marks the nodes the Spark specs' Dataset keeps copies on: a label of their own, since the
// CSI specs, which run beside them, take theirs away when they end.
const sparkLabel = "pqcache.dev/e2e-spark"

// sparkExecutorLabels select every Spark executor pod of a namespace (controllers' componentSparkExecutor).
var sparkExecutorLabels = client.MatchingLabels{"app.kubernetes.io/component": "spark-executor"}

// readsNodeCopy says whether pod mounts a Dataset's node copy through pqcache's CSI driver.
func readsNodeCopy(pod corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.CSI != nil && v.CSI.Driver == "data.pqcache.dev" {
			return true
		}
	}
	return false
}

// Issue 36: Spark on Kubernetes as a BenchRun engine. The driver is the run's Job; its executors are
// pods that Spark's scheduler starts from the Spark image (hack/local-cluster builds it), spread over
// the three nodes, each mounting its node's copy of the Dataset through the CSI driver.
var _ = Describe("The spark engine across nodes", Ordered, func() {
	var (
		ns    string
		nodes []corev1.Node
	)

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3), "Spark's executors spread over 3 nodes")
		for _, n := range nodes {
			setNodeLabel(n.Name, sparkLabel, "yes")
			DeferCleanup(setNodeLabel, n.Name, sparkLabel, "")
		}
		ns = newNamespace("pqcache-spark-")
		endpoint := startS3(ns)
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/spark/", "--endpoint", endpoint, "--path-style"))
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: spark/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
    maxReplicas: 3
`, ns, bucket, endpoint, s3Secret, sparkLabel)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitCopies(&ds, 3, 5*time.Minute)
	})

	It("runs TPC-H on 3 executors spread over the nodes, with equal digests on volume, the nodes' S3 endpoints and s3, and no S3 bytes on volume", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: spark3, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  engines: [{name: spark, executors: 3, executorResources: {cpuRequest: 500m, cpuLimit: "1", memoryLimit: 1536Mi}}]
  inputs: [{type: volume}, {type: endpoint}, {type: s3}]
  configs: [{name: d, cpu: 500m, memory: 2Gi}]
  iterations: 1
  warmups: 0
`, ns, sparkQueries)
		Expect(c.Create(ctx, &br)).To(Succeed())

		By("the volume Job's executors spread over the three nodes, each mounting its node's copy")
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), sparkExecutorLabels)).To(Succeed())
			on := map[string]bool{}
			for _, p := range pods.Items {
				g.Expect(p.OwnerReferences).NotTo(BeEmpty(), "executor %s is owned by its driver pod", p.Name)
				g.Expect(p.OwnerReferences[0].Kind).To(Equal("Pod"))
				// The s3 Job's executors mount no copy; the volume Job's each mount their node's.
				if readsNodeCopy(p) && p.Spec.NodeName != "" {
					on[p.Spec.NodeName] = true
				}
			}
			g.Expect(on).To(HaveLen(3), "executors reading node copies on %v", on)
		}).WithTimeout(15 * time.Minute).WithPolling(time.Second).Should(Succeed())

		waitBenchRun(&br, 40*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue), conditionsString(br.Status.Conditions))
		Expect(br.Status.Results).To(HaveLen(3))
		digests := map[string]map[string]string{}
		for _, r := range br.Status.Results {
			Expect(r.Spark).NotTo(BeNil(), "result %s/%s has the Spark figures", r.Engine, r.Input)
			Expect(r.Spark.Executors).To(Equal(int32(3)))
			Expect(r.Spark.DriverPeakBytes).To(BeNumerically(">", 0))
			Expect(r.Spark.ExecutorPeakMaxBytes).To(BeNumerically(">", 0))
			Expect(r.Spark.PeakBytesSum).To(BeNumerically(">", r.Spark.DriverPeakBytes+r.Spark.ExecutorPeakMaxBytes-1))
			Expect(r.Spark.CoreSeconds).To(BeNumerically(">", 0))
			digests[r.Input] = map[string]string{}
			for _, q := range r.Queries {
				Expect(q.Status).To(Equal(datav1alpha1.QuerySucceeded), "%s on %s", q.Name, r.Input)
				digests[r.Input][q.Name] = q.Digest
			}
			switch r.Input {
			case "volume":
				Expect(r.Spark.S3ReadBytes).To(BeZero(), "the executors read their nodes' copies")
			case "s3":
				Expect(r.Spark.S3ReadBytes).To(BeNumerically(">", 0))
			}
			GinkgoWriter.Printf("spark x3 on %s: geomean %d ms, driver peak %d, executor peak max %d, sum %d, S3 bytes %d, %d core-s, %d GiB-s\n",
				r.Input, r.GeometricMeanMillis, r.Spark.DriverPeakBytes, r.Spark.ExecutorPeakMaxBytes, r.Spark.PeakBytesSum,
				r.Spark.S3ReadBytes, r.Spark.CoreSeconds, r.Spark.GiBSeconds)
		}
		Expect(digests["volume"]).To(HaveLen(2))
		Expect(digests["s3"]).To(Equal(digests["volume"]), "the same answers from the copies and the bucket")
		Expect(digests["endpoint"]).To(Equal(digests["volume"]), "the same answers through each executor's node's S3 endpoint")
	})

	It("leaves no executor behind when the run is deleted mid-way", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: spark-deleted, namespace: %s}
spec:
  datasetRef: {name: tpch}
  engines: [{name: spark, executors: 3, executorResources: {cpuRequest: 500m, cpuLimit: "1", memoryLimit: 1536Mi}}]
  inputs: [{type: volume}]
  configs: [{name: d, cpu: 500m, memory: 2Gi}]
  iterations: 5
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), sparkExecutorLabels)).To(Succeed())
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			g.Expect(running).To(Equal(3))
		}).WithTimeout(10 * time.Minute).WithPolling(time.Second).Should(Succeed())

		Expect(c.Delete(ctx, &br, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), sparkExecutorLabels)).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "executors left after the run was deleted")
			var all corev1.PodList
			g.Expect(c.List(ctx, &all, client.InNamespace(ns), client.MatchingLabels{"data.pqcache.dev/benchrun": "spark-deleted"})).To(Succeed())
			g.Expect(all.Items).To(BeEmpty(), "the driver went with its Job")
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		var cms corev1.ConfigMapList
		Eventually(func(g Gomega) {
			g.Expect(c.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{"data.pqcache.dev/benchrun": "spark-deleted"})).To(Succeed())
			g.Expect(cms.Items).To(BeEmpty(), "the driver's ConfigMap went with the run")
		}).WithTimeout(time.Minute).Should(Succeed())
	})
})
