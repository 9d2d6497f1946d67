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

// Package e2e is the end-to-end suite: it runs against whatever cluster KUBECONFIG names (the local
// cluster from hack/, kind, a real one), with pqcache already installed there, and checks what a user
// would see. `make test` never runs it; `make test-e2e` does.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

var (
	ctx = context.Background()
	c   client.Client
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "pqcache e2e")
}

var _ = BeforeSuite(func() {
	Expect(os.Getenv("KUBECONFIG")).NotTo(BeEmpty(), "set KUBECONFIG to the cluster to test")
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	Expect(err).NotTo(HaveOccurred())
	c, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = Describe("An installed pqcache", func() {
	It("serves established CRDs", func() {
		for _, name := range []string{"datasets.data.pqcache.dev", "benchruns.data.pqcache.dev"} {
			var crd apiextensionsv1.CustomResourceDefinition
			Expect(c.Get(ctx, client.ObjectKey{Name: name}, &crd)).To(Succeed())
			established := false
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			Expect(established).To(BeTrue(), "CRD %s is not Established", name)
		}
	})

	It("initialises the status of the sample Dataset", func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pqcache-e2e-"}}
		Expect(c.Create(ctx, ns)).To(Succeed())
		DeferCleanup(func() { Expect(c.Delete(ctx, ns)).To(Succeed()) })

		data, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "data_v1alpha1_dataset.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var ds datav1alpha1.Dataset
		Expect(utilyaml.Unmarshal(data, &ds)).To(Succeed())
		ds.Namespace = ns.Name
		ds.Spec.Refresh.OnCreate = new(bool) // this test checks status only; it moves no data
		Expect(c.Create(ctx, &ds)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(&ds), &ds)).To(Succeed())
			g.Expect(ds.Status.ObservedGeneration).To(Equal(ds.Generation))
			g.Expect(meta.FindStatusCondition(ds.Status.Conditions, datav1alpha1.ConditionReady)).NotTo(BeNil())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	})
})
