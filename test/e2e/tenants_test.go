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
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

const (
	// tenantLabel marks the nodes on which both tenants of these specs keep copies.
	tenantLabel = "pqcache.dev/e2e-tenants"
	// tenantsToken is the good tenant's webhook token.
	tenantsToken = "tenants-webhook-token-0123456789"
	// agentCacheRoot is where the suite's chart keeps the agents' copies on each node.
	agentCacheRoot = "/var/lib/kubelet/pqcache-copies"
	// lagObjects is how many objects each lag measurement writes, one per second.
	lagObjects = 30
)

// hostileRules are the buckets of the hostile tenant's endpoint and how each misbehaves
// (test/hostiles3): a listing that never ends, a 100 MiB listing page, a listing whose answer never
// comes, files that trickle in a byte a second, a storm of 503s, continuation tokens that repeat,
// files that are not what the listing said, and redirects to another host.
var hostileRules = map[string]string{
	"endless-body":   "endless-body:list",
	"huge-document":  "huge-document:list",
	"slow-headers":   "slow-headers:list",
	"slow-body":      "slow-body:get",
	"storm":          "503-storm",
	"repeat-token":   "repeat-token:list",
	"wrong-checksum": "wrong-checksum:get",
	"redirect-away":  "redirect-away",
}

// stillCopying are the hostile buckets whose syncs do not fail within the spec: none since a body
// that trickles a byte a second fails under the stores' body floor (a minute: SourceTooSlow) instead
// of holding its transfer slots until the sync's deadline (at least 15 minutes).
var stillCopying = map[string]bool{}

