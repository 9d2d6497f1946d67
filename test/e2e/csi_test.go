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
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// csiLabel marks the nodes this file's Dataset keeps copies on.
const csiLabel = "pqcache.dev/e2e-csi"

// Readers of per-node copies through the agent's CSI driver (issue 25): pods name the Dataset in an
// inline volume, get their node's copy of one generation, and are placed beside it.
var _ = Describe("Reading a Dataset's per-node copies through the CSI driver", Ordered, func() {
	const (
		versions   = 3
		partitions = 4
		rows       = 2000
	)
	var (
		ns    string
		nodes []corev1.Node
		ds    datav1alpha1.Dataset
	)

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3),
			"these specs need a cluster of at least 3 nodes and this one has %d Ready: hack/local-cluster up --nodes 3 starts one", len(nodes))
		ns, ds = markedCopies("pqcache-csi-", "csi", versions, partitions, rows, nodes)
	})

	It("serves readers on every node one generation each while the Dataset refreshes, with no mixed answer", func() {
		dep := csiReaders(ns, "readers", ds.Name, len(nodes), rows)
		created := time.Now()
		Expect(c.Create(ctx, dep)).To(Succeed())
		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = readyPods(g, ns, map[string]string{"app": "readers"})
			g.Expect(pods).To(HaveLen(len(nodes)))
		}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("%d readers running %s after the Deployment's creation\n", len(pods), time.Since(created).Round(10*time.Millisecond))
		onNodes := map[string]bool{}
		for _, p := range pods {
			onNodes[p.Spec.NodeName] = true
		}
		Expect(onNodes).To(HaveLen(len(nodes)), "one reader per node")

		for v := 2; v <= versions; v++ {
			By(fmt.Sprintf("refresh %d: the source moves to version %d under the readers", v-1, v))
			before := ds.Status.Replicas.Generation
			Expect(c.Patch(ctx, &ds, client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"source":{"s3":{"prefix":"csi/v%d/"}}}}`, v))))).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
				g.Expect(ds.Status.Replicas.Generation).To(BeNumerically(">", before))
			}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			waitCopies(&ds, len(nodes), 2*time.Minute)
		}

		By("reading what each reader saw: its pod's report, written when its read loop ended")
		for _, p := range pods {
			rep := readerReport(ns, p.Name)
			GinkgoWriter.Printf("reader on %s: %d queries, %d errors, %d mixed, markers %v\n", p.Spec.NodeName, rep.Queries, rep.Errors, rep.Mixed, rep.Markers)
			Expect(rep.Errors).To(BeZero(), "%s: query errors (first: %s)", p.Spec.NodeName, rep.FirstError)
			Expect(rep.Mixed).To(BeZero(), "%s: a query saw rows of two versions, or an incomplete partition", p.Spec.NodeName)
			Expect(rep.Markers).To(Equal([]int64{1}), "%s: its volume shows the generation it was given, whatever refreshes happen", p.Spec.NodeName)
			Expect(rep.Queries).To(BeNumerically(">", 10))
		}
		Expect(c.Delete(ctx, dep)).To(Succeed())
	})

	It("places a reader beside a copy when its namespace asks, and leaves other namespaces alone", func() {
		out := ""
		Eventually(func(g Gomega) {
			var seen []string
			for _, r := range replicasOf(ns, ds.Name) {
				seen = append(seen, fmt.Sprintf("%s:%s", r.Spec.NodeName, r.Spec.Role))
				if r.Spec.Role == datav1alpha1.RoleFollower {
					out = r.Spec.NodeName
				}
			}
			g.Expect(out).NotTo(BeEmpty(), "no follower copy among %v", seen)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		By("taking " + out + " out of the Dataset's nodes: its copy and its label go")
		setNodeLabel(out, csiLabel, "")
		waitCopies(&ds, len(nodes)-1, 2*time.Minute)
		key := ds.Status.Replicas.NodeLabel
		Expect(key).To(Equal(datav1alpha1.NodeLabelKey(ns, ds.Name)))
		Eventually(func(g Gomega) {
			for _, n := range readyNodes() {
				// The nodes that hold a copy carry the label, the one taken out does not.
				if n.Name != out {
					g.Expect(n.Labels[key]).To(Equal(ns), "label %s on %s", key, n.Name)
				} else {
					g.Expect(n.Labels[key]).NotTo(Equal(ns), "label %s on %s", key, n.Name)
				}
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		setNamespaceLabel(ns, "data.pqcache.dev/locality", "required")
		for i := range 3 { // three pods: without the webhook, the scheduler would put one on out at random
			pod := csiReaderPod(ns, fmt.Sprintf("placed-%d", i), ds.Name, rows)
			Expect(c.Create(ctx, pod)).To(Succeed())
			Expect(pod.Spec.Affinity).NotTo(BeNil(), "the webhook gave the pod no affinity")
			Expect(pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions).To(
				ContainElement(corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{ns}}))
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
				g.Expect(podReady(pod)).To(BeTrue(), "pod %s: %+v", pod.Name, pod.Status)
			}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			Expect(pod.Spec.NodeName).NotTo(Equal(out), "the webhook placed a reader on a node without a copy")
		}

		By("a namespace without the label: the webhook is not asked")
		other := newNamespace("pqcache-csi-other-")
		pod := csiReaderPod(other, "untouched", ds.Name, rows)
		Expect(c.Create(ctx, pod)).To(Succeed())
		Expect(pod.Spec.Affinity).To(BeNil())
	})

	It("fails a pod forced onto a node without a copy, with an event naming the Dataset and the nodes that hold it", func() {
		out := ""
		for _, n := range readyNodes() {
			if n.Labels[csiLabel] != "yes" {
				out = n.Name
			}
		}
		Expect(out).NotTo(BeEmpty())
		pod := csiReaderPod(ns, "forced", ds.Name, rows)
		pod.Labels["data.pqcache.dev/locality"] = "none" // neither required nor preferred: the webhook is not asked
		pod.Spec.NodeName = out
		Expect(c.Create(ctx, pod)).To(Succeed())
		var holders []string
		for _, n := range ds.Status.Replicas.Nodes {
			if n.Ready {
				holders = append(holders, n.Node)
			}
		}
		slices.Sort(holders)
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(c.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			var msgs []string
			for _, e := range events.Items {
				if e.InvolvedObject.Name == pod.Name && e.Reason == "FailedMount" {
					msgs = append(msgs, e.Message)
				}
			}
			g.Expect(msgs).To(ContainElement(And(
				ContainSubstring(fmt.Sprintf("Dataset %s/%s has no copy on node %s", ns, ds.Name, out)),
				ContainSubstring("nodes with a ready copy: "+strings.Join(holders, ", ")))))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.Status.Phase).To(Equal(corev1.PodPending))
	})
})

// BenchRun configurations side by side on the copies of two nodes. Serial: it raises the operator's
// cap on bench Jobs (a helm upgrade that restarts the manager), which every other spec's runs share.
var _ = Describe("Configurations of a BenchRun on several nodes' copies", Ordered, Serial, func() {
	var (
		ns string
		ds datav1alpha1.Dataset
	)

	BeforeAll(func() {
		nodes := readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 2), "this spec needs 2 nodes: hack/local-cluster up --nodes 3")
		ns, ds = markedCopies("pqcache-spread-", "spread", 1, 2, 500, nodes[:2])
	})

	It("runs a BenchRun's configurations on different nodes that hold its generation, with equal answers", func() {
		setBenchJobCaps(2, 1) // side by side, as a cluster's operator would allow, one per node
		DeferCleanup(setBenchJobCaps, 1, 1)
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: spread, namespace: %s}
spec:
  datasetRef: {name: %s}
  workload:
    inline:
      name: marks
      tables: [{name: marks, path: "marks/*/*.parquet"}]
      queries:
        - {name: per-part, sql: "SELECT part, count(*) AS n, max(marker) AS m FROM marks GROUP BY part ORDER BY part"}
  engines: [{name: duckdb}]
  inputs: [{type: volume}]
  configs: [{name: a, cpu: 250m, memory: 512Mi}, {name: b, cpu: 250m, memory: 512Mi}]
  iterations: 1
  warmups: 0
`, ns, ds.Name)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 5*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue),
			"BenchRun conditions: %s", conditionsString(br.Status.Conditions))
		Expect(br.Status.Results).To(HaveLen(2))
		a, b := br.Status.Results[0], br.Status.Results[1]
		Expect(a.Node).NotTo(BeEmpty())
		Expect(a.Zone).To(HavePrefix("zone-"))
		Expect(a.Node).NotTo(Equal(b.Node), "both configurations ran on one node")
		Expect(a.Queries[0].Status).To(Equal(datav1alpha1.QuerySucceeded))
		Expect(a.Queries[0].Digest).To(Equal(b.Queries[0].Digest))
		Expect(br.Status.DatasetGeneration).To(Equal(ds.Status.Replicas.Generation))
	})
})

