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

// Package e2e is the end-to-end suite: it installs the Helm chart into whatever cluster KUBECONFIG
// names (hack/local-cluster's, kind, a real one), runs an S3 server there, and checks what a user would
// see: a Dataset synced into a real volume by real worker Jobs, an incremental refresh, BenchRuns whose
// query Jobs report back, and cascading deletion. `make test` never runs it; `make test-e2e` does.
//
// The images must already be on the cluster's nodes (hack/local-cluster up builds and loads them;
// with kind, `kind load docker-image`). Environment:
//
//	KUBECONFIG               the cluster (required)
//	PQCACHE_E2E_IMAGE        the pqcache image (default pqcache.local/pqcache:dev)
//	PQCACHE_E2E_TESTKIT_IMAGE the test kit image: the tests' servers and probes (default
//	                         pqcache.local/pqcache-testkit:dev)
//	PQCACHE_E2E_S3_IMAGE     a versitygw image (default pqcache.local/versitygw:v1.8.0)
//	PQCACHE_E2E_HELM_VALUES  extra values for the chart (hack/local-cluster writes one)
//	PQCACHE_HELM             the helm binary (default bin/helm)
//	PQCACHE_KUBECTL          the kubectl that runs `kubectl pqcache` (default bin/k8s/VERSION/kubectl)
//	PQCACHE_E2E_EVENTS_URL   where in-cluster stores reach the operator's event endpoint (default: its
//	                         Service's DNS name)
//
// The cluster needs what any cluster has: Services, DNS, pod logs. The specs of a cluster of several
// nodes (placement across nodes, a node that dies) fail with a clear message on fewer than they need;
// hack/local-cluster up starts 3.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

const (
	releaseName      = "pqcache"
	releaseNamespace = "pqcache-system"
	// workerServiceAccount is the chart's worker.progress.serviceAccountName.
	workerServiceAccount = "pqcache-worker"
)

var (
	ctx = context.Background()
	c   client.Client
	// cs serves what controller-runtime's client does not: pod logs.
	cs           *kubernetes.Clientset
	image        = envOr("PQCACHE_E2E_IMAGE", "pqcache.local/pqcache:dev")
	testkitImage = envOr("PQCACHE_E2E_TESTKIT_IMAGE", "pqcache.local/pqcache-testkit:dev")
	s3Image      = envOr("PQCACHE_E2E_S3_IMAGE", "pqcache.local/versitygw:v1.8.0")
	repoRoot, _  = filepath.Abs(filepath.Join("..", ".."))
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "pqcache e2e")
}

// The suite runs in parallel processes (make test-e2e: ginkgo --procs 2): the first installs the
// chart and builds the kubectl plugin, every process then makes its own clients. Containers that
// change what others rely on (nodes that die, the one bench slot's queue, a latency compared with a
// quiet cluster's) are Serial: they run alone once the parallel specs are done.
var _ = SynchronizedBeforeSuite(func() []byte {
	connect()
	installChart()
	return []byte(buildPlugin())
}, func(plugin []byte) {
	connect()
	pluginDir = string(plugin)
})

// connect makes this process's clients of the cluster in KUBECONFIG.
func connect() {
	Expect(os.Getenv("KUBECONFIG")).NotTo(BeEmpty(), "set KUBECONFIG to the cluster to test")
	// controller-runtime's clients log through its root logger; unset, it prints a warning with a stack.
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(datav1alpha1.AddToScheme(scheme))
	cfg, err := ctrl.GetConfig()
	Expect(err).NotTo(HaveOccurred())
	c, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	cs, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
}

// installChart installs the Helm chart as the suite runs it and waits until its manager leads.
func installChart() {
	By("installing the Helm chart " + releaseName + " into " + releaseNamespace)
	repo, tag, _ := strings.Cut(image, ":")
	args := []string{"upgrade", "--install", releaseName, filepath.Join(repoRoot, "charts", "pqcache"),
		"--namespace", releaseNamespace, "--create-namespace", "--wait", "--timeout", "3m",
		"--set", "image.repository=" + repo, "--set", "image.tag=" + tag,
		// One query Job at a time keeps timings comparable on a small node.
		"--set", "worker.maxConcurrentBenchJobs=1", "--set", "logLevel=debug",
		// The node agents on: where they keep their copies (a root per node) and their node reserve
		// come from the cluster's values (PQCACHE_E2E_HELM_VALUES; hack/local-cluster writes one
		// with agent.cacheRoot under kubelet's root, which its nodes have each of their own), as the
		// demo cluster's user who turns them on gets them.
		"--set", "agent.enabled=true",
		// The suite's versitygw posts events to a bare URL, the token in its query string.
		"--set", "events.queryToken=true"}
	if values := os.Getenv("PQCACHE_E2E_HELM_VALUES"); values != "" {
		args = append(args, "--values", values)
	} else {
		// Without a cluster's values, the agents' root is set here, where the specs look for it.
		args = append(args, "--set", "agent.cacheRoot="+agentCacheRoot)
	}
	out, err := helm(args...)
	Expect(err).NotTo(HaveOccurred(), "helm %s\n%s", strings.Join(args, " "), out)

	var dep appsv1.Deployment
	Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: releaseName}, &dep)).To(Succeed())
	Expect(dep.Status.ReadyReplicas).To(Equal(int32(1)), "the manager is not ready after helm --wait")

	// Ready is not leading: a manager installed right after an uninstall waits up to the lease's
	// duration for the old lease (helm deletes the Role the old one needed to release it), and only
	// the leader reconciles and serves the events endpoint, which stores must reach when they start.
	By("waiting for the manager to hold the leader lease")
	waitManagerLeads()
}

