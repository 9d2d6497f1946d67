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
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// The specs here are the first week of a user's life with the operator: objects deleted while their
// Jobs wait or run, Jobs garbage-collected, names that collide or reach the API's limits, claims
// shared by mistake, pods that never start.

var _ = Describe("Lifecycle edges", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("drops the claim's owner when reclaim turns to Retain, and takes it back when it turns to Delete", func() {
		ds := testenv.ReadyDataset(ns, "flip")
		claim := func() corev1.PersistentVolumeClaim {
			GinkgoHelper()
			var pvc corev1.PersistentVolumeClaim
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flip-cache"}, &pvc)).To(Succeed())
			return pvc
		}
		pvc := claim()
		Expect(metav1.IsControlledBy(&pvc, testenv.GetDataset(ds))).To(BeTrue())
		setReclaim := func(p datav1alpha1.ReclaimPolicy) {
			GinkgoHelper()
			testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Volume.Reclaim = p })
		}
		setReclaim(datav1alpha1.ReclaimRetain)
		Eventually(func(g Gomega) {
			pvc := claim()
			g.Expect(pvc.OwnerReferences).To(BeEmpty(), "the garbage collector would delete the data the user asked to keep")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		setReclaim(datav1alpha1.ReclaimDelete)
		Eventually(func(g Gomega) {
			pvc := claim()
			g.Expect(metav1.IsControlledBy(&pvc, testenv.GetDataset(ds))).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses a claim that already holds another Dataset's cache, and says whose", func() {
		shared := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}
		Expect(k8sClient.Create(ctx, shared)).To(Succeed())
		onShared := func(d *datav1alpha1.Dataset) { d.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "shared"} }
		first := testenv.ReadyDataset(ns, "first", onShared)
		second := testenv.NewDataset(ns, "second", onShared)
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		expectInUse := func(ds *datav1alpha1.Dataset, holder string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				cur := testenv.GetDataset(ds)
				c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionStalled)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonClaimInUse))
				g.Expect(c.Message).To(ContainSubstring("already holds the cache of " + holder))
				g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
			}).WithTimeout(10 * time.Second).Should(Succeed())
			Expect(testenv.SyncJobsOf(Default, ds)).To(BeEmpty())
		}
		expectInUse(second, "Dataset first")

		// The claim pqcache made for one Dataset is not another's existingClaim either.
		testenv.ReadyDataset(ns, "owner")
		borrower := testenv.NewDataset(ns, "borrower", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "owner-cache"}
		})
		Expect(k8sClient.Create(ctx, borrower)).To(Succeed())
		expectInUse(borrower, "Dataset owner")

		// A claim of someone else's that happens to have the name pqcache would give the cache.
		squat := shared.DeepCopy()
		squat.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "taken-cache"}
		Expect(k8sClient.Create(ctx, squat)).To(Succeed())
		taken := testenv.NewDataset(ns, "taken")
		Expect(k8sClient.Create(ctx, taken)).To(Succeed())
		expectInUse(taken, "something else")

		// Once the first Dataset is gone, the second may have the claim.
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		testenv.Touch(second)
		job := testenv.WaitForJobs(second, 1)
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(second).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(shared), shared)).To(Succeed())
		Expect(shared.Annotations).To(HaveKeyWithValue(AnnotationDataset, "second"))
	})

	It("reports a sync pod whose container cannot start in the kubelet's words, from its status or its events", func() {
		ds := testenv.NewDataset(ns, "nopull")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		pod := testenv.CreateJobPod(job, jobs.SyncContainerName)
		pod.Status.Phase = corev1.PodPending
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(fakeClock.Now())}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobs.SyncContainerName, Image: testWorkerImage, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: `failed to pull image "example.test/pqcache:test": not found`}}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			for _, t := range []string{datav1alpha1.ConditionSyncing, datav1alpha1.ConditionReady} {
				c := meta.FindStatusCondition(cur.Status.Conditions, t)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting), t)
				g.Expect(c.Message).To(ContainSubstring(`ErrImagePull: failed to pull image "example.test/pqcache:test": not found`), t)
			}
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus), "a person must fix it")
		}).WithTimeout(20 * time.Second).Should(Succeed())
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 10)})

		// Nothing on the pod's status, only a Warning event: a volume that cannot be mounted.
		ds2 := testenv.NewDataset(ns, "nomount")
		Expect(k8sClient.Create(ctx, ds2)).To(Succeed())
		job2 := testenv.WaitForJobs(ds2, 1)
		pod2 := testenv.CreateJobPod(job2, jobs.SyncContainerName)
		pod2.Status.Phase = corev1.PodPending
		pod2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(fakeClock.Now().Add(-time.Minute))}}
		pod2.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: jobs.SyncContainerName, Image: testWorkerImage, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
		Expect(k8sClient.Status().Update(ctx, pod2)).To(Succeed())
		Expect(k8sClient.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: pod2.Name + "."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod2.Name, UID: pod2.UID, APIVersion: "v1"},
			Type:           corev1.EventTypeWarning, Reason: "FailedMount",
			Message:       `MountVolume.SetUp failed for volume "ca-bundle" : configmap "s3-ca" not found`,
			LastTimestamp: metav1.NewTime(fakeClock.Now()), Source: corev1.EventSource{Component: "kubelet"},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(testenv.GetDataset(ds2).Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting))
			g.Expect(c.Message).To(ContainSubstring(`FailedMount: MountVolume.SetUp failed for volume "ca-bundle" : configmap "s3-ca" not found`))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		testenv.FinishJob(job2, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
	})

	It("neither sizes nor creates a claim for a Dataset being deleted", func() {
		ds := testenv.NewDataset(ns, "unsized", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume.Capacity = nil
			d.SetFinalizers([]string{"test.pqcache.dev/hold"})
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		size := testenv.WaitForSizeJob(ns)
		Expect(k8sClient.Delete(ctx, testenv.GetDataset(ds))).To(Succeed())
		// The garbage collector takes the sizing Job; the sizing report would have come too late.
		Expect(k8sClient.Delete(ctx, &size, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "while-deleting" })
		Consistently(func(g Gomega) {
			var found batchv1.JobList
			g.Expect(k8sClient.List(ctx, &found, client.InNamespace(ns), client.MatchingLabels{jobs.LabelComponent: jobs.ComponentSize})).To(Succeed())
			g.Expect(found.Items).To(BeEmpty(), "a sizing Job for a Dataset being deleted")
			var pvcs corev1.PersistentVolumeClaimList
			g.Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns))).To(Succeed())
			for _, p := range pvcs.Items {
				g.Expect(p.Name).NotTo(Equal("unsized-cache"), "a claim for a Dataset being deleted")
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.SetFinalizers(nil) })
	})

	It("refuses a schedule that never fires instead of syncing on every reconcile", func() {
		ds := testenv.ReadyDataset(ns, "february")
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Schedule = "0 0 30 2 *" })
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionStalled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonInvalidSpec))
			g.Expect(c.Message).To(ContainSubstring("never fires"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("announces a sync once: not again when a stale reconcile finds its Job already there", func() {
		ds := testenv.NewDataset(ns, "announce")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		// A second reconciler whose cache has not seen the Job yet: it decides to start the same round.
		rec := events.NewFakeRecorder(10)
		r := &Reconciler{Client: &jobBlindClient{Client: k8sClient}, APIReader: k8sClient, Clock: fakeClock, Recorder: rec, Worker: jobs.DefaultWorkerOptions()}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ds)})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Events).To(BeEmpty(), "an AlreadyExists was announced as a new sync")
		Expect(testenv.SyncJobsOf(Default, ds)).To(HaveLen(1))
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
	})
})

// jobBlindClient lists no Jobs, as an informer that has not caught up with a new one.
type jobBlindClient struct{ client.Client }

func (c *jobBlindClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*batchv1.JobList); ok {
		return nil
	}
	return c.Client.List(ctx, list, opts...)
}
