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
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

const tableLabel = "pqcache.dev/e2e-table"

var _ = Describe("A Delta table Dataset", Ordered, func() {
	const root = "tables/lineitem/"

	It("copies exactly the newest committed version onto a node, and serves that version through its S3 endpoint", func() {
		node := readyNodes()[0]
		setNodeLabel(node.Name, tableLabel, "yes")
		DeferCleanup(setNodeLabel, node.Name, tableLabel, "")
		ns := newNamespace("pqcache-table-")
		s3Endpoint := startS3(ns)
		// lineitem in 4 batches: versions 0-3 append, 4 overwrites the first batch, 5 deletes rows of
		// the last: the bucket holds 6 Parquet files, version 5 reads 4 of them.
		runJob(ns, "load", pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--layout", "delta", "--files-per-table", "4", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch/lineitem", "s3://"+bucket+"/"+root, "--endpoint", s3Endpoint, "--path-style"))
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: lineitem, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
    table: {format: Delta}
  replicas:
    nodeSelector: {%s: "yes"}
`, ns, bucket, root, s3Endpoint, s3Secret, tableLabel)
		Expect(c.Create(ctx, &ds)).To(Succeed())
		waitCopies(&ds, 1, 5*time.Minute)
		reps := replicasOf(ns, ds.Name)
		Expect(reps).To(HaveLen(1))
		Expect(reps[0].Status.LastSync).NotTo(BeNil())
		Expect(ptr.Deref(reps[0].Status.LastSync.TableVersion, -1)).To(Equal(int64(5)), "the copy's table version")

		parquet := func(keys []string) []string {
			return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !strings.HasSuffix(k, ".parquet") })
		}
		inBucket := s3Check(ns, "direct", nil, bucketEnv(s3Endpoint), root)
		Expect(inBucket.ListError).To(BeEmpty())
		Expect(parquet(inBucket.Listed)).To(HaveLen(6), "the bucket holds every version's files")
		served := s3Check(ns, "reader", &node, nil, root)
		Expect(served.ListError).To(BeEmpty())
		Expect(parquet(served.Listed)).To(ConsistOf(root+"part-00000-overwrite.parquet", root+"part-00001.parquet",
			root+"part-00002.parquet", root+"part-00003-delete.parquet"), "the endpoint serves version 5's files only")
		Expect(served.Listed).To(ContainElement(root + "_delta_log/00000000000000000005.json"))
	})
})
