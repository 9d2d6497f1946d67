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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/internal/s3creds"
)

// endpointLabel marks the nodes this file's Dataset keeps copies on.
const endpointLabel = "pqcache.dev/e2e-endpoint"

// s3CheckReport is what `pqcache-testkit s3-check` reports.
type s3CheckReport struct {
	Listed    []string          `json:"listed"`
	ListError string            `json:"listError"`
	Objects   map[string]string `json:"objects"`
}

// Readers that change only their endpoint (issue 46): each node's agent serves its copies over S3 to
// the pods of its node, under the bucket's own keys, each namespace its own Datasets.
var _ = Describe("Reading a Dataset through its node's S3 endpoint", Ordered, func() {
	const prefix = "endpoint/tpch/"
	var (
		ns         string
		s3Endpoint string
		nodes      []corev1.Node
		ds         datav1alpha1.Dataset
	)

	BeforeAll(func() {
		nodes = readyNodes()
		Expect(len(nodes)).To(BeNumerically(">=", 3), "these specs need a node without a copy: hack/local-cluster up --nodes 3")
		for _, n := range nodes[:2] {
			setNodeLabel(n.Name, endpointLabel, "yes")
			DeferCleanup(setNodeLabel, n.Name, endpointLabel, "")
		}
		ns = newNamespace("pqcache-endpoint-")
		s3Endpoint = startS3(ns)
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+prefix, "--endpoint", s3Endpoint, "--path-style"))
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: tpch, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  replicas:
    nodeSelector: {%s: "yes"}
`, ns, bucket, prefix, s3Endpoint, s3Secret, endpointLabel)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitCopies(&ds, 2, 5*time.Minute)
	})

	It("issues the namespace its key and the endpoint's CA", func() {
		Eventually(func(g Gomega) {
			var sec corev1.Secret
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s3creds.SecretName}, &sec)).To(Succeed())
			key, err := s3creds.ParseAccessKeyID(string(sec.Data["AWS_ACCESS_KEY_ID"]))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(key.Namespace).To(Equal(ns))
			var cm corev1.ConfigMap
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s3creds.ConfigMapName}, &cm)).To(Succeed())
			g.Expect(cm.Data["ca.crt"]).To(ContainSubstring("BEGIN CERTIFICATE"))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("serves a pod beside a copy the bucket's own keys and bytes, and NoSuchKey for what it does not hold", func() {
		direct := s3Check(ns, "direct", nil, bucketEnv(s3Endpoint), prefix)
		Expect(direct.ListError).To(BeEmpty())
		Expect(len(direct.Listed)).To(BeNumerically(">", 3))
		keys := []string{direct.Listed[0], direct.Listed[len(direct.Listed)-1]}
		direct = s3Check(ns, "direct-get", nil, bucketEnv(s3Endpoint), prefix, keys...)

		got := s3Check(ns, "reader", &nodes[0], nil, prefix, append(keys, prefix+"no-such-file.parquet")...)
		Expect(got.ListError).To(BeEmpty())
		Expect(got.Listed).To(Equal(direct.Listed), "the endpoint lists the bucket's keys under the prefix")
		for _, k := range keys {
			Expect(got.Objects[k]).To(Equal(direct.Objects[k]), "%s through the endpoint", k)
		}
		Expect(got.Objects[prefix+"no-such-file.parquet"]).To(HavePrefix("error: NoSuchKey"))
	})

	It("refuses a pod on a node without a copy, and another namespace's pods, saying why", func() {
		got := s3Check(ns, "elsewhere", &nodes[2], nil, prefix)
		Expect(got.ListError).To(And(HavePrefix("AccessDenied"), ContainSubstring("whose copy is on this node")))

		other := newNamespace("pqcache-endpoint-other-")
		var theirs datav1alpha1.Dataset
		fromYAML(&theirs, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: theirs, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: other/, endpoint: %s, forcePathStyle: true}
  replicas:
    nodeSelector: {%s: "yes"}
`, other, bucket, s3Endpoint, endpointLabel)
		Expect(c.Create(ctx, &theirs)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(c.Delete(ctx, &theirs))).To(Succeed()) })
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: other, Name: s3creds.SecretName}, &corev1.Secret{})
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		// Its key reads its own Dataset of the same bucket (empty, or not synced yet), never the other's.
		key := prefix + "customer.parquet"
		got = s3Check(other, "intruder", &nodes[0], nil, prefix, key)
		Expect(got.Listed).To(BeEmpty(), "namespace %s listed %s's keys", other, ns)
		if got.ListError != "" {
			Expect(got.ListError).To(HavePrefix("AccessDenied"))
		}
		Expect(got.Objects[key]).To(Or(HavePrefix("error: NoSuchKey"), HavePrefix("error: AccessDenied")))
		Expect(got.Objects[key]+got.ListError).NotTo(ContainSubstring(ns), "a refusal names the other namespace")
	})

	It("answers DuckDB and Polars through the endpoint as from the volume, on nodes holding the copy", func() {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: endpoint, namespace: %s}
spec:
  datasetRef: {name: tpch}
  queries: %s
  engines: [{name: duckdb}, {name: polars}]
  inputs: [{type: volume}, {type: endpoint}]
  configs: [{name: s, cpu: 500m, memory: 1Gi}]
  iterations: 1
  warmups: 0
`, ns, e2eQueries)
		Expect(c.Create(ctx, &br)).To(Succeed())
		waitBenchRun(&br, 10*time.Minute)
		Expect(conditionStatus(br.Status.Conditions, datav1alpha1.ConditionSucceeded)).To(Equal(metav1.ConditionTrue), conditionsString(br.Status.Conditions))
		Expect(br.Status.Results).To(HaveLen(4))
		digests := map[string]map[string]string{}
		for _, r := range br.Status.Results {
			where := r.Engine + "/" + r.Input
			Expect(r.FailedQueries).To(BeEmpty(), where)
			Expect(slices.ContainsFunc(nodes[:2], func(n corev1.Node) bool { return n.Name == r.Node })).To(BeTrue(), "%s ran on %s, which holds no copy", where, r.Node)
			for _, q := range r.Queries {
				if digests[q.Name] == nil {
					digests[q.Name] = map[string]string{}
				}
				digests[q.Name][where] = q.Digest
			}
			GinkgoWriter.Printf("%s: geomean %d ms, network bytes %d\n", where, r.GeometricMeanMillis, r.NetworkReadBytes)
		}
		for q, by := range digests {
			Expect(by).To(HaveLen(4), q)
			Expect(by["duckdb/endpoint"]).To(Equal(by["duckdb/volume"]), "%s: DuckDB's answer through the endpoint", q)
			Expect(by["polars/endpoint"]).To(Equal(by["polars/volume"]), "%s: Polars' answer through the endpoint", q)
		}
	})

	It("keeps a reader's session on the generation it began with through two refreshes", func() {
		keys := []string{prefix + "region.parquet", prefix + "nation.parquet"}
		session := "pqcache-pin/v1;s=e2e-reader"
		first := s3CheckWith(ns, "session-0", &nodes[0], nil, session, prefix, keys...)
		for _, k := range keys {
			Expect(first.Objects[k]).To(HavePrefix("sha256:"), "%s before the refreshes", k)
		}
		for i, k := range keys {
			By(fmt.Sprintf("refresh %d: deleting %s from the bucket", i+1, k))
			runJob(ns, fmt.Sprintf("delete-%d", i), pqcacheContainer("rm", "s3", "rm", "s3://"+bucket+"/"+k, "--endpoint", s3Endpoint, "--path-style"))
			Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			before := ds.Status.Replicas.Generation
			patch := client.MergeFrom(ds.DeepCopy())
			ds.Spec.Refresh.Manual = fmt.Sprintf("e2e-session-%d", i)
			Expect(c.Patch(ctx, &ds, patch)).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
				g.Expect(ds.Status.Replicas.Generation).To(BeNumerically(">", before))
			}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			waitCopies(&ds, 2, 2*time.Minute)

			same := s3CheckWith(ns, fmt.Sprintf("session-%d", i+1), &nodes[0], nil, session, prefix, keys...)
			Expect(same.Objects).To(Equal(first.Objects), "the session's reads after refresh %d", i+1)
			Expect(same.Listed).To(Equal(first.Listed), "the session's listing after refresh %d", i+1)
		}
		fresh := s3CheckWith(ns, "session-new", &nodes[0], nil, "pqcache-pin/v1;s=e2e-newcomer", prefix, keys...)
		for _, k := range keys {
			Expect(fresh.Objects[k]).To(HavePrefix("error: NoSuchKey"), "a new session reads the newest generation, without %s", k)
		}
		Expect(fresh.Listed).To(HaveLen(len(first.Listed) - 2))
	})
})

// bucketEnv reads the bucket itself, with the Dataset's keys (the e2e S3 Secret).
func bucketEnv(endpoint string) []corev1.EnvVar {
	return []corev1.EnvVar{{Name: "AWS_ENDPOINT_URL", Value: endpoint}}
}

// s3Check runs `pqcache-testkit s3-check` in ns: with env, against the bucket; with none, as a
// reader of the node's S3 endpoint configured by the namespace's Secret and ConfigMap only (as the
// docs show), on node when one is given. It lists prefix and GETs keys.
func s3Check(ns, name string, node *corev1.Node, env []corev1.EnvVar, prefix string, keys ...string) s3CheckReport {
	GinkgoHelper()
	return s3CheckWith(ns, name, node, env, "", prefix, keys...)
}

// s3CheckWith is s3Check with a session token for a reader of the endpoint (a pin: "" for none).
func s3CheckWith(ns, name string, node *corev1.Node, env []corev1.EnvVar, token, prefix string, keys ...string) s3CheckReport {
	GinkgoHelper()
	args := []string{"s3-check", "--bucket", bucket, "--prefix", prefix, "--report-file", "/dev/termination-log"}
	for _, k := range keys {
		args = append(args, "--key", k)
	}
	check := testkitContainer(name, args...)
	if env != nil {
		check.Env = append(check.Env, env...)
	} else {
		check.Env = []corev1.EnvVar{{Name: "AWS_CA_BUNDLE", Value: "/etc/pqcache-s3/ca.crt"}, {Name: "AWS_EC2_METADATA_DISABLED", Value: "true"}}
		if token != "" {
			check.Env = append(check.Env, corev1.EnvVar{Name: "AWS_SESSION_TOKEN", Value: token})
		}
		check.EnvFrom = []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s3creds.SecretName}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s3creds.ConfigMapName}}},
		}
		check.VolumeMounts = append(check.VolumeMounts, corev1.VolumeMount{Name: "pqcache-s3", MountPath: "/etc/pqcache-s3", ReadOnly: true})
	}
	var sel map[string]string
	if node != nil {
		sel = map[string]string{corev1.LabelHostname: node.Labels[corev1.LabelHostname]}
	}
	out := runJobOnWith(ns, name, sel, []corev1.Volume{{Name: "pqcache-s3", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: s3creds.ConfigMapName}, Optional: ptr.To(true)}}}}, check)
	var rep s3CheckReport
	Expect(json.Unmarshal([]byte(strings.TrimSpace(out)), &rep)).To(Succeed(), "s3-check reported %q", out)
	GinkgoWriter.Printf("s3-check %s on %v: listed %d, list error %q, objects %v\n", name, sel, len(rep.Listed), rep.ListError, rep.Objects)
	return rep
}
