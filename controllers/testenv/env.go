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

// Package testenv runs pqcache's reconcilers in a real manager against a real kube-apiserver and etcd
// (envtest), for the controllers' Ginkgo suites, and holds the helpers those suites share: objects
// built as users write them, and what the Job controller and the kubelet would do, which envtest does
// not run. The control plane is the one hack/build-envtest.sh builds (`make envtest`). Only tests
// import it.
package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
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
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// DefaultK8sVersion must match ENVTEST_K8S_VERSION in the Makefile.
const DefaultK8sVersion = "1.37.2"

// WorkerImage is the worker image the suites' controllers put in Jobs.
const WorkerImage = "example.test/pqcache:test"

// AgentAccount is the node agents' ServiceAccount that the suites' managers grant Secrets to.
var AgentAccount = types.NamespacedName{Namespace: "pqcache-system", Name: "pqcache-agent"}

// What Start made, for the specs and the helpers.
var (
	Config *rest.Config
	Client client.Client
	Ctx    context.Context
	// Clock drives the controllers' refresh schedules and backoff; specs step it.
	Clock *clocktesting.FakeClock

	testEnv *envtest.Environment
	cancel  context.CancelFunc
)

// Worker is the worker options the suites' controllers run with: the defaults, with WorkerImage.
func Worker() jobs.WorkerOptions {
	w := jobs.DefaultWorkerOptions()
	w.Image = WorkerImage
	return w
}

// Start starts the control plane with pqcache's CRDs, and a manager whose cache is configured by
// cacheOpts and whose reconcilers setup registers; the manager runs until Stop. Call it from
// BeforeSuite.
func Start(cacheOpts crcache.Options, setup func(ctrl.Manager) error) {
	GinkgoHelper()
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	Ctx, cancel = context.WithCancel(context.Background())
	k8sVersion := os.Getenv("ENVTEST_K8S_VERSION")
	if k8sVersion == "" {
		k8sVersion = DefaultK8sVersion
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot(), "bin", "k8s", k8sVersion+"-linux-amd64")
	}
	_, err := os.Stat(filepath.Join(assets, "kube-apiserver"))
	Expect(err).NotTo(HaveOccurred(), "no kube-apiserver in %s: run `make envtest` to build it from the Go module proxy", assets)

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(repoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
		DownloadBinaryAssets:  false,
	}
	Config, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	checkVersions(assets, k8sVersion)

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	Client, err = client.New(Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cacheOpts})
	Expect(err).NotTo(HaveOccurred())
	Clock = clocktesting.NewFakeClock(time.Now())
	Expect(setup(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(Ctx)).To(Succeed())
	}()
}

// checkVersions fails unless the control plane is the one the hack script built, at the pinned
// versions, and records them in the report.
func checkVersions(assets, k8sVersion string) {
	GinkgoHelper()
	dc, err := discovery.NewDiscoveryClientForConfig(Config)
	Expect(err).NotTo(HaveOccurred())
	sv, err := dc.ServerVersion()
	Expect(err).NotTo(HaveOccurred())
	Expect(sv.GitVersion).To(Equal("v"+k8sVersion), "kube-apiserver in %s reports %s", assets, sv.GitVersion)
	etcdVersion, err := exec.CommandContext(Ctx, filepath.Join(assets, "etcd"), "--version").Output()
	Expect(err).NotTo(HaveOccurred())
	AddReportEntry("control plane", "kube-apiserver "+sv.GitVersion+"; "+string(etcdVersion))
}

// Stop stops the manager and the control plane. Call it from AfterSuite.
func Stop() {
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
}

// Path is a path in the repository, from its root: Path("config", "samples") wherever the test runs.
func Path(elem ...string) string { return filepath.Join(append([]string{repoRoot()}, elem...)...) }

// repoRoot is the repository's root, found from this file's place in it.
func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
