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
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

var (
	// shapeImage is hack/shapeproxy's image: a TCP proxy that slows a server down.
	shapeImage = envOr("PQCACHE_E2E_SHAPE_IMAGE", "pqcache.local/shapeproxy:dev")
	// nodeCtl stops and starts a node: `$nodeCtl stop NAME`, `$nodeCtl start NAME`.
	nodeCtl = envOr("PQCACHE_E2E_NODE_CTL", filepath.Join(repoRoot, "hack", "local-cluster")+" node")
)

// What only a cluster of several nodes shows: Services and DNS across nodes, a worker's log read from
// its node's kubelet, live progress published through the API server by a worker pod, and a node that
// dies. On fewer nodes these specs fail, saying how many they need: they are never skipped.
var _ = Describe("A cluster of several nodes", Ordered, func() {
	var (
		ns       string
		nodes    []corev1.Node
		endpoint string
		ds       datav1alpha1.Dataset
	)
	const slowPrefix = "slow/sf0.01/"

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 2),
			"these specs need a cluster of at least 2 nodes and this one has %d Ready: hack/local-cluster up --nodes 3 starts one", len(nodes))
		ns = newNamespace("pqcache-nodes-")
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
	})

	It("spreads its nodes over two zones", func() {
		zones := map[string]bool{}
		for _, n := range nodes {
			zone := n.Labels[corev1.LabelTopologyZone]
			Expect(zone).NotTo(BeEmpty(), "node %s has no %s label", n.Name, corev1.LabelTopologyZone)
			zones[zone] = true
		}
		Expect(zones).To(HaveLen(2))
	})

	It("lets a pod on one node reach a Service whose pod runs on another, by its DNS name", func() {
		server, clientNode := nodes[0].Name, nodes[1].Name
		By("starting versitygw on " + server + " behind a Service")
		endpoint = startS3PodOn(ns, "remote-s3", map[string]string{corev1.LabelHostname: server})
		Expect(endpoint).To(Equal(fmt.Sprintf("http://remote-s3.%s.svc.cluster.local:%d", ns, s3Port)))

		By("uploading TPC-H SF 0.01 from a Job on " + clientNode + " to " + endpoint)
		rep := parsePutReport(runJobOn(ns, "upload", map[string]string{corev1.LabelHostname: clientNode},
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+slowPrefix,
				"--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"),
		))
		Expect(rep.Files).To(BeNumerically(">", 8))
		Expect(rep.Bytes).To(BeNumerically(">", 1<<20))
		Expect(podOf(ns, map[string]string{"app": "remote-s3"}).Spec.NodeName).To(Equal(server))
		Expect(podOf(ns, map[string]string{"job-name": "upload"}).Spec.NodeName).To(Equal(clientNode))
	})

	It("shows a running sync's progress in the Dataset's status", func() {
		By("putting a proxy that serves 64 KiB/s in front of the bucket, so that the sync takes a while")
		slow := startShapeProxy(ns, "slow-s3", strings.TrimPrefix(endpoint, "http://"), "64KiB")
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: slow, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
  sync: {parallelism: 1}
`, ns, bucket, slowPrefix, slow, s3Secret)
		Expect(c.Create(ctx, &ds)).To(Succeed())

		var seen []datav1alpha1.SyncProgress
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			if p := ds.Status.Progress; p != nil && meta.IsStatusConditionTrue(ds.Status.Conditions, datav1alpha1.ConditionSyncing) {
				seen = append(seen, *p)
			}
			g.Expect(ds.Status.LastSync).NotTo(BeNil(), "the first sync has not finished")
		}).WithTimeout(5 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		waitReady(&ds, time.Minute)
		last := ds.Status.LastSync
		Expect(last.Result).To(Equal(datav1alpha1.SyncSucceeded), "%+v", last)
		GinkgoWriter.Printf("sync took %d ms; progress seen in status: %+v\n", last.DurationMillis, seen)

		Expect(seen).NotTo(BeEmpty(), "the Dataset's status showed no progress while the sync ran for %d ms", last.DurationMillis)
		midway := false
		for _, p := range seen {
			Expect(p.BytesDone).To(BeNumerically("<=", p.BytesTotal))
			Expect(p.FilesDone).To(BeNumerically("<=", p.FilesTotal))
			// The totals grow while the sync still lists and plans (with parallelism 1 the planner
			// waits for the downloads); once it has, they are the sync's.
			if p.Listing {
				Expect(p.BytesTotal).To(BeNumerically("<=", last.BytesCopied), "%+v", p)
			} else {
				Expect(p.BytesTotal).To(Equal(last.BytesCopied), "%+v", p)
			}
			if p.BytesDone > 0 && p.BytesDone < p.BytesTotal {
				midway = true
			}
		}
		Expect(midway).To(BeTrue(), "no progress seen part way through the %d bytes: %+v", last.BytesCopied, seen)
		Expect(ds.Status.Progress).To(BeNil(), "progress is cleared when the sync ends")
	})

	It("serves a sync worker's log, as kubectl logs reads it", func() {
		worker := podOf(ns, map[string]string{"data.pqcache.dev/dataset": ds.Name, "app.kubernetes.io/component": "sync"})
		log, err := podLog(ns, worker.Name, worker.Spec.Containers[0].Name, 0)
		Expect(err).NotTo(HaveOccurred(), "the log of %s on %s", worker.Name, worker.Spec.NodeName)
		n := ds.Status.LastSync.FilesCopied
		Expect(log).To(ContainSubstring(fmt.Sprintf(`"filesDone":%d,"filesTotal":%d`, n, n)),
			"the worker's JSON progress lines end with every file done")
	})

})

// A node that dies. Serial: it stops a node, which every spec running meanwhile would feel.
var _ = Describe("A node that stops", Ordered, Serial, func() {
	var (
		ns    string
		nodes []corev1.Node
	)

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 2),
			"this spec needs a cluster of at least 2 nodes and this one has %d Ready: hack/local-cluster up --nodes 3 starts one", len(nodes))
		ns = newNamespace("pqcache-nodestop-")
	})

	It("replaces the pods of a Deployment elsewhere when their node stops, and takes the node back", func() {
		target := nodeWithout(nodes, releaseNamespace)
		others := []string{}
		for _, n := range nodes {
			if n.Name != target {
				others = append(others, n.Name)
			}
		}
		By("cordoning every node but " + target + " while a Deployment of 2 pods starts there")
		for _, name := range others {
			setUnschedulable(name, true)
			DeferCleanup(setUnschedulable, name, false)
		}
		dep := survivorDeployment(ns)
		Expect(c.Create(ctx, dep)).To(Succeed())
		var before []corev1.Pod
		Eventually(func(g Gomega) {
			before = readyPods(g, ns, dep.Spec.Selector.MatchLabels)
			g.Expect(before).To(HaveLen(2))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, p := range before {
			Expect(p.Spec.NodeName).To(Equal(target))
		}
		for _, name := range others {
			setUnschedulable(name, false)
		}

		By("stopping " + target + ": its kubelet, runtime and pods die at once")
		nodeControl("stop", target)
		DeferCleanup(func() {
			// Not decided from the Node object, which reads Ready for up to the node-monitor grace
			// period after a stop: a failure in that window would leave the node down for every later spec.
			ensureNodeStarted(target)
			waitSystemPodsReady()
		})
		Eventually(func(g Gomega) {
			g.Expect(readyNode(target)).To(HaveOccurred(), "node %s is still Ready", target)
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the pods' 5 s tolerations of an unreachable node expire, and the ReplicaSet starts them elsewhere")
		Eventually(func(g Gomega) {
			after := readyPods(g, ns, dep.Spec.Selector.MatchLabels)
			g.Expect(after).To(HaveLen(2))
			for _, p := range after {
				g.Expect(p.Spec.NodeName).NotTo(Equal(target))
			}
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		for _, p := range before {
			var old corev1.Pod
			err := c.Get(ctx, client.ObjectKeyFromObject(&p), &old)
			Expect(client.IgnoreNotFound(err)).To(Succeed())
			Expect(err != nil || old.DeletionTimestamp != nil).To(BeTrue(), "pod %s on the stopped node was not evicted", p.Name)
		}

		By("starting " + target + " again: it is Ready, and the evicted pods are gone for good")
		nodeControl("start", target)
		Expect(readyNode(target)).To(Succeed())
		Eventually(func(g Gomega) {
			for _, p := range before {
				var old corev1.Pod
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&p), &old)).NotTo(Succeed(), "pod %s is still there", p.Name)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})

// readyNodes lists the cluster's Ready nodes, by name.
func readyNodes() []corev1.Node {
	GinkgoHelper()
	var list corev1.NodeList
	Expect(c.List(ctx, &list)).To(Succeed())
	var out []corev1.Node
	for _, n := range list.Items {
		if readyNode(n.Name) == nil {
			out = append(out, n)
		}
	}
	return out
}

// readyNode returns nil when the node is Ready, or why not.
func readyNode(name string) error {
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		} else if cond.Type == corev1.NodeReady {
			return fmt.Errorf("node %s is %s: %s", name, cond.Reason, cond.Message)
		}
	}
	return fmt.Errorf("node %s has no Ready condition", name)
}

// podOf returns the one pod in ns with the labels.
func podOf(ns string, labels map[string]string) corev1.Pod {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	Expect(pods.Items).To(HaveLen(1), "pods with labels %v", labels)
	return pods.Items[0]
}

// readyPods lists the Ready, not deleted pods in ns with the labels.
func readyPods(g Gomega, ns string, labels map[string]string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			out = append(out, p)
		}
	}
	return out
}

// podReady reports whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeWithout returns the last of nodes that runs no pod of namespace ns (the operator's) but
// DaemonSet pods (the node agents run everywhere), so that stopping it leaves the operator alone; the
// last node if every node runs one.
func nodeWithout(nodes []corev1.Node, ns string) string {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(c.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	busy := map[string]bool{}
	for _, p := range pods.Items {
		if owner := metav1.GetControllerOf(&p); owner != nil && owner.Kind == "DaemonSet" {
			continue
		}
		busy[p.Spec.NodeName] = true
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if !busy[nodes[i].Name] {
			return nodes[i].Name
		}
	}
	return nodes[len(nodes)-1].Name
}

// setUnschedulable cordons or uncordons a node, as kubectl cordon does.
func setUnschedulable(name string, on bool) {
	GinkgoHelper()
	var n corev1.Node
	Expect(c.Get(ctx, client.ObjectKey{Name: name}, &n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = on
	Expect(c.Patch(ctx, &n, patch)).To(Succeed())
}

// survivorDeployment is 2 versitygw pods that tolerate an unreachable or not-ready node for 5 s
// (the default is 300 s), so that the node lifecycle controller evicts them soon after their node dies.
func survivorDeployment(ns string) *appsv1.Deployment {
	podSec, sec := restricted()
	labels := map[string]string{"app": "survivor"}
	tolerate := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(5))}
	}
	return &appsv1.Deployment{
		ObjectMeta: objectMeta(ns, "survivor"),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: podSec,
					Tolerations:     []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable), tolerate(corev1.TaintNodeNotReady)},
					Containers: []corev1.Container{{
						Name: "versitygw", Image: s3Image, ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"--port", fmt.Sprintf(":%d", s3Port), "--health", "/health", "posix", "/data"},
						Env:             []corev1.EnvVar{{Name: "ROOT_ACCESS_KEY", Value: s3AccessKey}, {Name: "ROOT_SECRET_KEY", Value: s3SecretKey}},
						SecurityContext: sec,
						VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/health", Port: intstr.FromInt32(s3Port)}}, PeriodSeconds: 1},
					}},
					Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}

// startShapeProxy runs hack/shapeproxy in front of upstream (host:port) at rate bytes per second per
// connection, behind a Service of the same name, and returns its URL.
func startShapeProxy(ns, name, upstream, rate string) string {
	GinkgoHelper()
	podSec, sec := restricted()
	const port = 7071
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			SecurityContext: podSec,
			Containers: []corev1.Container{{
				Name: "shapeproxy", Image: shapeImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"-listen", fmt.Sprintf(":%d", port), "-upstream", upstream, "-latency", "0s", "-rate", rate},
				SecurityContext: sec,
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
					Port: intstr.FromInt32(port)}}, PeriodSeconds: 1},
			}},
		},
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	return exposeReady(pod, port)
}

// nodeControl runs `$PQCACHE_E2E_NODE_CTL action node` (hack/local-cluster node by default).
func nodeControl(action, node string) {
	GinkgoHelper()
	runNodeControl(action, node, "")
}

// ensureNodeStarted starts node unless its supervisor already runs.
func ensureNodeStarted(node string) {
	GinkgoHelper()
	runNodeControl("start", node, "is running")
}

// runNodeControl runs the node command, and fails unless it succeeds or its output says tolerated
// ("" tolerates nothing).
func runNodeControl(action, node, tolerated string) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := append(strings.Fields(nodeCtl), action, node)
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil && tolerated != "" && strings.Contains(string(out), tolerated) {
		return
	}
	Expect(err).NotTo(HaveOccurred(), "%s (set PQCACHE_E2E_NODE_CTL to a command that can stop and start this cluster's nodes):\n%s",
		strings.Join(args, " "), out)
}

// waitSystemPodsReady waits until every pod of the operator and of kube-system runs Ready again, so
// that a node's return leaves the cluster as the next spec expects it.
func waitSystemPodsReady() {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, ns := range []string{metav1.NamespaceSystem, releaseNamespace} {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			for _, p := range pods.Items {
				g.Expect(podReady(&p)).To(BeTrue(), "pod %s/%s on %s is not Ready", ns, p.Name, p.Spec.NodeName)
			}
		}
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
}
