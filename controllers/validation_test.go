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

package controllers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// A fixture is a YAML file of one or more objects. Every object but the last is created first and
// must be accepted; the last is then created or, when it names an object created before it, applied
// as an update of that object's spec. Invalid fixtures start with "# expect: <message>", a substring
// of the API server's error.
type fixture struct {
	name   string
	expect string
	objs   []*unstructured.Unstructured
}

func loadFixture(path string) fixture {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	f := fixture{name: strings.TrimSuffix(filepath.Base(path), ".yaml")}
	first, _, _ := bufio.NewReader(bytes.NewReader(data)).ReadLine()
	if rest, ok := strings.CutPrefix(string(first), "# expect: "); ok {
		f.expect = rest
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Fail(fmt.Sprintf("decoding %s: %v", path, err))
		}
		if len(u.Object) > 0 {
			f.objs = append(f.objs, u)
		}
	}
	Expect(f.objs).NotTo(BeEmpty(), "%s holds no object", path)
	return f
}

// apply creates the fixture's objects in namespace ns and returns the API server's answer to the last.
func (f fixture) apply(ns string) error {
	GinkgoHelper()
	created := map[string]bool{}
	key := func(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }
	for _, u := range f.objs[:len(f.objs)-1] {
		u.SetNamespace(ns)
		Expect(k8sClient.Create(ctx, u)).To(Succeed(), "setup object %s of %s", key(u), f.name)
		created[key(u)] = true
	}
	last := f.objs[len(f.objs)-1]
	last.SetNamespace(ns)
	if !created[key(last)] {
		return k8sClient.Create(ctx, last)
	}
	// The manager may write status between our read and our update: retry conflicts, as kubectl does.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(last.GroupVersionKind())
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(last), current); err != nil {
			return err
		}
		current.Object["spec"] = last.Object["spec"]
		return k8sClient.Update(ctx, current)
	})
}

func fixtureFiles(dir string) []string {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
	if err != nil {
		panic(err)
	}
	sort.Strings(files)
	return files
}

func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pqcache-test-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

var _ = Describe("CRD validation", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	invalid := fixtureFiles("invalid")
	It("has a broad table of invalid manifests", func() {
		Expect(len(invalid)).To(BeNumerically(">=", 12))
	})
	for _, path := range invalid {
		It("rejects "+filepath.Base(path)+" with a readable message", func() {
			f := loadFixture(path)
			Expect(f.expect).NotTo(BeEmpty(), "%s needs a '# expect: <message>' first line", path)
			err := f.apply(ns)
			Expect(err).To(HaveOccurred(), "the API server accepted %s", f.name)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			Expect(err.Error()).To(ContainSubstring(f.expect))
			GinkgoWriter.Printf("%s: %v\n", f.name, err)
		})
	}

	for _, path := range fixtureFiles("valid") {
		It("accepts "+filepath.Base(path), func() {
			Expect(loadFixture(path).apply(ns)).To(Succeed())
		})
	}

	It("fills in the documented defaults of a minimal Dataset", func() {
		Expect(loadFixture(filepath.Join("testdata", "valid", "ds-minimal.yaml")).apply(ns)).To(Succeed())
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
		Expect(loadFixture(filepath.Join("testdata", "valid", "br-minimal.yaml")).apply(ns)).To(Succeed())
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
