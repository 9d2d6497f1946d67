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
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// A Dataset that names no credentials, in a namespace the chart does not allow ambient credentials
// (the suite installs the chart's default: none), is read anonymously; the in-cluster versitygw
// refuses that, and the Dataset says which setting would allow it. Its worker runs in the namespace,
// where the node's identity would otherwise be within reach.
var _ = Describe("No borrowed identity", func() {
	It("gives a Dataset without credentials the ambient-identity reason", func() {
		ns := newNamespace("pqcache-ambient-")
		endpoint := startS3(ns)
		// The bucket exists and holds data, so that the store's answer to an anonymous listing is its
		// refusal (a store may say NoSuchBucket first, as versitygw does for a bucket it lacks).
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "1", "--out", "/work/tpch"),
			pqcacheContainer("put", "s3", "put", "/work/tpch/region", "s3://"+bucket+"/some/", "--endpoint", endpoint, "--path-style"))
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: borrowed, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: nothing/, endpoint: %s, forcePathStyle: true}
  volume: {capacity: 1Gi}
`, ns, bucket, endpoint)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			degraded := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Reason).To(Equal(wire.ReasonAmbientCredentialsNotAllowed), conditionsString(ds.Status.Conditions))
			g.Expect(degraded.Message).To(ContainSubstring("ambientCredentials.namespaces"))
			// Retrying will not help: Stalled, for Flux and Argo CD.
			stalled := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(wire.ReasonAmbientCredentialsNotAllowed))
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})
})
