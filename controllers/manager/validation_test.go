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

package manager

import (
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/testenv"
)

var _ = Describe("CRD validation", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	invalid := testenv.FixtureFiles("invalid")
	It("has a broad table of invalid manifests", func() {
		Expect(len(invalid)).To(BeNumerically(">=", 12))
	})
	for _, path := range invalid {
		It("rejects "+filepath.Base(path)+" with a readable message", func() {
			f := testenv.LoadFixture(path)
			Expect(f.Want).NotTo(BeEmpty(), "%s needs a '# expect: <message>' first line", path)
			err := f.Apply(ns)
			Expect(err).To(HaveOccurred(), "the API server accepted %s", f.Name)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			Expect(err.Error()).To(ContainSubstring(f.Want))
			GinkgoWriter.Printf("%s: %v\n", f.Name, err)
		})
	}

	for _, path := range testenv.FixtureFiles("valid") {
		It("accepts "+filepath.Base(path), func() {
			Expect(testenv.LoadFixture(path).Apply(ns)).To(Succeed())
		})
	}

	It("fills in the documented defaults of a minimal Dataset", func() {
		Expect(testenv.LoadFixture(testenv.Path("controllers", "testdata", "valid", "ds-minimal.yaml")).Apply(ns)).To(Succeed())
		var ds datav1alpha1.Dataset
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ds-minimal"}, &ds)).To(Succeed())
		Expect(ds.Spec.Volume.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		Expect(ds.Spec.Refresh.OnCreate).To(Equal(ptr.To(true)))
		Expect(ds.Spec.Refresh.Suspend).To(BeFalse())
		Expect(ds.Spec.Sync.Parallelism).To(Equal(int32(8)))
		Expect(ds.Spec.Sync.PartSize).To(Equal(ptr.To(resource.MustParse("16Mi"))))
		Expect(ds.Spec.Sync.Verify).To(Equal(datav1alpha1.VerifyChecksum))
		Expect(ds.Spec.Sync.Prune).To(Equal(ptr.To(true)))
		Expect(ds.Spec.Sync.Timeout.Duration.String()).To(Equal("6h0m0s"))
	})

	It("fills in the documented defaults of a minimal BenchRun", func() {
		Expect(testenv.LoadFixture(testenv.Path("controllers", "testdata", "valid", "br-minimal.yaml")).Apply(ns)).To(Succeed())
		var run datav1alpha1.BenchRun
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "br-minimal"}, &run)).To(Succeed())
		Expect(run.Spec.Engines).To(Equal([]datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineDuckDB}}), "isolation unset: the engine's own default (process for duckdb)")
		Expect(run.Spec.Inputs).To(Equal([]datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}}))
		Expect(run.Spec.Queries).To(BeEmpty(), "empty queries means all 22")
		Expect(run.Spec.Iterations).To(Equal(int32(3)))
		Expect(run.Spec.Warmups).To(Equal(ptr.To(int32(1))))
		Expect(run.Spec.QueryTimeout).To(Equal("30m"))
		Expect(run.Spec.Timeout).To(Equal("6h"))

		// A typed client's update that changes no field must not trip the immutable-spec rule.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "br-minimal"}, &run); err != nil {
				return err
			}
			run.Labels = map[string]string{"team": "analytics"}
			return k8sClient.Update(ctx, &run)
		})).To(Succeed())
	})
})