// Two tenants on the same node agents (issue 35): one Dataset whose endpoint behaves, and one tenant
// whose Datasets point at an endpoint that misbehaves in every way at once. The good tenant's
// freshness must not notice.
var _ = Describe("Two tenants on the same nodes, one of whose endpoints misbehaves", Ordered, Serial, func() {
	var (
		goodNS, observerNS, endpoint, follower string
		good                                   datav1alpha1.Dataset
	)
	const goodPrefix = "tenants/good/"

	BeforeAll(func() {
		nodes := readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3), "these specs need 3 nodes: hack/local-cluster up --nodes 3")
		for _, n := range nodes {
			setNodeLabel(n.Name, tenantLabel, "yes")
			DeferCleanup(setNodeLabel, n.Name, tenantLabel, "")
		}
		goodNS = newNamespace("pqcache-good-")
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(goodNS, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(goodNS, "hook-token"), StringData: map[string]string{"token": tenantsToken}})).To(Succeed())
		manager := podOf(releaseNamespace, map[string]string{"app.kubernetes.io/component": "manager"})
		endpoint = startS3PodOn(goodNS, "versitygw", map[string]string{corev1.LabelHostname: manager.Spec.NodeName},
			"--event-webhook-url", fmt.Sprintf("%s/events/%s/good?token=%s", eventsURL, goodNS, tenantsToken))
		runJob(goodNS, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("put", "s3", "put", "/work/tpch/region.parquet", "s3://"+bucket+"/"+goodPrefix+"region.parquet", "--endpoint", endpoint, "--path-style"))
		fromYAML(&good, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: good, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
  refresh:
    events: {webhook: {tokenSecretRef: {name: hook-token}}}
`, goodNS, bucket, goodPrefix, endpoint, s3Secret, tenantLabel)
		Expect(c.Create(ctx, &good)).To(Succeed())
		waitCopies(&good, len(nodes), 3*time.Minute)
		follower = followerNode(goodNS, good.Name)
		// The lag is read on a follower's disk, which the restricted profile of the tenants' namespaces
		// does not let a pod mount: the observer's namespace is the suite's own, privileged.
		observerNS = privilegedNamespace("pqcache-observer-")
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(observerNS, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
	})

	// lag writes lagObjects objects under sub/ at one per second and times each until it appears in the
	// copy on the follower's node.
	lag := func(sub string) map[string]float64 {
		GinkgoHelper()
		copyDir := fmt.Sprintf("%s/%s/%s-%s", agentCacheRoot, goodNS, good.Name, good.UID)
		run := testkitContainer("lag", "lag", "--endpoint", endpoint, "--path-style", "--bucket", bucket,
			"--prefix", goodPrefix+sub+"/", "--data", "/copy/"+sub, "--rate", "1", "--count", strconv.Itoa(lagObjects),
			"--timeout", "2m", "--report-file", "/dev/termination-log")
		run.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(int64(0)), ReadOnlyRootFilesystem: ptr.To(true)}
		// Small, so that it fits on the follower's node beside the suite's other pods (2 cores a node).
		run.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
		run.VolumeMounts = append(run.VolumeMounts, corev1.VolumeMount{Name: "copy", MountPath: "/copy", ReadOnly: true})
		job := &batchv1.Job{ObjectMeta: objectMeta(observerNS, sub), Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				NodeSelector: map[string]string{corev1.LabelHostname: follower}, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{run},
				Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "copy", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: copyDir}}}},
			}}}}
		Expect(c.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Failed).To(BeZero(), "lag Job %s failed: %s", sub, describePods(observerNS, sub))
			g.Expect(job.Status.Succeeded).To(Equal(int32(1)), "lag Job %s has not finished: %s", sub, describePods(observerNS, sub))
		}).WithTimeout(lagObjects*time.Second + 4*time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		var rep map[string]float64
		Expect(json.Unmarshal([]byte(terminationMessage(observerNS, sub, "lag")), &rep)).To(Succeed())
		Expect(rep["published"]).To(BeNumerically("==", lagObjects))
		return rep
	}

	It("keeps the good tenant's event lag while the other's endpoint misbehaves in every way, and no agent restarts", func() {
		alone := lag("alone")
		restarts := agentRestarts()

		hostileNS := newNamespace("pqcache-hostile-")
		hostileEndpoint := startHostileS3(hostileNS)
		for b := range hostileRules {
			var ds datav1alpha1.Dataset
			fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: %s, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: data/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
  refresh: {schedule: "* * * * *"}
`, b, hostileNS, b, hostileEndpoint, s3Secret, tenantLabel)
			Expect(c.Create(ctx, &ds)).To(Succeed())
		}
		By("waiting until every hostile Dataset's seed has failed with a reason, or is held copying")
		reasons := map[string]string{}
		Eventually(func(g Gomega) {
			for b := range hostileRules {
				if stillCopying[b] {
					g.Expect(seedCopying(hostileNS, b)).To(BeTrue(), "the seed of %s is not copying", b)
					reasons[b] = "still copying, held by its trickling source"
					continue
				}
				reason, ok := seedFailure(hostileNS, b)
				g.Expect(ok).To(BeTrue(), "the seed of %s has not failed yet", b)
				reasons[b] = reason
			}
		}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		Expect(reasons["slow-body"]).To(HavePrefix(wire.ReasonSourceTooSlow), "a body that trickles is named within a minute or so")
		with := lag("beside-hostile")
		for b, r := range reasons {
			AddReportEntry("hostile reasons", fmt.Sprintf("%s (%s): %s", b, hostileRules[b], r))
		}
		row := func(name string, rep map[string]float64) string {
			return fmt.Sprintf("| %s | %v | %v ms | %v ms | %v ms |", name, rep["published"], rep["p50Millis"], rep["p99Millis"], rep["maxMillis"])
		}
		for _, line := range []string{"| good tenant | published | p50 | p99 | max |", "|---|---|---|---|---|", row("alone", alone), row("beside the hostile tenant", with)} {
			GinkgoWriter.Println(line)
			AddReportEntry("tenants", line)
		}
		Expect(with["p99Millis"]).To(BeNumerically("<=", 1.5*alone["p99Millis"]),
			"the good tenant's p99 lag went from %v ms alone to %v ms beside the hostile tenant", alone["p99Millis"], with["p99Millis"])
		Expect(agentRestarts()).To(Equal(restarts), "a node agent restarted while serving the hostile tenant")
		for b := range hostileRules {
			if stillCopying[b] {
				Expect(seedCopying(hostileNS, b)).To(BeTrue(), "%s published a generation from a source that trickles", b)
				continue
			}
			_, ok := seedFailure(hostileNS, b)
			Expect(ok).To(BeTrue(), "%s no longer reports its failure", b)
		}
	})

	It("stops a tenant over its byte cap with its reason while the other tenant's copies refresh", func() {
		capped := newNamespace("pqcache-capped-")
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(capped, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: capped, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
    maxBytes: "100"
`, capped, bucket, goodPrefix, endpoint, s3Secret, tenantLabel)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		Eventually(func(g Gomega) {
			reason, ok := seedFailure(capped, ds.Name)
			g.Expect(ok).To(BeTrue(), "the capped Dataset's seed has not failed yet")
			g.Expect(reason).To(HavePrefix(wire.ReasonOverByteCap))
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		Expect(c.Get(ctx, client.ObjectKeyFromObject(&good), &good)).To(Succeed())
		before := good.Status.Replicas.Generation
		runJob(goodNS, "more", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("put", "s3", "put", "/work/tpch/nation.parquet", "s3://"+bucket+"/"+goodPrefix+"nation.parquet", "--endpoint", endpoint, "--path-style"))
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&good), &good)).To(Succeed())
			g.Expect(good.Status.Replicas.Generation).To(BeNumerically(">", before))
			for _, r := range replicasOf(goodNS, good.Name) {
				g.Expect(r.Status.Generation).To(Equal(good.Status.Replicas.Generation), "the good copy on %s", r.Spec.NodeName)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		reason, ok := seedFailure(capped, ds.Name)
		Expect(ok).To(BeTrue())
		Expect(reason).To(HavePrefix(wire.ReasonOverByteCap), "the capped tenant is still stopped by its cap")
		AddReportEntry("byte cap", reason)
	})
})

// privilegedNamespace creates a namespace the suite's own observers may mount node paths in, and
// deletes it afterwards.
func privilegedNamespace(prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	ns.GenerateName = prefix
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}
	Expect(c.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(c.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// startHostileS3 runs `pqcache-testkit hostile-s3` with hostileRules behind a Service, with a few objects in
// every bucket, and returns its endpoint. Its credentials Secret holds any keys: it checks none.
func startHostileS3(ns string) string {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "hostile", "AWS_SECRET_ACCESS_KEY": "hostile-secret"}})).To(Succeed())
	args := []string{"hostile-s3", "--listen", fmt.Sprintf(":%d", s3Port), "--objects", "8"}
	for b, rule := range hostileRules {
		args = append(args, "--rule", b+"="+rule)
	}
	podSec, _ := restricted()
	server := testkitContainer("hostile", args...)
	// It streams endless and huge answers: bounded, and small enough to leave the nodes' CPUs to the
	// tenants' agents and the lag's pod.
	server.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hostile-s3", Labels: map[string]string{"app": "hostile-s3"}},
		Spec: corev1.PodSpec{SecurityContext: podSec, Containers: []corev1.Container{server},
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	Expect(c.Create(ctx, pod)).To(Succeed())
	return exposeReady(pod, s3Port)
}

// seedFailure is the reason the seed copy of Dataset name gives for not being Ready, when it has one.
func seedFailure(ns, name string) (string, bool) {
	for _, r := range replicasOf(ns, name) {
		if r.Spec.Role != datav1alpha1.RoleSeed {
			continue
		}
		cond := meta.FindStatusCondition(r.Status.Conditions, datav1alpha1.ConditionReady)
		if cond != nil && cond.Status == metav1.ConditionFalse && r.Status.LastSync != nil {
			return cond.Reason + ": " + cond.Message, true
		}
	}
	return "", false
}

// seedCopying says the seed copy of Dataset name has published nothing yet and has not failed.
func seedCopying(ns, name string) bool {
	for _, r := range replicasOf(ns, name) {
		if r.Spec.Role == datav1alpha1.RoleSeed {
			_, failed := seedFailure(ns, name)
			return !failed && r.Status.Generation == 0
		}
	}
	return false
}

// agentRestarts is the sum of the node agents' container restarts.
func agentRestarts() int32 {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(c.List(ctx, &pods, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/component": "agent"})).To(Succeed())
	var n int32
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			n += s.RestartCount
		}
	}
	return n
}
