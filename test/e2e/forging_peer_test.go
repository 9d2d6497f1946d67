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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// forgerPort is where the forging peer listens.
const forgerPort = 7481

// Issue 38, item 3: an agent writes only its own node's DatasetReplicas (the API server denies the
// rest), and followers copy only what the seed's manifest holds: a forging peer is refused, and every
// copy keeps its last good generation.
//
// Needs: the 3-node local cluster with the chart installed by the suite (agent enabled), a Kubernetes
// whose pod tokens carry their node (1.30+), and the chart's shared peer key Secret
// (<release>-agent-peer-key), with which the forging peer signs nothing but checks the followers'
// requests. When peers authenticate by identity (issue 38 item 4), the forger must be a pod that
// holds an agent's identity instead. It stops the manager for a minute (scaled to 0) so that the
// forged peer assignment stands, and starts it again.
var _ = Describe("A node that speaks for another", Ordered, func() {
	var (
		ns       string
		endpoint string
		nodes    []corev1.Node
		ds       datav1alpha1.Dataset
	)
	const (
		realPrefix   = "forging/real/"
		forgedPrefix = "forging/forged/"
		label        = "pqcache.dev/e2e-forging"
	)

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3), "these specs need 3 nodes: hack/local-cluster up --nodes 3")
		for _, n := range nodes {
			setNodeLabel(n.Name, label, "yes")
			DeferCleanup(setNodeLabel, n.Name, label, "")
		}
		ns = newNamespace("pqcache-forging-")
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
		manager := podOf(releaseNamespace, map[string]string{"app.kubernetes.io/component": "manager"})
		endpoint = startS3PodOn(ns, "versitygw", map[string]string{corev1.LabelHostname: manager.Spec.NodeName})
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/tpch"),
			pqcacheContainer("real", "s3", "put", "/work/tpch/nation", "s3://"+bucket+"/"+realPrefix, "--endpoint", endpoint, "--path-style"),
			pqcacheContainer("forged", "s3", "put", "/work/tpch/region", "s3://"+bucket+"/"+forgedPrefix, "--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"))
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: forged, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
    minReady: 1
`, ns, bucket, realPrefix, endpoint, s3Secret, label)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitCopies(&ds, len(nodes), 3*time.Minute)
	})

	It("denies an agent's own token the DatasetReplicas of other nodes", func() {
		reps := replicasOf(ns, ds.Name)
		mine, other := reps[0], reps[1]
		as := agentClientOn(mine.Spec.NodeName)
		Expect(patchEndpoint(as, &mine, mine.Status.Endpoint)).To(Succeed(), "the agent on %s writes its own node's copy", mine.Spec.NodeName)
		err := patchEndpoint(as, &other, "http://192.0.2.1:7480")
		Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "the agent on %s wrote %s's copy: %v", mine.Spec.NodeName, other.Spec.NodeName, err)
		Expect(err.Error()).To(ContainSubstring("writes only the DatasetReplicas of its own node"))
	})

	It("refuses a forging peer, and every copy keeps its last good generation", func() {
		last := ds.Status.Replicas.Generation
		forger := startForger(ns, endpoint, forgedPrefix, fmt.Sprintf("%s.%s", ns, ds.Name), last+1)

		By("stopping the manager, so that the forged assignment stands")
		scaleManager(0)
		DeferCleanup(func() { scaleManager(1); waitManagerLeads() })

		By("the seed publishes generation " + fmt.Sprint(last+1) + " with its manifest digest")
		runJob(ns, "change", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/more"),
			pqcacheContainer("upload", "s3", "put", "/work/more/region", "s3://"+bucket+"/"+realPrefix+"region/", "--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"))
		seed := replicaWithRole(ns, ds.Name, datav1alpha1.RoleSeed)
		Expect(c.Patch(ctx, &seed, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"syncToken":"forging"}}`)))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&seed), &seed)).To(Succeed())
			g.Expect(seed.Status.ObservedSyncToken).To(Equal("forging"))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		digest := seed.Status.ManifestDigest
		Expect(digest).To(HavePrefix("sha256:"))
		g := seed.Status.Generation
		Expect(g).To(Equal(last+1), "the forger serves generation %d", last+1)

		By("every follower is sent to the forger, as when a node names the forger as its endpoint")
		for _, r := range replicasOf(ns, ds.Name) {
			if r.Spec.Role != datav1alpha1.RoleFollower {
				continue
			}
			patch := fmt.Sprintf(`{"spec":{"generation":%d,"peer":%q,"manifestDigest":%q}}`, g, forger, digest)
			Expect(c.Patch(ctx, &r, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		}
		Eventually(func(gm Gomega) {
			for _, r := range replicasOf(ns, ds.Name) {
				if r.Spec.Role != datav1alpha1.RoleFollower {
					continue
				}
				gm.Expect(r.Status.LastSync).NotTo(BeNil())
				gm.Expect(r.Status.LastSync.Reason).To(Equal(datav1alpha1.ReasonPeerManifestMismatch), "copy on %s", r.Spec.NodeName)
				gm.Expect(r.Status.Generation).To(Equal(last), "the copy on %s left its last good generation", r.Spec.NodeName)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Consistently(func(gm Gomega) {
			for _, r := range replicasOf(ns, ds.Name) {
				if r.Spec.Role == datav1alpha1.RoleFollower {
					gm.Expect(r.Status.Generation).To(Equal(last), "copy on %s", r.Spec.NodeName)
				}
			}
		}).WithTimeout(20 * time.Second).WithPolling(2 * time.Second).Should(Succeed())

		By("with the manager back, every copy reaches the seed's generation from honest peers")
		scaleManager(1)
		waitManagerLeads()
		waitCopies(&ds, len(nodes), 3*time.Minute)
		Expect(ds.Status.Replicas.Generation).To(Equal(g))
	})
})

// agentClientOn is a client with a token of the agent pod on node, made as the kubelet makes the
// pod's own: bound to the pod, so that the API server knows its node.
func agentClientOn(node string) client.Client {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(c.List(ctx, &pods, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/component": "agent"})).To(Succeed())
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == node {
			pod = &pods.Items[i]
		}
	}
	Expect(pod).NotTo(BeNil(), "no agent pod on %s", node)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}
	tok, err := cs.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(ctx, pod.Spec.ServiceAccountName, tr, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := ctrl.GetConfig()
	Expect(err).NotTo(HaveOccurred())
	anon := rest.AnonymousClientConfig(cfg)
	anon.BearerToken = tok.Status.Token
	as, err := client.New(anon, client.Options{Scheme: c.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return as
}

// patchEndpoint writes status.endpoint of rep as c.
func patchEndpoint(c client.Client, rep *datav1alpha1.DatasetReplica, endpoint string) error {
	patch := fmt.Sprintf(`{"status":{"endpoint":%q}}`, endpoint)
	return c.Status().Patch(ctx, rep.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))
}

func replicaWithRole(ns, name string, role datav1alpha1.ReplicaRole) datav1alpha1.DatasetReplica {
	GinkgoHelper()
	for _, r := range replicasOf(ns, name) {
		if r.Spec.Role == role {
			return r
		}
	}
	Fail(fmt.Sprintf("no %s copy of %s", role, name))
	return datav1alpha1.DatasetReplica{}
}

// scaleManager sets the manager Deployment's replicas.
func scaleManager(n int32) {
	GinkgoHelper()
	var dep appsv1.Deployment
	Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: releaseName}, &dep)).To(Succeed())
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	Expect(c.Patch(ctx, &dep, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&dep), &dep)).To(Succeed())
		g.Expect(dep.Status.ReadyReplicas).To(Equal(n))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// startForger runs a forging peer: `pqcache peer serve` of a copy of prefix (data the Dataset's
