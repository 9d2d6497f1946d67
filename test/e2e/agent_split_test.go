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
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The agent's pod as the chart runs it on every node (issue 38, item 6): chown-cache gave the cache
// root to the agent's user and exited; the privileged mount container runs as a sidecar and is
// ready (kubelet registered the driver); the agent container, non-root, is ready. The copies, CSI
// and refresh specs of this suite run against this pod.
var _ = Describe("The node agent's split pod", func() {
	It("runs only the mount container privileged, and every part is ready", func() {
		var pods corev1.PodList
		Expect(c.List(ctx, &pods, client.InNamespace(releaseNamespace), client.MatchingLabels{"app.kubernetes.io/component": "agent"})).To(Succeed())
		Expect(pods.Items).NotTo(BeEmpty())
		for _, p := range pods.Items {
			Expect(podReady(&p)).To(BeTrue(), "agent pod %s is not Ready", p.Name)
			inits := map[string]corev1.ContainerStatus{}
			for _, s := range p.Status.InitContainerStatuses {
				inits[s.Name] = s
			}
			chown := inits["chown-cache"]
			Expect(chown.State.Terminated).NotTo(BeNil(), "pod %s: chown-cache did not run to its end", p.Name)
			Expect(chown.State.Terminated.ExitCode).To(BeZero(), "pod %s: chown-cache: %s", p.Name, chown.State.Terminated.Message)
			mount := inits["mount"]
			Expect(mount.Ready).To(BeTrue(), "pod %s: the mount sidecar is not ready (kubelet has not registered the driver?)", p.Name)
			for _, s := range p.Status.ContainerStatuses {
				Expect(s.Ready).To(BeTrue(), "pod %s: container %s is not ready", p.Name, s.Name)
			}
			for _, ct := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				privileged := ct.SecurityContext != nil && ct.SecurityContext.Privileged != nil && *ct.SecurityContext.Privileged
				Expect(privileged).To(Equal(ct.Name == "mount"), "pod %s: container %s privileged: %v", p.Name, ct.Name, privileged)
				if ct.Name == "agent" {
					sc := ct.SecurityContext
					Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
					Expect(sc.RunAsUser).To(HaveValue(BeNumerically(">", 0)))
					Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
					Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
				}
			}
		}
	})
})
