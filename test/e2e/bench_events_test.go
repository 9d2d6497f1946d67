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
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// The freshness benchmark of S3 event notifications on a cluster (make bench-events-cluster): a pod
// writes objects into the in-cluster S3 server at a steady rate and watches the Dataset's volume,
// mounted read-only, for each to appear; every object reaches the volume by a targeted sync Job the
// operator starts from versitygw's notifications. It is a benchmark, not a test: `make test-e2e`
// leaves it out by its label, and it asserts only that every object arrived.
var _ = Describe("Freshness by S3 event notifications", Label("benchmark"), Ordered, func() {
	const (
		token  = "bench-webhook-token-0123456789"
		prefix = "bench/events/"
	)
	var (
		ns, endpoint string
		ds           datav1alpha1.Dataset
	)

	BeforeAll(func() {
		ns = newNamespace("pqcache-bench-events-")
		endpoint, ds = eventDrivenDataset(ns, token, prefix, "fresh/", "@daily", func(endpoint string) {
			runJob(ns, "seed", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
				pqcacheContainer("put", "s3", "put", "/work/tpch/region.parquet", "s3://"+bucket+"/"+prefix+"region.parquet", "--endpoint", endpoint, "--path-style"))
		})
	})

	// lag runs `pqcache-testkit lag` in a pod that mounts the Dataset's claim read-only.
	lag := func(name string, rate float64, count int, sub string) map[string]any {
		job := claimReaderJob(ns, name, ds.Status.ClaimName, "/cache", testkitContainer("lag", "lag", "--endpoint", endpoint, "--path-style", "--bucket", bucket,
			"--prefix", prefix+sub, "--data", "/cache/"+sub, "--rate", strconv.FormatFloat(rate, 'f', -1, 64),
			"--count", strconv.Itoa(count), "--timeout", "3m", "--report-file", "/dev/termination-log"))
		Expect(c.Create(ctx, job)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Status.Failed).To(BeZero(), "lag Job %s failed: %s", name, describePods(ns, name))
			g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
		}).WithTimeout(time.Duration(float64(count)/rate*float64(time.Second)) + 5*time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		var rep map[string]any
		Expect(json.Unmarshal([]byte(terminationMessage(ns, name, "lag")), &rep)).To(Succeed())
		return rep
	}

	It("measures the lag from a PUT to its file on the volume at 1 and 20 objects per second", func() {
		var before datav1alpha1.Dataset
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &before)).To(Succeed())
		rows := []string{"| writes | objects | published | p50 | p90 | p99 | max |", "|---|---|---|---|---|---|---|"}
		for _, r := range []struct {
			name, label, sub string
			rate             float64
			count            int
		}{
			{"lag-slow", "1 per second", "steady/", 1, 60},
			{"lag-fast", "20 per second", "steady/", 20, 400},
			{"lag-fresh", "1 per second, fresh prefix", "fresh/", 1, 60},
		} {
			rep := lag(r.name, r.rate, r.count, r.sub)
			Expect(rep["published"]).To(BeNumerically("==", r.count))
			rows = append(rows, fmt.Sprintf("| %s | %v | %v | %v ms | %v ms | %v ms | %v ms |", r.label, rep["written"], rep["published"],
				rep["p50Millis"], rep["p90Millis"], rep["p99Millis"], rep["maxMillis"]))
		}
		Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
		syncs := ds.Status.Events
		rows = append(rows, "", fmt.Sprintf("event counters: %+v", *syncs))
		for _, row := range rows {
			GinkgoWriter.Println(row)
			AddReportEntry("events", row)
		}
		Expect(ds.Status.Events.Applied).To(BeNumerically(">", before.Status.Events.Applied))
	})
})