// bucket prefix never held), published as generation g, under the Dataset's peer bucket name. It
// answers the followers' signed requests with the chart's peer key. It returns its URL.
func startForger(ns, endpoint, prefix, bucketName string, g int64) string {
	GinkgoHelper()
	podSec, _ := restricted()
	key := func(k string) corev1.EnvVar {
		return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: releaseName + "-agent-peer-key"}, Key: k}}}
	}
	// The peer key lives in the release's namespace: the forger is given a copy, as a node that holds
	// it would have.
	var sec corev1.Secret
	Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: releaseName + "-agent-peer-key"}, &sec)).To(Succeed())
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, releaseName+"-agent-peer-key"), Data: sec.Data})).To(Succeed())
	src := "s3://" + bucket + "/" + prefix
	// A fresh directory's first generation is 1 and each sync that copies something publishes the
	// next: the forger adds objects to its prefix and syncs g times, so that it serves generation g.
	inits := []corev1.Container{pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/tpch")}
	for i := int64(1); i <= g; i++ {
		inits = append(inits,
			pqcacheContainer(fmt.Sprintf("put-%d", i), "s3", "put", "/work/tpch/region", fmt.Sprintf("%sadded-%d/", src, i), "--endpoint", endpoint, "--path-style"),
			pqcacheContainer(fmt.Sprintf("sync-%d", i), "sync", src, "/work/copy", "--serve-peers", "--endpoint", endpoint, "--path-style"))
	}
	serve := pqcacheContainer("serve", "peer", "serve", "--listen", fmt.Sprintf(":%d", forgerPort), bucketName+"=/work/copy")
	serve.Env = append(serve.Env, key("PQCACHE_PEER_KEY_ID"), key("PQCACHE_PEER_SECRET"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forger", Labels: map[string]string{"app": "forger"}},
		Spec: corev1.PodSpec{SecurityContext: podSec, InitContainers: inits, Containers: []corev1.Container{serve},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	Expect(c.Create(ctx, pod)).To(Succeed())
	Eventually(func(gm Gomega) {
		gm.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		gm.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "forger: %s", describePods(ns, "forger"))
		gm.Expect(pod.Status.PodIP).NotTo(BeEmpty())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return fmt.Sprintf("http://%s:%d", strings.TrimSpace(pod.Status.PodIP), forgerPort)
}
