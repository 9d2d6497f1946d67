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
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

const (
	// copyLabel marks the nodes this spec's Dataset keeps copies on.
	copyLabel = "pqcache.dev/e2e-copy"
	// copiesToken is the webhook token of its notifications.
	copiesToken = "copies-webhook-token-0123456789"
)

// Per-node copies kept by the chart's node agents (issue 24): a seed syncs from the bucket, the other
// nodes copy its generations from it, and the Dataset counts the copies that hold the current one.
var _ = Describe("A Dataset with a copy on every node", Ordered, Serial, func() { // Serial: it stops a node
	var (
		ns       string
		endpoint string
		nodes    []corev1.Node
		ds       datav1alpha1.Dataset
	)
	const copyPrefix = "copies/sf0.01/"

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3),
			"these specs need a cluster of at least 3 nodes and this one has %d Ready: hack/local-cluster up --nodes 3 starts one", len(nodes))
		for _, n := range nodes {
			labelNode(n.Name, "yes")
			DeferCleanup(labelNode, n.Name, "")
		}
		ns = newNamespace("pqcache-copies-")
		// The S3 server runs beside the operator, so that stopping another node stops neither; it posts
		// its notifications to the operator's webhook.
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, "hook-token"), StringData: map[string]string{"token": copiesToken}})).To(Succeed())
		manager := podOf(releaseNamespace, map[string]string{"app.kubernetes.io/component": "manager"})
		endpoint = startS3PodOn(ns, "versitygw", map[string]string{corev1.LabelHostname: manager.Spec.NodeName},
			"--event-webhook-url", fmt.Sprintf("%s/events/%s/everywhere?token=%s", eventsURL, ns, copiesToken))
		parsePutReport(runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+copyPrefix, "--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log")))
	})

	It("becomes Ready with a copy on every node, the bucket read by the seed alone", func() {
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: everywhere, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
    minReady: 2
  refresh:
    events: {webhook: {tokenSecretRef: {name: hook-token}}}
`, ns, bucket, copyPrefix, endpoint, s3Secret, copyLabel)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitCopies(&ds, len(nodes), 3*time.Minute)
		g := ds.Status.Replicas.Generation
		seeds := 0
		for _, r := range replicasOf(ns, ds.Name) {
			Expect(r.Status.Generation).To(Equal(g), "copy on %s", r.Spec.NodeName)
			Expect(r.Status.LastSync).NotTo(BeNil())
			if r.Spec.Role == datav1alpha1.RoleSeed {
				seeds++
				Expect(r.Status.LastSync.GetRequests).To(Equal(ds.Status.Manifest.Files), "the seed GETs each file once from the bucket")
				continue
			}
			Expect(r.Status.LastSync.FilesFromFallback).To(BeZero(), "the copy on %s fell back to the bucket", r.Spec.NodeName)
			Expect(r.Status.LastSync.FilesCopied).To(Equal(ds.Status.Manifest.Files), "the copy on %s came from its peer", r.Spec.NodeName)
		}
		Expect(seeds).To(Equal(1))
	})

	It("brings a PUT to every node by its S3 event notification, without a refresh", func() {
		before := ds.Status.Replicas.Generation
		runJob(ns, "change", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/more"),
			pqcacheContainer("upload", "s3", "put", "/work/more/nation", "s3://"+bucket+"/"+copyPrefix+"nation-again/", "--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"))
		start := time.Now() // the Job is seen complete up to a second after its PUT
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			st := ds.Status.Replicas
			g.Expect(st.Generation).To(BeNumerically(">", before))
			for _, r := range replicasOf(ns, ds.Name) {
				g.Expect(r.Status.Generation).To(Equal(st.Generation), "copy on %s", r.Spec.NodeName)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("from the upload Job's completion to the change on all %d nodes: %s\n", len(nodes), time.Since(start).Round(10*time.Millisecond))
		Expect(ds.Status.LastSync.Trigger).To(HavePrefix("Events"), "the change came by a notification")
	})

	It("stays Ready at minReady 2 while a node is stopped, and the node catches up when it returns", func() {
		target := followerNode(ns, ds.Name)
		By("stopping " + target)
		nodeControl("stop", target)
		DeferCleanup(func() {
			ensureNodeStarted(target)
			waitSystemPodsReady()
		})
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.Replicas.Nodes).To(ContainElement(HaveField("Reason", datav1alpha1.ReasonNodeNotReady)))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		waitReady(&ds, time.Minute)

		By("a refresh while it is down reaches the other nodes")
		before := ds.Status.Replicas.Generation
		runJob(ns, "change2", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/more"),
			pqcacheContainer("upload", "s3", "put", "/work/more/region", "s3://"+bucket+"/"+copyPrefix+"region-again/", "--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"))
		refresh(&ds, "two")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.Replicas.Generation).To(BeNumerically(">", before))
			g.Expect(ds.Status.Replicas.Ready).To(BeNumerically(">=", 2))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		waitReady(&ds, time.Minute)

		By("starting " + target + " again: its copy catches up")
		nodeControl("start", target)
		waitCopies(&ds, len(nodes), 3*time.Minute)
	})

	It("removes the copy of a node taken out of the selector, with an event", func() {
		target := followerNode(ns, ds.Name)
		labelNode(target, "")
		Eventually(func(g Gomega) {
			for _, r := range replicasOf(ns, ds.Name) {
				g.Expect(r.Spec.NodeName).NotTo(Equal(target))
			}
			var events eventsv1.EventList
			g.Expect(c.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
			found := false
			for _, e := range events.Items {
				found = found || e.Reason == datav1alpha1.EventReplicaRemoved && e.Regarding.Name == ds.Name
			}
			g.Expect(found).To(BeTrue(), "no %s event", datav1alpha1.EventReplicaRemoved)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		waitCopies(&ds, len(nodes)-1, time.Minute)
	})

	It("takes every DatasetReplica with it when deleted", func() {
		Expect(c.Delete(ctx, &ds)).To(Succeed())
		Eventually(func() []datav1alpha1.DatasetReplica { return replicasOf(ns, ds.Name) }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty())
	})
})

// waitCopies waits until the Dataset is Ready with n copies, all holding its current generation.
func waitCopies(ds *datav1alpha1.Dataset, n int, timeout time.Duration) {
	GinkgoHelper()
	want := fmt.Sprintf("%d/%d", n, n)
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(ds), ds)).To(Succeed())
		g.Expect(ds.Status.Replicas).NotTo(BeNil())
		g.Expect(ds.Status.Replicas.ReadyOfDesired).To(Equal(want), "copies %+v, conditions %s", ds.Status.Replicas, conditionsString(ds.Status.Conditions))
	}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	waitReady(ds, time.Minute)
}

// replicasOf lists the DatasetReplicas of the Dataset name.
func replicasOf(ns, name string) []datav1alpha1.DatasetReplica {
	GinkgoHelper()
	var list datav1alpha1.DatasetReplicaList
	Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []datav1alpha1.DatasetReplica
	for _, r := range list.Items {
		if r.Spec.DatasetName == name {
			out = append(out, r)
		}
	}
	return out
}

// followerNode is a node that holds a follower's copy and runs neither the operator nor the S3 server.
func followerNode(ns, name string) string {
	GinkgoHelper()
	avoid := map[string]bool{}
	for _, n := range []string{releaseNamespace, ns} {
		var pods corev1.PodList
		Expect(c.List(ctx, &pods, client.InNamespace(n))).To(Succeed())
		for _, p := range pods.Items {
			if owner := metav1.GetControllerOf(&p); owner == nil || owner.Kind != "DaemonSet" && owner.Kind != "Job" {
				avoid[p.Spec.NodeName] = true
			}
		}
	}
	for _, r := range replicasOf(ns, name) {
		if r.Spec.Role == datav1alpha1.RoleFollower && !avoid[r.Spec.NodeName] {
			return r.Spec.NodeName
		}
	}
	Fail(fmt.Sprintf("no follower's node runs neither the operator nor the S3 server (avoid %v)", avoid))
	return ""
}

// labelNode sets (or with "" removes) the copy label on a node.
func labelNode(name, value string) {
	GinkgoHelper()
	setNodeLabel(name, copyLabel, value)
}

// refresh sets a new manual token.
func refresh(ds *datav1alpha1.Dataset, token string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"refresh":{"manual":%q}}}`, token)
	Expect(c.Patch(ctx, ds, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
