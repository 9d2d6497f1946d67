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

package dataset

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// agentMay asks the API server's authorizer (a SubjectAccessReview: RBAC, as it decides for the
// agent's own requests) whether the node agents' ServiceAccount may get Secret ns/name.
func agentMay(g Gomega, ns, name string) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + testAgentAccount.Namespace + ":" + testAgentAccount.Name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testAgentAccount.Namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: "get", Resource: "secrets", Name: name,
		},
	}}
	g.Expect(k8sClient.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

// createSecrets makes empty Secrets: the grants name them, nobody reads them here.
func createSecrets(ns string, names ...string) {
	GinkgoHelper()
	for _, n := range names {
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}})).To(Succeed())
	}
}

var _ = Describe("Grants", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("lets the node agents read exactly the Secret a Dataset with replicas names, and only while it names it", func() {
		createSecrets(ns, "s3-creds", "other")
		other := testenv.NewNamespace()
		createSecrets(other, "s3-creds")
		Expect(agentMay(Default, ns, "s3-creds")).To(BeFalse(), "before any Dataset, the agent reads no Secret")

		// A Dataset without replicas is synced by a Job: the agent needs nothing.
		plain := testenv.NewDataset(ns, "plain")
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		ds := testenv.NewDataset(ns, "lake", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume = datav1alpha1.DatasetVolume{}
			d.Spec.Replicas = &datav1alpha1.ReplicaPolicy{NodeSelector: map[string]string{"grants.test/none": "yes"}}
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(agentMay(g, ns, "s3-creds")).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(agentMay(Default, ns, "other")).To(BeFalse(), "another Secret of the namespace")
		Expect(agentMay(Default, other, "s3-creds")).To(BeFalse(), "the same name in another namespace")

		// The Dataset controls both objects: the garbage collector (which envtest does not run)
		// removes them with it.
		cur := testenv.GetDataset(ds)
		key := client.ObjectKey{Namespace: ns, Name: agentGrantName(ds)}
		var role rbacv1.Role
		var binding rbacv1.RoleBinding
		Expect(k8sClient.Get(ctx, key, &role)).To(Succeed())
		Expect(k8sClient.Get(ctx, key, &binding)).To(Succeed())
		Expect(metav1.IsControlledBy(&role, cur)).To(BeTrue(), "role owners %v", role.OwnerReferences)
		Expect(metav1.IsControlledBy(&binding, cur)).To(BeTrue(), "binding owners %v", binding.OwnerReferences)
		Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"s3-creds"}}}))
		Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: testAgentAccount.Namespace, Name: testAgentAccount.Name}}))

		By("naming another Secret")
		testenv.Update(ds, func(d *datav1alpha1.Dataset) { d.Spec.Source.S3.Credentials.SecretRef.Name = "other" })
		Eventually(func(g Gomega) {
			g.Expect(agentMay(g, ns, "other")).To(BeTrue())
			g.Expect(agentMay(g, ns, "s3-creds")).To(BeFalse())
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("naming none")
		testenv.Update(ds, func(d *datav1alpha1.Dataset) {
			d.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "reader"}
		})
		Eventually(func(g Gomega) {
			g.Expect(agentMay(g, ns, "other")).To(BeFalse())
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &rbacv1.Role{}))).To(BeTrue(), "the Role is gone")
			g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, &rbacv1.RoleBinding{}))).To(BeTrue(), "the RoleBinding is gone")
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("naming it again")
		testenv.Update(ds, func(d *datav1alpha1.Dataset) {
			d.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}}
		})
		Eventually(func(g Gomega) { g.Expect(agentMay(g, ns, "s3-creds")).To(BeTrue()) }).WithTimeout(20 * time.Second).Should(Succeed())
		// The Dataset without replicas named the same Secret all along, and got no grant of its own.
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: agentGrantName(plain)}, &rbacv1.Role{}))).To(BeTrue())
		Expect(agentMay(Default, ns, "other")).To(BeFalse())
	})

	It("leaves alone a Role of the grant's name that it did not make", func() {
		ds := testenv.NewDataset(ns, "lake")
		squatter := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentGrantName(ds)},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		Expect(k8sClient.Create(ctx, ds)).To(Succeed()) // no replicas: the grant is removed, if pqcache's
		testenv.WaitForJobs(ds, 1)
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(squatter), &rbacv1.Role{})
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("makes the workers' account and binding where a sync starts, shared by the Datasets that use it", func() {
		r := &Reconciler{Client: k8sClient, APIReader: k8sClient, Worker: jobs.WorkerOptions{ServiceAccount: "pqcache-worker"}}
		a, b := testenv.NewDataset(ns, "a"), testenv.NewDataset(ns, "b")
		own := testenv.NewDataset(ns, "own", func(d *datav1alpha1.Dataset) {
			d.Spec.Source.S3.Credentials = &datav1alpha1.S3Credentials{ServiceAccountName: "reader"}
		})
		for _, d := range []*datav1alpha1.Dataset{a, b, own} {
			Expect(k8sClient.Create(ctx, d)).To(Succeed())
			Expect(r.ensureWorkerAccount(ctx, d)).To(Succeed())
		}
		Expect(r.ensureWorkerAccount(ctx, a)).To(Succeed(), "again: nothing changes")

		var sa corev1.ServiceAccount
		var binding rbacv1.RoleBinding
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pqcache-worker"}, &sa)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: WorkerProgressRole}, &binding)).To(Succeed())
		for _, obj := range []client.Object{&sa, &binding} {
			refs := obj.GetOwnerReferences()
			Expect(refs).To(HaveLen(2), "a and b, each once; own runs under its own account")
			for i, d := range []*datav1alpha1.Dataset{a, b} {
				Expect(refs[i].UID).To(Equal(d.UID))
				Expect(refs[i].Kind).To(Equal("Dataset"))
				Expect(ptr.Deref(refs[i].Controller, false)).To(BeFalse(), "shared: no controller, so it goes with the last owner")
			}
			Expect(obj.GetLabels()).To(HaveKeyWithValue(jobs.LabelManagedBy, "pqcache"))
		}
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: WorkerProgressRole}))
		Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "pqcache-worker"}}))

		By("an account made by hand stays as it was")
		hand := testenv.NewNamespace()
		Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: hand, Name: "pqcache-worker"}})).To(Succeed())
		c := testenv.NewDataset(hand, "c")
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		Expect(r.ensureWorkerAccount(ctx, c)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: hand, Name: "pqcache-worker"}, &sa)).To(Succeed())
		Expect(sa.OwnerReferences).To(BeEmpty())
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: hand, Name: WorkerProgressRole}, &binding)).To(Succeed(), "the binding is still made")
		Expect(binding.OwnerReferences).To(HaveLen(1))
	})

	It("says within seconds when the API server refuses a sync Job's pods, in its words", func() {
		ds := testenv.NewDataset(ns, "nopods")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		refused := `Error creating: pods "` + job.Name + `-x7k2p" is forbidden: exceeded quota: nopods, requested: pods=1, used: pods=0, limited: pods=0`
		jobFailedCreate(job, refused)
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			for _, t := range []string{datav1alpha1.ConditionSyncing, datav1alpha1.ConditionReady} {
				c := meta.FindStatusCondition(cur.Status.Conditions, t)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobRejected), t)
				g.Expect(c.Message).To(ContainSubstring("the API server refuses the pods of job " + ns + "/" + job.Name + ": " + refused))
			}
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus), "a person must fix it")
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("the pod is admitted once the quota allows it")
		pod := testenv.CreateJobPod(job, jobs.SyncContainerName)
		pod.Status.Phase = corev1.PodPending
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonSyncInProgress))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		By("a refusal older than the Job's newest pod is over, even once that pod has ended")
		pod.Status.Phase = corev1.PodSucceeded
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Consistently(func(g Gomega) {
			c := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).NotTo(Equal(datav1alpha1.ReasonJobRejected))
		}).WithTimeout(progressPoll + 2*time.Second).Should(Succeed())
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
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