var _ = SynchronizedAfterSuite(func() {}, func() {
	if CurrentSpecReport().Failed() || os.Getenv("PQCACHE_E2E_KEEP") != "" {
		return
	}
	out, err := helm("uninstall", releaseName, "--namespace", releaseNamespace, "--wait", "--timeout", "2m")
	Expect(err).NotTo(HaveOccurred(), "helm uninstall\n%s", out)
})

// buildPlugin builds kubectl-pqcache from the working tree, once per suite, and returns its
// directory, which kubectlPqcache puts on kubectl's PATH.
func buildPlugin() string {
	GinkgoHelper()
	dir := filepath.Join(repoRoot, "bin", "e2e-plugin")
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-pqcache"), "./cmd/kubectl-pqcache")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building kubectl-pqcache\n%s", out)
	return dir
}

// kubectlPqcache runs `kubectl pqcache args...` as a user does: kubectl finds the plugin on PATH.
func kubectlPqcache(args ...string) (string, error) {
	GinkgoHelper()
	kubectl := envOr("PQCACHE_KUBECTL", filepath.Join(repoRoot, "bin", "k8s", "1.37.2-linux-amd64", "kubectl"))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"pqcache"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pluginDir holds the kubectl plugin the first process built.
var pluginDir string

func helm(args ...string) (string, error) {
	bin := envOr("PQCACHE_HELM", filepath.Join(repoRoot, "bin", "helm"))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// newNamespace creates a namespace for one test and deletes it afterwards (unless the test failed and
// PQCACHE_E2E_KEEP is set, to look at it).
func newNamespace(prefix string) string {
	GinkgoHelper()
	ns := &corev1.Namespace{}
	ns.GenerateName = prefix
	// The restricted Pod Security profile: everything pqcache creates must pass it.
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	Expect(c.Create(ctx, ns)).To(Succeed())
	// Nothing of pqcache's is made by hand: the workers' account and its binding are the operator's to
	// make, as in a tenant's new namespace (a spec that made them here would hide a path that lacks one).
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() && os.Getenv("PQCACHE_E2E_KEEP") != "" {
			fmt.Fprintf(GinkgoWriter, "keeping namespace %s\n", ns.Name)
			return
		}
		Expect(client.IgnoreNotFound(c.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// handMadeWorkerAccount makes, in ns, the sync workers' ServiceAccount bound to the chart's
// worker-progress ClusterRole, by hand, as users did before the operator made them: the operator must
// use such an account as it is, and leave it behind.
func handMadeWorkerAccount(ns string) {
	GinkgoHelper()
	Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workerServiceAccount}})).To(Succeed())
	Expect(c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pqcache-worker-progress"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pqcache-worker-progress"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: workerServiceAccount, Namespace: ns}},
	})).To(Succeed())
}

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
})

// waitManagerLeads waits until one manager pod runs, the old ones of a rollout gone, and it holds the
// leader lease: only the leader reconciles and serves the events endpoint. The old manager can hold
// the lease for its duration (helm deletes the Role it needed to release it).
func waitManagerLeads() {
	GinkgoHelper()
	var started time.Time
	Eventually(func(g Gomega) {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/component": "manager"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "manager pods of a rollout")
		g.Expect(pods.Items[0].DeletionTimestamp).To(BeNil())
		started = pods.Items[0].CreationTimestamp.Time
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Eventually(func(g Gomega) {
		var lease coordinationv1.Lease
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "pqcache.data.pqcache.dev"}, &lease)).To(Succeed())
		g.Expect(lease.Spec.AcquireTime).NotTo(BeNil())
		g.Expect(lease.Spec.AcquireTime.Time).To(BeTemporally(">=", started.Truncate(time.Second)), "the lease is still the previous manager's")
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}
