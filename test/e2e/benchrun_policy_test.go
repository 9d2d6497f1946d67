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
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// Issue 38, item 2, on a real cluster: the cluster's own roles include pqcache's (aggregation runs in
// kube-controller-manager, which envtest has not), and the chart's policy refuses a command engine to
// a user who may create BenchRuns but not pods. Dry runs: nothing is stored, no Job starts.
var _ = Describe("BenchRuns run only what their creator may", func() {
	It("refuses a command engine to an editor of pqcache's resources only, admits it for the cluster's edit role", func() {
		ns := newNamespace("e2e-benchpolicy-")
		bind := func(user, clusterRole string) client.Client {
			GinkgoHelper()
			Expect(c.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			})).To(Succeed())
			cfg, err := ctrl.GetConfig()
			Expect(err).NotTo(HaveOccurred())
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
			as, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
			Expect(err).NotTo(HaveOccurred())
			return as
		}
		author, editor, viewer := bind("bench-author", "pqcache-edit"), bind("editor", "edit"), bind("viewer", "view")
		run := func(name string, e datav1alpha1.BenchEngine) *datav1alpha1.BenchRun {
			return &datav1alpha1.BenchRun{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: datav1alpha1.BenchRunSpec{DatasetRef: datav1alpha1.DatasetReference{Name: "none"}, Engines: []datav1alpha1.BenchEngine{e},
					Configs: []datav1alpha1.ResourceConfig{{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")}}}}
		}
		command := datav1alpha1.BenchEngine{Name: datav1alpha1.EngineCommand, Image: "busybox:1.37", Command: []string{"env"}}

		By("the author's command engine is refused, with the policy's message")
		Eventually(func(g Gomega) {
			err := author.Create(ctx, run("cmd", command), client.DryRunAll)
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("which only a user who may create pods in namespace " + ns + " may ask for, and bench-author may not"))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		By("the author's built-in engine is admitted")
		Expect(author.Create(ctx, run("duckdb", datav1alpha1.BenchEngine{Name: datav1alpha1.EngineDuckDB}), client.DryRunAll)).To(Succeed())
		By("the cluster's edit role, aggregated with pqcache-edit, may create pods: its command engine is admitted")
		Eventually(func() error {
			return editor.Create(ctx, run("cmd", command), client.DryRunAll)
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		By("the cluster's view role reads BenchRuns and cannot create them")
		Eventually(func() error {
			return viewer.List(ctx, &datav1alpha1.BenchRunList{}, client.InNamespace(ns))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(apierrors.IsForbidden(viewer.Create(ctx, run("duckdb", datav1alpha1.BenchEngine{Name: datav1alpha1.EngineDuckDB}), client.DryRunAll))).To(BeTrue())
		By("a Secret in env is refused to the editor too")
		secret := command
		secret.Env = []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "anything"}, Key: "token"}}}}
		err := editor.Create(ctx, run("secret", secret), client.DryRunAll)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("env may not reference a Secret"))
	})
})
