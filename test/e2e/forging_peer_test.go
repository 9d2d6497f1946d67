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

// Issue 38, item 3: an agent writes only its own node's DatasetReplicas; the API server denies the
// rest, with a token bound to the agent's pod as the kubelet makes it. (That followers copy only what
// the seed's manifest holds is shown against real agents in agent.TestAFollowerRefusesAForgingPeer:
// on the cluster a forger would need a node's own peer certificate and token, which is the compromised
// node this spec shows confined.)
//
// Needs: the 3-node local cluster with the chart installed by the suite (agent enabled), and a
// Kubernetes whose pod tokens carry their node (1.30+).
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
