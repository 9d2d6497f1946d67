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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// eventsURL is where in-cluster stores reach the operator's event endpoint: its Service (the chart's
// RELEASE-events), by DNS name.
var eventsURL = envOr("PQCACHE_E2E_EVENTS_URL", "http://"+releaseName+"-events."+releaseNamespace+".svc.cluster.local:8082")

var _ = Describe("A Dataset refreshed by S3 event notifications", Ordered, func() {
	const (
		token       = "e2e-webhook-token-0123456789"
		eventPrefix = "events/sf0.01/"
		newKey      = "orders/date=2026-12-02/part-new.parquet"
	)
	var (
		ns       string
		endpoint string
		ds       datav1alpha1.Dataset
	)

	BeforeAll(func() {
		ns = newNamespace("pqcache-events-")
		endpoint, ds = eventDrivenDataset(ns, token, eventPrefix, "orders/date=2026-12-02/", "@daily", func(endpoint string) {
			runJob(ns, "load",
				pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "partitioned", "--files-per-table", "2", "--out", "/work/tpch"),
				pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+eventPrefix, "--endpoint", endpoint, "--path-style"),
			)
		})
		Expect(ds.Status.LastSync.Trigger).To(Equal("Initial"))
	})

	// syncedBy waits for a finished sync started by trigger after the given one, and returns its result.
	syncedBy := func(trigger, after string) *datav1alpha1.SyncResult {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.LastSync).NotTo(BeNil())
			g.Expect(ds.Status.LastSync.JobName).NotTo(Equal(after))
			g.Expect(ds.Status.LastSync.Trigger).To(Equal(trigger), "%+v", ds.Status.LastSync)
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		return ds.Status.LastSync
	}

	It("publishes a new partition seconds after it lands, without listing the prefix", func() {
		files := ds.Status.Manifest.Files
		before := ds.Status.LastSync.JobName
		start := time.Now()
		runJob(ns, "new-partition",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("put", "s3", "put", "/work/tpch/orders.parquet", "s3://"+bucket+"/"+eventPrefix+newKey, "--endpoint", endpoint, "--path-style"),
		)
		last := syncedBy("Events", before)
		GinkgoWriter.Printf("PUT job start to published: %s; status lag %d ms\n", time.Since(start).Round(time.Millisecond), ds.Status.Events.LagMillis)
		Expect(last.Result).To(Equal(datav1alpha1.SyncSucceeded), "%+v", last)
		Expect(last.ListRequests).To(BeZero(), "a targeted sync lists nothing")
		Expect(last.FilesCopied).To(Equal(int64(1)))
		Expect(ds.Status.Manifest.Files).To(Equal(files + 1))
		// The batch settles once the sync's status is written; its counters follow on the next pass.
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.Events.Applied).To(BeNumerically(">=", 1))
			g.Expect(ds.Status.Events.LagMillis).To(BeNumerically(">", 0))
		}).WithTimeout(15 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("applies a delete the same way", func() {
		files := ds.Status.Manifest.Files
		before := ds.Status.LastSync.JobName
		runJob(ns, "delete-partition",
			pqcacheContainer("rm", "s3", "rm", "s3://"+bucket+"/"+eventPrefix+newKey, "--endpoint", endpoint, "--path-style"))
		last := syncedBy("Events", before)
		Expect(last.Result).To(Equal(datav1alpha1.SyncSucceeded), "%+v", last)
		Expect(last.ListRequests).To(BeZero())
		Expect(last.FilesDeleted).To(Equal(int64(1)))
		Expect(ds.Status.Manifest.Files).To(Equal(files - 1))
	})
})

// eventDrivenDataset starts versitygw in ns with its bucket notifications posted to the operator's
// endpoint, lets load fill the bucket, then creates Dataset "live" over prefix with a webhook event
// source (the token in Secret hook-token), fresh as its fresh prefix and the listing schedule, and waits until it is Ready
// and its event source flows. It returns the S3 endpoint and the Dataset.
func eventDrivenDataset(ns, token, prefix, fresh, schedule string, load func(endpoint string)) (string, datav1alpha1.Dataset) {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, "hook-token"), StringData: map[string]string{"token": token}})).To(Succeed())
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: objectMeta(ns, s3Secret),
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s3AccessKey, "AWS_SECRET_ACCESS_KEY": s3SecretKey}})).To(Succeed())
	By("starting versitygw with its bucket notifications posted to the operator's endpoint " + eventsURL)
	endpoint := startS3Pod(ns, "versitygw", "--event-webhook-url", fmt.Sprintf("%s/events/%s/live?token=%s", eventsURL, ns, token))
	load(endpoint)
	var ds datav1alpha1.Dataset
	fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: live, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
  fresh: [%q]
  refresh:
    schedule: %q
    events: {webhook: {tokenSecretRef: {name: hook-token}}}
`, ns, bucket, prefix, endpoint, s3Secret, fresh, schedule)
	Expect(c.Create(ctx, &ds)).To(Succeed())
	waitReady(&ds, 3*time.Minute)
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
		cond := meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionEventSource)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%+v", cond)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	return endpoint, ds
}
