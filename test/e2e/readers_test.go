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
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// readCheck is what `pqcache-testkit read-check` reports.
type readCheck struct {
	Queries     int      `json:"queries"`
	Errors      int      `json:"errors"`
	Mixed       int      `json:"mixed"`
	Markers     []int64  `json:"markers"`
	FirstError  string   `json:"firstError"`
	Generations []string `json:"generations"`
}

var _ = Describe("A reader of a Dataset that refreshes under it", Ordered, func() {
	const (
		versions   = 11 // the initial data and ten refreshes
		partitions = 4
		rows       = 10000
	)
	var (
		ns, endpoint string
		ds           datav1alpha1.Dataset
	)

	BeforeAll(func() {
		ns = newNamespace("pqcache-readers-")
		endpoint = startS3(ns)
		By("writing 11 versions of a 4-partition table, every row marked with its version, each from the second on without one partition")
		runJob(ns, "versions",
			testkitContainer("marks", "marks", "--out", "/work/m", "--versions", strconv.Itoa(versions),
				"--partitions", strconv.Itoa(partitions), "--rows", strconv.Itoa(rows)),
			pqcacheContainer("put", "s3", "put", "/work/m", "s3://"+bucket+"/readers/", "--endpoint", endpoint, "--path-style"),
		)
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: marked, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: readers/v1/, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi}
`, ns, bucket, endpoint, s3Secret)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitReady(&ds, 3*time.Minute)
	})

	It("sees exactly one generation's rows in every query, and no error, through ten refreshes", func() {
		By("starting a reader pod that queries the current generation in a loop")
		job := claimReaderJob(ns, "reader", ds.Status.ClaimName, "/data", testkitContainer("read", "read-check", "--data", "/data", "--rows", strconv.Itoa(rows),
			"--until-marker", strconv.Itoa(versions), "--duration", "10m", "--report-file", "/dev/termination-log"))
		Expect(c.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": "reader"})).To(Succeed())
			g.Expect(pods.Items).NotTo(BeEmpty())
			g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		for v := 2; v <= versions; v++ {
			By(fmt.Sprintf("refresh %d: the source moves to version %d, rewriting every partition and deleting one", v-1, v))
			Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			patch := client.MergeFrom(ds.DeepCopy())
			ds.Spec.Source.S3.Prefix = fmt.Sprintf("readers/v%d/", v)
			Expect(c.Patch(ctx, &ds, patch)).To(Succeed())
			want := ds.Generation
			Eventually(func(g Gomega) {
				g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
				g.Expect(ds.Status.LastSync).NotTo(BeNil())
				g.Expect(ds.Status.LastSync.SpecGeneration).To(Equal(want))
				g.Expect(ds.Status.LastSync.Result).To(Equal(datav1alpha1.SyncSucceeded), "%+v", ds.Status.LastSync)
			}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			wantFiles := int64(partitions - 1)
			Expect(ds.Status.Manifest.Files).To(Equal(wantFiles))
			time.Sleep(time.Second) // let the reader query this generation a few times
		}

		By("reading what the reader saw")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Failed).To(BeZero(), "reader failed: %s", describePods(ns, "reader"))
			g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		var rep readCheck
		msg := terminationMessage(ns, "reader", "read")
		Expect(json.Unmarshal([]byte(msg), &rep)).To(Succeed(), "read-check report %q", msg)
		GinkgoWriter.Printf("reader: %d queries, %d errors, %d mixed, markers %v, generations %v\n", rep.Queries, rep.Errors, rep.Mixed, rep.Markers, rep.Generations)
		Expect(rep.Errors).To(BeZero(), "query errors (first: %s)", rep.FirstError)
		Expect(rep.Mixed).To(BeZero(), "queries that saw rows of two refreshes, or an incomplete partition")
		Expect(rep.Markers).To(ContainElement(int64(versions)))
		Expect(len(rep.Markers)).To(BeNumerically(">=", 5), "the reader should have seen most refreshes")
		Expect(len(rep.Generations)).To(BeNumerically(">=", 5))
		Expect(ds.Status.Generations).NotTo(BeNil())
		// Every generation superseded less than 5 minutes ago is kept, for readers that do not hold one.
		Expect(ds.Status.Generations.Current).To(Equal(ds.Status.Manifest.Generation))
		Expect(len(ds.Status.Generations.Kept)).To(BeNumerically(">=", 2))
		Expect(ds.Status.Generations.ExtraBytes).To(BeNumerically(">", 0))
	})
})
