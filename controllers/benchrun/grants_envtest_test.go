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

package benchrun

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

var _ = Describe("Grants", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("makes the workers' account where a BenchRun's pods run as it, even for a Dataset that starts no sync Job", func() {
		// A Dataset copied by the node agents starts no sync Job, so nothing else makes the account:
		// on the cluster every bench pod was refused ("serviceaccount pqcache-worker not found").
		r := &Reconciler{Client: k8sClient, APIReader: k8sClient, Worker: jobs.WorkerOptions{ServiceAccount: "pqcache-worker"}}
		run := newBenchRun(ns, "agents", "copied")
		named := newBenchRun(ns, "named", "copied", func(b *datav1alpha1.BenchRun) { b.Spec.ServiceAccountName = "mine" })
		for _, b := range []*datav1alpha1.BenchRun{run, named} {
			Expect(k8sClient.Create(ctx, b)).To(Succeed())
			Expect(r.ensureBenchAccount(ctx, b)).To(Succeed())
		}
		var sa corev1.ServiceAccount
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pqcache-worker"}, &sa)).To(Succeed())
		Expect(sa.OwnerReferences).To(HaveLen(1), "the run whose pods run as it, not the one that names its own")
		Expect(sa.OwnerReferences[0].UID).To(Equal(run.UID))
		Expect(ptr.Deref(sa.OwnerReferences[0].Controller, false)).To(BeFalse(), "shared with Datasets: no controller")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mine"}, &corev1.ServiceAccount{})).NotTo(Succeed(),
			"an account the run names is the user's to make")
	})

	It("says when the API server refuses a BenchRun's pods", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "nosa", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(20 * time.Second).Should(Succeed())
		refused := `Error creating: pods "` + found[0].Name + `-q9" is forbidden: error looking up service account ` + ns + `/pqcache-bench: serviceaccount "pqcache-bench" not found`
		jobFailedCreate(&found[0], refused)
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobRejected))
			g.Expect(c.Message).To(HavePrefix("1 of 1 Jobs have no pod: the API server refuses them"))
			g.Expect(c.Message).To(ContainSubstring(refused))
			g.Expect(testenv.KstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], runnerSummary("nosa", "answer"), false) // frees its slot under the cap
	})
})

// jobFailedCreate records the Warning the Job controller leaves on a Job whose pod the API server
// refuses (envtest runs no Job controller).
func jobFailedCreate(job *batchv1.Job, message string) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "."},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: job.Namespace, Name: job.Name, UID: job.UID, APIVersion: "batch/v1"},
		Type:           corev1.EventTypeWarning, Reason: "FailedCreate", Message: message,
		LastTimestamp: metav1.NewTime(time.Now()), Source: corev1.EventSource{Component: "job-controller"},
	})).To(Succeed())
}
