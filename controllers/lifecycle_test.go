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
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

// The specs here are the first week of a user's life with the operator: objects deleted while their
// Jobs wait or run, Jobs garbage-collected, names that collide or reach the API's limits, claims
// shared by mistake, pods that never start.

// deleteJobs deletes Jobs as the garbage collector or a TTL would (envtest runs neither).
func deleteJobs(jobs ...batchv1.Job) {
	GinkgoHelper()
	for i := range jobs {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, &jobs[i], client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
	}
}

// update changes obj as mutate says, retrying on conflicts with the controller's status writes.
func update[T client.Object](obj T, mutate func(T)) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8sClient.Update(ctx, obj)
	})).To(Succeed())
}

// runCondition is the run's Succeeded condition (never nil inside an Eventually that checks it).
func runCondition(g Gomega, run *datav1alpha1.BenchRun) *metav1.Condition {
	c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
	g.Expect(c).NotTo(BeNil())
	return c
}

// oneConfigOneInput narrows a test run to a single Job.
func oneConfigOneInput(r *datav1alpha1.BenchRun) {
	r.Spec.Configs = r.Spec.Configs[:1]
	r.Spec.Inputs = r.Spec.Inputs[:1]
}

var _ = Describe("Lifecycle edges", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("forgets the queued Jobs of a run deleted while they wait, so that later runs still get slots", func() {
		readyDataset(ns, "data")
		// 3 configurations × 2 inputs: the suite's cap of 3 starts three and queues three.
		hog := newBenchRun(ns, "hog", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = append(r.Spec.Configs, datav1alpha1.ResourceConfig{Name: "third", CPU: resource.MustParse("1"), Memory: resource.MustParse("1Gi")})
		})
		Expect(k8sClient.Create(ctx, hog)).To(Succeed())
		var hogJobs []batchv1.Job
		Eventually(func(g Gomega) {
			hogJobs = benchJobsOf(g, hog)
			g.Expect(hogJobs).To(HaveLen(3))
			jobsStatus := getRun(hog).Status.Jobs
			g.Expect(jobsStatus).NotTo(BeNil(), "no status of its Jobs yet")
			g.Expect(jobsStatus.Queued).To(Equal(int32(3)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		victim := newBenchRun(ns, "victim", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, victim)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(victim).Status.Jobs).NotTo(BeNil()) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(getRun(victim).Status.Jobs.Queued).To(Equal(int32(1)))

		// Deleted while three of its Jobs wait: its places in the queue must go with it.
		Expect(k8sClient.Delete(ctx, hog)).To(Succeed())
		deleteJobs(hogJobs...)
		var jobs []batchv1.Job
		Eventually(func(g Gomega) {
			jobs = benchJobsOf(g, victim)
			g.Expect(jobs).To(HaveLen(1), "the victim never got a slot: the deleted run's keys still hold the queue")
		}).WithTimeout(15 * time.Second).Should(Succeed())
		finishBenchJob(&jobs[0], runnerSummary("victim", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, victim).Status).To(Equal(metav1.ConditionTrue)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("records each finished Job once, and neither re-runs nor forgets it when the Job is garbage-collected", func() {
		readyDataset(ns, "data")
		run := newBenchRun(ns, "ttl", "data", func(r *datav1alpha1.BenchRun) { r.Spec.Configs = r.Spec.Configs[:1] })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) { jobs = benchJobsOf(g, run); g.Expect(jobs).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		first, second := jobs[0], jobs[1]
		finishBenchJob(&first, runnerSummary("first", "answer"), false)
		var recorded datav1alpha1.BenchResult
		Eventually(func(g Gomega) {
			for _, r := range getRun(run).Status.Results {
				if r.JobName == first.Name && r.CompletionTime != nil {
					recorded = r
				}
			}
			g.Expect(recorded.CompletionTime).NotTo(BeNil())
			g.Expect(recorded.Queries).To(HaveLen(2))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// The TTL collects the finished Job while the other still runs.
		deleteJobs(first)
		Consistently(func(g Gomega) {
			names := []string{}
			for _, j := range benchJobsOf(g, run) {
				names = append(names, j.Name)
			}
			g.Expect(names).To(ConsistOf(second.Name), "a collected Job was created again, to be measured again")
		}).WithTimeout(3 * time.Second).Should(Succeed())

		finishBenchJob(&second, runnerSummary("second", "answer"), false)
		Eventually(func(g Gomega) {
			cur := getRun(run)
			g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted))
			g.Expect(cur.Status.Results).To(HaveLen(2))
			for _, r := range cur.Status.Results {
				if r.JobName == first.Name {
					g.Expect(r).To(Equal(recorded), "the recorded result changed after its Job went")
				}
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("reports a Job deleted before it finished as JobLost, and does not start it again", func() {
		readyDataset(ns, "data")
		run := newBenchRun(ns, "lost", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) { jobs = benchJobsOf(g, run); g.Expect(jobs).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(run).Status.Results).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		deleteJobs(jobs...)
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobLost))
			g.Expect(c.Message).To(ContainSubstring("deleted before their results were recorded"))
			g.Expect(kstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, run)).To(BeEmpty())
		Expect(getRun(run).Status.Results[0].Message).To(ContainSubstring(jobs[0].Name))
	})

	It("gives runs whose names and configurations run together Jobs of their own", func() {
		readyDataset(ns, "data")
		config := func(name string) func(*datav1alpha1.BenchRun) {
			return func(r *datav1alpha1.BenchRun) {
				oneConfigOneInput(r)
				r.Spec.Configs[0].Name = name
			}
		}
		a := newBenchRun(ns, "x-a", "data", config("b"))
		b := newBenchRun(ns, "x", "data", config("a-b"))
		Expect(k8sClient.Create(ctx, a)).To(Succeed())
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		for _, run := range []*datav1alpha1.BenchRun{a, b} {
			var jobs []batchv1.Job
			Eventually(func(g Gomega) {
				jobs = nil
				for _, j := range benchJobsOf(g, run) {
					if metav1.IsControlledBy(&j, getRun(run)) {
						jobs = append(jobs, j)
					}
				}
				g.Expect(jobs).To(HaveLen(1), "run %s has no Job of its own", run.Name)
			}).WithTimeout(10 * time.Second).Should(Succeed())
			finishBenchJob(&jobs[0], runnerSummary(run.Name, "answer"), false)
		}
		for _, run := range []*datav1alpha1.BenchRun{a, b} {
			Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
		}
	})

	It("says so when a Job with its name belongs to someone else, and carries on once it is gone", func() {
		ds := newDataset(ns, "later")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		syncJob := waitForJobs(ds, 1) // not Ready yet: the run waits, and the test places its trap
		run := newBenchRun(ns, "squatted", "later", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		name := planned(getRun(run))[0].name
		squatter := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "someone-else"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "example.test/other"}}}}},
		}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		finishJob(syncJob, finish{report: successReport(8, 800)})
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobConflict))
			g.Expect(c.Message).To(ContainSubstring("Job " + name + " already exists and does not belong to this BenchRun"))
			g.Expect(kstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		Expect(k8sClient.Delete(ctx, squatter, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) {
			jobs = benchJobsOf(g, run)
			g.Expect(jobs).To(HaveLen(1))
			g.Expect(metav1.IsControlledBy(&jobs[0], getRun(run))).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishBenchJob(&jobs[0], runnerSummary("squatted", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("says when the API server refuses a BenchRun's Job, and starts it once it is admitted", func() {
		readyDataset(ns, "data")
		quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-jobs"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}}}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		// envtest runs no quota controller: its status is written here, as that controller would.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())
		run := newBenchRun(ns, "refused", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobRejected))
			g.Expect(c.Message).To(HavePrefix("1 of 1 Jobs cannot be created; tried again every 10 s until spec.timeout"))
			g.Expect(c.Message).To(ContainSubstring("the API server refused"))
			g.Expect(c.Message).To(ContainSubstring("quota"))
			g.Expect(kstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		Expect(k8sClient.Delete(ctx, quota)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) {
			jobs = benchJobsOf(g, run)
			g.Expect(jobs).To(HaveLen(1))
			g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonRunning))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		// Finished, so that its Job leaves the suite's bench Job slots to the other specs.
		finishBenchJob(&jobs[0], runnerSummary("refused", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("works with the longest names the API admits, for both kinds", func() {
		longest := strings.Repeat("long-name.", 25) + "end"
		Expect(longest).To(HaveLen(253))
		ds := readyDataset(ns, longest)
		cur := getDataset(ds)
		Expect(cur.Status.ClaimName).To(HaveLen(253))
		Expect(validation.IsDNS1123Subdomain(cur.Status.ClaimName)).To(BeEmpty())
		var pvc corev1.PersistentVolumeClaim
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cur.Status.ClaimName}, &pvc)).To(Succeed())
		Expect(pvc.Annotations).To(HaveKeyWithValue(AnnotationDataset, longest), "the full name travels in an annotation")

		run := newBenchRun(ns, longest, longest, oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) { jobs = benchJobsOf(g, run); g.Expect(jobs).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(len(jobs[0].Name)).To(BeNumerically("<=", 63))
		Expect(jobs[0].Annotations).To(HaveKeyWithValue(AnnotationBenchRun, longest))
		finishBenchJob(&jobs[0], runnerSummary("long", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("drops the claim's owner when reclaim turns to Retain, and takes it back when it turns to Delete", func() {
		ds := readyDataset(ns, "flip")
		claim := func() corev1.PersistentVolumeClaim {
			GinkgoHelper()
			var pvc corev1.PersistentVolumeClaim
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "flip-cache"}, &pvc)).To(Succeed())
			return pvc
		}
		pvc := claim()
		Expect(metav1.IsControlledBy(&pvc, getDataset(ds))).To(BeTrue())
		setReclaim := func(p datav1alpha1.ReclaimPolicy) {
			GinkgoHelper()
			update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Volume.Reclaim = p })
		}
		setReclaim(datav1alpha1.ReclaimRetain)
		Eventually(func(g Gomega) {
			pvc := claim()
			g.Expect(pvc.OwnerReferences).To(BeEmpty(), "the garbage collector would delete the data the user asked to keep")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		setReclaim(datav1alpha1.ReclaimDelete)
		Eventually(func(g Gomega) {
			pvc := claim()
			g.Expect(metav1.IsControlledBy(&pvc, getDataset(ds))).To(BeTrue())
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
		first := readyDataset(ns, "first", onShared)
		second := newDataset(ns, "second", onShared)
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		expectInUse := func(ds *datav1alpha1.Dataset, holder string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				cur := getDataset(ds)
				c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionStalled)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonClaimInUse))
				g.Expect(c.Message).To(ContainSubstring("already holds the cache of " + holder))
				g.Expect(kstatusOf(cur)).To(Equal(status.FailedStatus))
			}).WithTimeout(10 * time.Second).Should(Succeed())
			Expect(syncJobsOf(Default, ds)).To(BeEmpty())
		}
		expectInUse(second, "Dataset first")

		// The claim pqcache made for one Dataset is not another's existingClaim either.
		readyDataset(ns, "owner")
		borrower := newDataset(ns, "borrower", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "owner-cache"}
		})
		Expect(k8sClient.Create(ctx, borrower)).To(Succeed())
		expectInUse(borrower, "Dataset owner")

		// A claim of someone else's that happens to have the name pqcache would give the cache.
		squat := shared.DeepCopy()
		squat.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "taken-cache"}
		Expect(k8sClient.Create(ctx, squat)).To(Succeed())
		taken := newDataset(ns, "taken")
		Expect(k8sClient.Create(ctx, taken)).To(Succeed())
		expectInUse(taken, "something else")

		// Once the first Dataset is gone, the second may have the claim.
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		touch(second)
		job := waitForJobs(second, 1)
		finishJob(job, finish{report: successReport(1, 10)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(getDataset(second).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(shared), shared)).To(Succeed())
		Expect(shared.Annotations).To(HaveKeyWithValue(AnnotationDataset, "second"))
	})

	It("reports a sync pod whose container cannot start in the kubelet's words, from its status or its events", func() {
		ds := newDataset(ns, "nopull")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := waitForJobs(ds, 1)
		pod := createJobPod(job, syncContainerName)
		pod.Status.Phase = corev1.PodPending
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(fakeClock.Now())}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: syncContainerName, Image: testWorkerImage, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: `failed to pull image "example.test/pqcache:test": not found`}}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := getDataset(ds)
			for _, t := range []string{datav1alpha1.ConditionSyncing, datav1alpha1.ConditionReady} {
				c := meta.FindStatusCondition(cur.Status.Conditions, t)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting), t)
				g.Expect(c.Message).To(ContainSubstring(`ErrImagePull: failed to pull image "example.test/pqcache:test": not found`), t)
			}
			g.Expect(kstatusOf(cur)).To(Equal(status.FailedStatus), "a person must fix it")
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishJob(job, finish{report: successReport(1, 10)})

		// Nothing on the pod's status, only a Warning event: a volume that cannot be mounted.
		ds2 := newDataset(ns, "nomount")
		Expect(k8sClient.Create(ctx, ds2)).To(Succeed())
		job2 := waitForJobs(ds2, 1)
		pod2 := createJobPod(job2, syncContainerName)
		pod2.Status.Phase = corev1.PodPending
		pod2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(fakeClock.Now().Add(-time.Minute))}}
		pod2.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: syncContainerName, Image: testWorkerImage, State: corev1.ContainerState{
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
			c := meta.FindStatusCondition(getDataset(ds2).Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting))
			g.Expect(c.Message).To(ContainSubstring(`FailedMount: MountVolume.SetUp failed for volume "ca-bundle" : configmap "s3-ca" not found`))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishJob(job2, finish{report: successReport(1, 10)})
	})

	It("reports a query pod whose container cannot start, and stalls until it can", func() {
		readyDataset(ns, "data")
		run := newBenchRun(ns, "nosecret", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) { jobs = benchJobsOf(g, run); g.Expect(jobs).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		pod := createJobPod(&jobs[0], benchContainerName)
		pod.Status.Phase = corev1.PodPending
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(fakeClock.Now())}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: benchContainerName, Image: testWorkerImage, State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "s3-creds" not found`}}}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting))
			g.Expect(c.Message).To(ContainSubstring(`CreateContainerConfigError: secret "s3-creds" not found`))
			g.Expect(kstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishBenchJob(&jobs[0], runnerSummary("nosecret", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("starts no Job for an object that is being deleted", func() {
		hold := func(o client.Object) { o.SetFinalizers([]string{"test.pqcache.dev/hold"}) }
		ds := readyDataset(ns, "going", func(d *datav1alpha1.Dataset) { hold(d) })
		Expect(k8sClient.Delete(ctx, getDataset(ds))).To(Succeed())
		Expect(getDataset(ds).DeletionTimestamp).NotTo(BeNil())
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "while-deleting" })
		Consistently(func(g Gomega) { g.Expect(syncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())

		// A run whose Dataset is being deleted waits rather than start.
		early := newBenchRun(ns, "early", "going", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, early)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(runCondition(g, early).Message).To(ContainSubstring("is being deleted")) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, early)).To(BeEmpty())

		// A run deleted while it waits for its Dataset starts nothing once the Dataset is Ready.
		other := newDataset(ns, "other")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		syncJob := waitForJobs(other, 1)
		run := newBenchRun(ns, "going", "other", func(r *datav1alpha1.BenchRun) { oneConfigOneInput(r); hold(r) })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonWaitingForDataset)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Delete(ctx, run)).To(Succeed())
		finishJob(syncJob, finish{report: successReport(1, 10)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(getDataset(other).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(benchJobsOf(g, run)).To(BeEmpty()) }).WithTimeout(2 * time.Second).Should(Succeed())
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.SetFinalizers(nil) })
		update(getRun(run), func(r *datav1alpha1.BenchRun) { r.SetFinalizers(nil) })
	})

	It("neither sizes nor creates a claim for a Dataset being deleted", func() {
		ds := newDataset(ns, "unsized", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume.Capacity = nil
			d.SetFinalizers([]string{"test.pqcache.dev/hold"})
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		size := waitForSizeJob(ns)
		Expect(k8sClient.Delete(ctx, getDataset(ds))).To(Succeed())
		// The garbage collector takes the sizing Job; the sizing report would have come too late.
		Expect(k8sClient.Delete(ctx, &size, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "while-deleting" })
		Consistently(func(g Gomega) {
			var jobs batchv1.JobList
			g.Expect(k8sClient.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{LabelComponent: componentSize})).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "a sizing Job for a Dataset being deleted")
			var pvcs corev1.PersistentVolumeClaimList
			g.Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns))).To(Succeed())
			for _, p := range pvcs.Items {
				g.Expect(p.Name).NotTo(Equal("unsized-cache"), "a claim for a Dataset being deleted")
			}
		}).WithTimeout(3 * time.Second).Should(Succeed())
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.SetFinalizers(nil) })
	})

	It("refuses a schedule that never fires instead of syncing on every reconcile", func() {
		ds := readyDataset(ns, "february")
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Schedule = "0 0 30 2 *" })
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getDataset(ds).Status.Conditions, datav1alpha1.ConditionStalled)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonInvalidSpec))
			g.Expect(c.Message).To(ContainSubstring("never fires"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(syncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("pins the generation a run reads: its Jobs read that tree, and refreshes keep it until the run ends", func() {
		ds := newDataset(ns, "pinned")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		rep := successReport(8, 800)
		rep.Manifest.Generation = 7
		rep.Generations = &wire.GenerationSummary{Current: 7, Kept: []wire.GenerationInfo{{Generation: 7, Files: 8, Bytes: 800}, {Generation: 6, Files: 8, Bytes: 800}}, ExtraBytes: 100}
		finishJob(waitForJobs(ds, 1), finish{report: rep})
		Eventually(func(g Gomega) {
			st := getDataset(ds).Status
			g.Expect(st.Generations).NotTo(BeNil())
			g.Expect(st.Generations.Kept).To(HaveLen(2))
			g.Expect(st.Manifest.Size).To(Equal("800"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		run := newBenchRun(ns, "pinning", "pinned", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var jobs []batchv1.Job
		Eventually(func(g Gomega) { jobs = benchJobsOf(g, run); g.Expect(jobs).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(run).Status.DatasetGeneration).To(Equal(int64(7))) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(jobs[0].Spec.Template.Spec.Containers[0].Args).To(ContainElements("--data", "/data/.pqcache/generations/7"))

		// A refresh while the run reads generation 7 must keep it.
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "refresh-during-run" })
		sync := waitForJobs(ds, 2)
		Expect(sync.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--keep-generation", "7"))
		finishJob(sync, finish{report: successReport(8, 800)})
		finishBenchJob(&jobs[0], runnerSummary("pinning", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())

		// Once the run has finished, the next sync pins nothing.
		update(getDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "after-the-run" })
		next := waitForJobs(ds, 3)
		Expect(next.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--keep-generation"))
		finishJob(next, finish{report: successReport(8, 800)})
	})

	It("announces a sync once: not again when a stale reconcile finds its Job already there", func() {
		ds := newDataset(ns, "announce")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := waitForJobs(ds, 1)
		// A second reconciler whose cache has not seen the Job yet: it decides to start the same round.
		rec := events.NewFakeRecorder(10)
		r := &DatasetReconciler{Client: &jobBlindClient{Client: k8sClient}, APIReader: k8sClient, Clock: fakeClock, Recorder: rec, Worker: DefaultWorkerOptions()}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ds)})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.Events).To(BeEmpty(), "an AlreadyExists was announced as a new sync")
		Expect(syncJobsOf(Default, ds)).To(HaveLen(1))
		finishJob(job, finish{report: successReport(1, 10)})
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
