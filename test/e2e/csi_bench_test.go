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
	"bufio"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Figures for docs/benchmarks.md (issue 25): how long a pod takes to start with the CSI driver's
// volume and without it, and the driver's own publish time.
var _ = Describe("Mount latency of the CSI driver", Label("benchmark"), Ordered, func() {
	const pods = 20
	var (
		ns string
		ds datav1alpha1.Dataset
	)

	BeforeAll(func() {
		nodes := readyNodes()
		ns, ds = markedCopies("pqcache-csibench-", "csibench", 1, 4, 2000, nodes)
	})

	It("starts pods with the driver's volume about as fast as with an emptyDir", func() {
		measure := func(name string, withCSI bool) []time.Duration {
			var took []time.Duration
			for i := range pods {
				pod := csiReaderPod(ns, fmt.Sprintf("%s-%d", name, i), ds.Name, 2000)
				if !withCSI {
					pod.Spec.Volumes[0] = corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
				}
				start := time.Now()
				Expect(c.Create(ctx, pod)).To(Succeed())
				Eventually(func(g Gomega) {
					g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
					g.Expect(pod.Status.ContainerStatuses).NotTo(BeEmpty())
					st := pod.Status.ContainerStatuses[0].State
					g.Expect(st.Running != nil || st.Terminated != nil).To(BeTrue())
				}).WithTimeout(time.Minute).WithPolling(20 * time.Millisecond).Should(Succeed())
				took = append(took, time.Since(start))
				Expect(c.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
			}
			return took
		}
		without := measure("plain", false)
		with := measure("csi", true)
		GinkgoWriter.Printf("pod creation to container started, %d pods each: emptyDir p50 %s p99 %s; CSI driver p50 %s p99 %s\n",
			pods, quantile(without, 0.5), quantile(without, 0.99), quantile(with, 0.5), quantile(with, 0.99))

		By("the driver's publish times, from the mount containers' logs")
		var publish []time.Duration
		var agents corev1.PodList
		Expect(c.List(ctx, &agents, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/component": "agent"})).To(Succeed())
		for _, a := range agents.Items {
			log, err := cs.CoreV1().Pods(releaseNamespace).GetLogs(a.Name, &corev1.PodLogOptions{Container: "mount", SinceTime: &metav1.Time{Time: time.Now().Add(-10 * time.Minute)}}).DoRaw(ctx)
			Expect(err).NotTo(HaveOccurred())
			sc := bufio.NewScanner(strings.NewReader(string(log)))
			for sc.Scan() {
				if line := sc.Text(); strings.Contains(line, "Published a Dataset's copy") && strings.Contains(line, ns) {
					if us, ok := field(line, "tookMicros"); ok {
						publish = append(publish, time.Duration(us)*time.Microsecond)
					}
				}
			}
		}
		Expect(len(publish)).To(BeNumerically(">=", pods))
		GinkgoWriter.Printf("NodePublishVolume: %d calls, p50 %s p99 %s\n", len(publish), quantile(publish, 0.5), quantile(publish, 0.99))
	})
})

// Figures for docs/benchmarks.md (issue 25): a BenchRun of three configurations over per-node copies
// on three nodes against the same run over a copy on one node. The operator's cap on bench Jobs is
// raised to 3 for it (the suite keeps it at 1 for comparable timings elsewhere), and its cap per node
// lifted, so that the run over one copy still puts its three Jobs side by side on that node.
var _ = Describe("A BenchRun across nodes", Label("benchmark"), Ordered, func() {
	var ns string

	BeforeAll(func() {
		nodes := readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3), "this benchmark needs 3 nodes")
		for _, n := range nodes {
			setNodeLabel(n.Name, csiLabel, "yes")
			DeferCleanup(setNodeLabel, n.Name, csiLabel, "")
		}
		setBenchJobCaps(3, 0)
		DeferCleanup(setBenchJobCaps, 1, 1)
		ns = newNamespace("pqcache-spread-")
		endpoint := startS3(ns)
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.1", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/spread/", "--endpoint", endpoint, "--path-style"))
		for _, d := range []struct{ name, max string }{{"three", "3"}, {"one", "1"}} {
			var ds datav1alpha1.Dataset
			fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: %s, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: spread/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
    maxReplicas: %s
`, d.name, ns, bucket, endpoint, s3Secret, csiLabel, d.max)
			Expect(c.Create(ctx, &ds)).To(Succeed())
			n, _ := strconv.Atoi(d.max)
			waitCopies(&ds, n, 5*time.Minute)
		}
	})

	It("runs three configurations side by side on three nodes", func() {
		wall := map[string]time.Duration{}
		for _, dataset := range []string{"three", "one"} {
			var br datav1alpha1.BenchRun
			fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: on-%s, namespace: %s}
spec:
  datasetRef: {name: %s}
  engines: [{name: duckdb}]
  inputs: [{type: volume}]
  configs: [{name: a, cpu: "1", memory: 1Gi}, {name: b, cpu: "1", memory: 1Gi}, {name: c, cpu: "1", memory: 1Gi}]
  iterations: 1
  warmups: 0
`, dataset, ns, dataset)
			Expect(c.Create(ctx, &br)).To(Succeed())
			waitBenchRun(&br, 20*time.Minute)
			Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue), conditionsString(br.Status.Conditions))
			nodes := map[string]bool{}
			for _, r := range br.Status.Results {
				nodes[r.Node] = true
			}
			wall[dataset] = br.Status.CompletionTime.Sub(br.Status.StartTime.Time)
			GinkgoWriter.Printf("BenchRun over copies on %s node(s): 3 configurations x 22 queries on %d node(s), wall %s\n", dataset, len(nodes), wall[dataset])
		}
	})
})

// setBenchJobCaps sets the operator's caps on concurrent bench Jobs, across the cluster and per node
// (the suite keeps them at 1 and the chart's default 1, so that timings elsewhere are comparable),
// and waits until the new manager alone runs, and leads.
func setBenchJobCaps(n, perNode int) {
	GinkgoHelper()
	out, err := helm("upgrade", releaseName, filepath.Join(repoRoot, "charts", "pqcache"), "-n", releaseNamespace, "--reuse-values", "--wait",
		"--set", "worker.maxConcurrentBenchJobs="+strconv.Itoa(n), "--set", "worker.maxBenchJobsPerNode="+strconv.Itoa(perNode))
	Expect(err).NotTo(HaveOccurred(), out)
	waitManagerLeads()
}

// quantile is the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))].Round(time.Millisecond / 10)
}

// field reads key=N from a text log line, or "key":N from a JSON one.
func field(line, key string) (int64, bool) {
	for _, sep := range []string{key + "=", `"` + key + `":`} {
		if i := strings.Index(line, sep); i >= 0 {
			rest := line[i+len(sep):]
			end := strings.IndexAny(rest, " ,}")
			if end < 0 {
				end = len(rest)
			}
			n, err := strconv.ParseInt(rest[:end], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