// markedCopies writes versions of a marked table (testdata marks) into a new namespace's S3 server
// under prefix/vN/, and makes a Dataset "marked" of prefix/v1/ with a copy on each of nodes, Ready.
func markedCopies(nsPrefix, prefix string, versions, partitions, rows int, nodes []corev1.Node) (string, datav1alpha1.Dataset) {
	GinkgoHelper()
	for _, n := range nodes {
		setNodeLabel(n.Name, csiLabel, "yes")
		DeferCleanup(setNodeLabel, n.Name, csiLabel, "")
	}
	ns := newNamespace(nsPrefix)
	endpoint := startS3(ns)
	runJob(ns, "versions",
		testkitContainer("marks", "marks", "--out", "/work/m", "--versions", strconv.Itoa(versions),
			"--partitions", strconv.Itoa(partitions), "--rows", strconv.Itoa(rows)),
		pqcacheContainer("put", "s3", "put", "/work/m", "s3://"+bucket+"/"+prefix+"/", "--endpoint", endpoint, "--path-style"))
	var ds datav1alpha1.Dataset
	fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: marked, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s/v1/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
`, ns, bucket, prefix, endpoint, s3Secret, csiLabel)
	Expect(c.Create(ctx, &ds)).To(Succeed())
	waitCopies(&ds, len(nodes), 3*time.Minute)
	return ns, ds
}

// csiVolume is an inline volume of the agent's CSI driver for a Dataset.
func csiVolume(dataset string) corev1.Volume {
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: "data.pqcache.dev", ReadOnly: ptr.To(true), VolumeAttributes: map[string]string{"dataset": dataset}}}}
}

// csiReaderPod is a pod that checks the Dataset's marks through the driver for a while, then sleeps
// until deleted.
func csiReaderPod(ns, name, dataset string, rows int) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: csiReaderSpec(dataset, rows, 20*time.Second)}
}

func csiReaderSpec(dataset string, rows int, duration time.Duration) corev1.PodSpec {
	read := testkitContainer("read", "read-check", "--data", "/data", "--pinned", "--rows", strconv.Itoa(rows),
		"--duration", duration.String(), "--report-file", "/dev/termination-log")
	read.VolumeMounts = append(read.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data", ReadOnly: true})
	// Small, so that several readers fit beside the suite's other pods on nodes that share two cores.
	read.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	podSec, _ := restricted()
	work := corev1.Volume{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}} // pqcacheContainer's
	return corev1.PodSpec{Containers: []corev1.Container{read}, SecurityContext: podSec, Volumes: []corev1.Volume{csiVolume(dataset), work},
		TerminationGracePeriodSeconds: ptr.To[int64](1)}
}

// csiReaders is a Deployment of n readers, one per node.
func csiReaders(ns, name, dataset string, n, rows int) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := csiReaderSpec(dataset, rows, 2*time.Minute)
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(n)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}

// readerReport waits for a reader's read loop to end and returns its report (its container's
// termination message; the Deployment restarts it afterwards).
func readerReport(ns, pod string) readCheck {
	GinkgoHelper()
	var msg string
	Eventually(func(g Gomega) {
		var p corev1.Pod
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, &p)).To(Succeed())
		g.Expect(p.Status.ContainerStatuses).NotTo(BeEmpty())
		st := p.Status.ContainerStatuses[0]
		for _, t := range []*corev1.ContainerStateTerminated{st.State.Terminated, st.LastTerminationState.Terminated} {
			if t != nil && t.Message != "" {
				msg = t.Message
			}
		}
		g.Expect(msg).NotTo(BeEmpty(), "reader %s has not finished its read loop", pod)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	var rep readCheck
	Expect(json.Unmarshal([]byte(msg), &rep)).To(Succeed(), "read-check report %q", msg)
	return rep
}

// setNodeLabel sets (or with "" removes) a label on a node.
func setNodeLabel(name, key, value string) {
	GinkgoHelper()
	setLabel(&corev1.Node{ObjectMeta: objectMeta("", name)}, key, value)
}

// setNamespaceLabel sets (or with "" removes) a label on a namespace.
func setNamespaceLabel(name, key, value string) {
	GinkgoHelper()
	setLabel(&corev1.Namespace{ObjectMeta: objectMeta("", name)}, key, value)
}

// setLabel sets (or with "" removes) a label on obj with a merge patch, which writes nothing else.
func setLabel(obj client.Object, key, value string) {
	GinkgoHelper()
	v := `"` + value + `"`
	if value == "" {
		v = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, v)
	Expect(c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
