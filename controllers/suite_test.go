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
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// The suite runs the real reconcilers in a real manager against a real kube-apiserver and etcd,
// built from the Go module proxy by hack/build-envtest.sh (`make envtest`). Envtest runs no kubelet and
// no built-in controllers: tests that need a Job to finish set its status themselves.

// defaultK8sVersion must match ENVTEST_K8S_VERSION in the Makefile.
const defaultK8sVersion = "1.37.2"

var (
	cfg       *rest.Config
	k8sClient client.Client
	testEnv   *envtest.Environment
	ctx       context.Context
	cancel    context.CancelFunc
	// fakeClock drives refresh schedules and backoff; tests step it.
	fakeClock *clocktesting.FakeClock
)

// testWorkerImage is the worker image the suite's controller puts in Jobs.
const testWorkerImage = "example.test/pqcache:test"

// testAgentAccount is the node agents' ServiceAccount that the suite's manager grants Secrets to.
var testAgentAccount = types.NamespacedName{Namespace: "pqcache-system", Name: "pqcache-agent"}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	k8sVersion := os.Getenv("ENVTEST_K8S_VERSION")
	if k8sVersion == "" {
		k8sVersion = defaultK8sVersion
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join("..", "bin", "k8s", k8sVersion+"-linux-amd64")
	}
	_, err := os.Stat(filepath.Join(assets, "kube-apiserver"))
	Expect(err).NotTo(HaveOccurred(), "no kube-apiserver in %s: run `make envtest` to build it from the Go module proxy", assets)

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		DownloadBinaryAssets:  false,
	}
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	// The control plane must be the one the hack script built, at the pinned versions.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	sv, err := dc.ServerVersion()
	Expect(err).NotTo(HaveOccurred())
	Expect(sv.GitVersion).To(Equal("v"+k8sVersion), "kube-apiserver in %s reports %s", assets, sv.GitVersion)
	etcdVersion, err := exec.Command(filepath.Join(assets, "etcd"), "--version").Output()
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("control plane", "kube-apiserver "+sv.GitVersion+"; "+string(etcdVersion))
	GinkgoWriter.Printf("envtest control plane: kube-apiserver %s, %s", sv.GitVersion, etcdVersion)

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The manager's cache as the operator configures it: pqcache's own Jobs only.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   CacheOptions(nil),
	})
	Expect(err).NotTo(HaveOccurred())
	fakeClock = clocktesting.NewFakeClock(time.Now())
	worker := DefaultWorkerOptions()
	worker.Image = testWorkerImage
	Expect(SetupAll(mgr, Options{Clock: fakeClock, Worker: worker, MaxConcurrentSyncs: 100, MaxConcurrentBenchJobs: 3,
		AdmissionSweepInterval: 2 * time.Second, AgentAccount: testAgentAccount})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
