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
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// These specs need the chart's live progress on (hack/local-cluster's values set
// worker.progress.enabled).
var _ = Describe("Namespaces as they come", func() {
	It("shows live progress in a new namespace with nothing made by hand", func() {
		ns := newNamespace("pqcache-e2e-fresh-")
		endpoint := startS3(ns)
		const slowPrefix = "fresh/sf0.01/"
		rep := parsePutReport(runJob(ns, "upload",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+slowPrefix,
				"--endpoint", endpoint, "--path-style", "--report-file", "/dev/termination-log"),
		))
		Expect(rep.Files).To(BeNumerically(">", 8))
		slow := startShapeProxy(ns, "slow-s3", endpoint[len("http://"):], "64KiB")
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: fresh, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
  sync: {parallelism: 1}
`, ns, bucket, slowPrefix, slow, s3Secret)
		Expect(c.Create(ctx, &ds)).To(Succeed())

		By("the operator made the workers' account and its binding, owned by the Dataset")
		var sa corev1.ServiceAccount
		var binding rbacv1.RoleBinding
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: workerServiceAccount}, &sa)).To(Succeed())
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pqcache-worker-progress"}, &binding)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed())
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
		for _, obj := range []client.Object{&sa, &binding} {
			Expect(obj.GetOwnerReferences()).To(ContainElement(HaveField("UID", ds.UID)), "%s", obj.GetName())
		}

		By("the running sync's progress reaches the Dataset's status")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.Progress).NotTo(BeNil(), "conditions %s", conditionsString(ds.Status.Conditions))
			g.Expect(ds.Status.Progress.FilesTotal).To(BeNumerically(">", 0))
		}).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		waitReady(&ds, 5*time.Minute)
	})

	It("says within 60 s that a namespace's quota admits no pods, in the API server's words", func() {
		ns := newNamespace("pqcache-e2e-nopods-")
		Expect(c.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nopods"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}})).To(Succeed())
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
			StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: refused, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: none/, endpoint: "http://s3.invalid:7070", forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
`, ns, bucket, s3Secret)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			cond := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(datav1alpha1.ReasonJobRejected), "conditions %s", conditionsString(ds.Status.Conditions))
			g.Expect(cond.Message).To(ContainSubstring("exceeded quota: nopods"))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
})
