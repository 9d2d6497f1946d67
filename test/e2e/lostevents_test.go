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
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Changes whose notifications never arrive (made through a second gateway that sends none) must reach
// the volume by the schedule's listing within one interval plus a sync, while a steady stream of
// notified PUTs keeps targeted syncs running more often than that interval.
var _ = Describe("A busy bucket whose store loses some notifications", Ordered, func() {
	const (
		token    = "e2e-lost-events-token-0123456789"
		prefix   = "lost/"
		interval = time.Minute
		// streamed notified PUTs, one every 25 s: more often than the listing interval
		streamed = 5
	)
	var (
		ns, endpoint string
		ds           datav1alpha1.Dataset
	)

	BeforeAll(func() {
		ns = newNamespace("pqcache-lost-events-")
		endpoint, ds = eventDrivenDataset(ns, token, prefix, "fresh/", "@every 1m", func(endpoint string) {
			runJob(ns, "load",
				pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
				pqcacheContainer("put", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+prefix, "--endpoint", endpoint, "--path-style"))
		})
	})

	It("repairs them at the next listing, which targeted syncs never postpone", func() {
		filesBefore := ds.Status.Manifest.Files
		By("streaming a notified PUT every 25 s, each timed until it is on the volume")
		stream := claimReaderJob(ns, "stream", ds.Status.ClaimName, "/cache", testkitContainer("lag", "lag", "--endpoint", endpoint, "--path-style",
			"--bucket", bucket, "--prefix", prefix, "--data", "/cache", "--rate", "0.04", "--count", strconv.Itoa(streamed), "--timeout", "2m", "--report-file", "/dev/termination-log"))
		Expect(c.Create(ctx, stream)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.LastTargetedSyncTime).NotTo(BeNil(), "no targeted sync yet")
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("adding, overwriting and deleting objects through the gateway that sends no notifications")
		quiet := quietEndpoint(endpoint)
		runJob(ns, "quiet-changes",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("add", "s3", "put", "/work/tpch/customer.parquet", "s3://"+bucket+"/"+prefix+"quiet-new.parquet", "--endpoint", quiet, "--path-style"),
			pqcacheContainer("overwrite", "s3", "put", "/work/tpch/nation.parquet", "s3://"+bucket+"/"+prefix+"region.parquet", "--endpoint", quiet, "--path-style"),
			pqcacheContainer("delete", "s3", "rm", "s3://"+bucket+"/"+prefix+"supplier.parquet", "--endpoint", quiet, "--path-style"))
		quietDone := time.Now()

		By("waiting for the listing that started after them")
		var listed time.Time
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			ll := ds.Status.LastListingSyncTime
			g.Expect(ll).NotTo(BeNil())
			g.Expect(ll.Time).To(BeTemporally(">=", quietDone.Truncate(time.Second)), "last sync %+v, next listing %v", ds.Status.LastSync, ds.Status.NextSyncTime)
			g.Expect(ds.Status.Events.FoundByListing).To(BeNumerically(">=", 2), "status.events %+v", ds.Status.Events)
			listed = ll.Time
		}).WithTimeout(interval + 2*time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("unnotified changes done at %s; the listing that found them started %s later; %d changes found by listing\n",
			quietDone.Format(time.RFC3339), listed.Sub(quietDone).Round(time.Second), ds.Status.Events.FoundByListing)
		// The schedule counts from the previous listing, so the next one starts within an interval, give
		// or take a targeted sync it waits for.
		Expect(listed.Sub(quietDone)).To(BeNumerically("<=", interval+30*time.Second))

		By("checking every notified PUT arrived by a targeted sync, and the volume holds the bucket")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stream), stream)).To(Succeed())
			g.Expect(stream.Status.Failed).To(BeZero(), "stream Job failed: %s", describePods(ns, stream.Name))
			g.Expect(stream.Status.Succeeded).To(Equal(int32(1)))
		}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		var lag map[string]any
		Expect(json.Unmarshal([]byte(terminationMessage(ns, stream.Name, "lag")), &lag)).To(Succeed())
		Expect(lag["published"]).To(BeNumerically("==", streamed), "%v", lag)
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			// one added and one deleted quietly, and the streamed objects
			g.Expect(ds.Status.Manifest.Files).To(Equal(filesBefore+streamed), "manifest %+v", ds.Status.Manifest)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		// The add and the delete cancel out in the count: read the volume, as a reader would, for each
		// unnotified change. The overwrite put nation's bytes under region.parquet, so that file now
		// holds the same rows as nation.parquet (datagen writes the same rows every run).
		By("reading the volume: the added key is there, the deleted one is gone, the overwritten one holds the new rows")
		check := claimReaderJob(ns, "check", ds.Status.ClaimName, "/cache", pqcacheContainer("query", "query",
			"--data", "/cache/.pqcache/generations/current", "--output", "/dev/termination-log",
			"SELECT (SELECT count(*) FROM glob('{data}/quiet-new.parquet')) AS added, "+
				"(SELECT count(*) FROM glob('{data}/supplier.parquet')) AS deleted, "+
				"(SELECT count(*) FROM read_parquet('{data}/region.parquet')) AS overwritten_rows, "+
				"(SELECT md5(string_agg(t::VARCHAR, ',' ORDER BY t::VARCHAR)) FROM read_parquet('{data}/region.parquet') t) = "+
				"(SELECT md5(string_agg(t::VARCHAR, ',' ORDER BY t::VARCHAR)) FROM read_parquet('{data}/nation.parquet') t) AS overwritten_is_nation"))
		Expect(c.Create(ctx, check)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(check), check)).To(Succeed())
			g.Expect(check.Status.Failed).To(BeZero(), "check Job failed: %s", describePods(ns, check.Name))
			g.Expect(check.Status.Succeeded).To(Equal(int32(1)))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(terminationMessage(ns, check.Name, "query")).To(Equal("added\tdeleted\toverwritten_rows\toverwritten_is_nation\n1\t0\t25\ttrue\n"),
			"TPC-H's nation has 25 rows, its region 5")
	})
})
