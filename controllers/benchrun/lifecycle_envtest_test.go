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
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/testenv"
)

// The specs here are the first week of a user's life with the operator: objects deleted while their
// Jobs wait or run, Jobs garbage-collected, names that collide or reach the API's limits, claims
// shared by mistake, pods that never start.

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
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("forgets the queued Jobs of a run deleted while they wait, so that later runs still get slots", func() {
		testenv.ReadyDataset(ns, "data")
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
		testenv.DeleteJobs(hogJobs...)
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, victim)
			g.Expect(found).To(HaveLen(1), "the victim never got a slot: the deleted run's keys still hold the queue")
		}).WithTimeout(15 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], runnerSummary("victim", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, victim).Status).To(Equal(metav1.ConditionTrue)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("records each finished Job once, and neither re-runs nor forgets it when the Job is garbage-collected", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "ttl", "data", func(r *datav1alpha1.BenchRun) { r.Spec.Configs = r.Spec.Configs[:1] })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		first, second := found[0], found[1]
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
		testenv.DeleteJobs(first)
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
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "lost", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(run).Status.Results).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		testenv.DeleteJobs(found...)
		Eventually(func(g Gomega) {
			c := runCondition(g, run)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobLost))
			g.Expect(c.Message).To(ContainSubstring("deleted before their results were recorded"))
			g.Expect(testenv.KstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, run)).To(BeEmpty())
		Expect(getRun(run).Status.Results[0].Message).To(ContainSubstring(found[0].Name))
	})

	It("gives runs whose names and configurations run together Jobs of their own", func() {
		testenv.ReadyDataset(ns, "data")
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
			var found []batchv1.Job
			Eventually(func(g Gomega) {
				found = nil
				for _, j := range benchJobsOf(g, run) {
					if metav1.IsControlledBy(&j, getRun(run)) {
						found = append(found, j)
					}
				}
				g.Expect(found).To(HaveLen(1), "run %s has no Job of its own", run.Name)
			}).WithTimeout(10 * time.Second).Should(Succeed())
			finishBenchJob(&found[0], runnerSummary(run.Name, "answer"), false)
		}
		for _, run := range []*datav1alpha1.BenchRun{a, b} {
			Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
		}
	})

	It("says so when a Job with its name belongs to someone else, and carries on once it is gone", func() {
		ds := testenv.NewDataset(ns, "later")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		syncJob := testenv.WaitForJobs(ds, 1) // not Ready yet: the run waits, and the test places its trap
		run := newBenchRun(ns, "squatted", "later", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		name := planned(getRun(run))[0].name
		squatter := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "someone-else"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "example.test/other"}}}}},
		}
		Expect(k8sClient.Create(ctx, squatter)).To(Succeed())
		testenv.FinishJob(syncJob, testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonJobConflict))
			g.Expect(c.Message).To(ContainSubstring("Job " + name + " already exists and does not belong to this BenchRun"))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		Expect(k8sClient.Delete(ctx, squatter, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(1))
			g.Expect(metav1.IsControlledBy(&found[0], getRun(run))).To(BeTrue())
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], runnerSummary("squatted", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("says when the API server refuses a BenchRun's Job, and starts it once it is admitted", func() {
		testenv.ReadyDataset(ns, "data")
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
			g.Expect(testenv.KstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		Expect(k8sClient.Delete(ctx, quota)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(1))
			g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonRunning))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		// Finished, so that its Job leaves the suite's bench Job slots to the other specs.
		finishBenchJob(&found[0], runnerSummary("refused", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("works with the longest names the API admits, for both kinds", func() {
		longest := strings.Repeat("long-name.", 25) + "end"
		Expect(longest).To(HaveLen(253))
		ds := testenv.ReadyDataset(ns, longest)
		cur := testenv.GetDataset(ds)
		Expect(cur.Status.ClaimName).To(HaveLen(253))
		Expect(validation.IsDNS1123Subdomain(cur.Status.ClaimName)).To(BeEmpty())
		var pvc corev1.PersistentVolumeClaim
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cur.Status.ClaimName}, &pvc)).To(Succeed())
		Expect(pvc.Annotations).To(HaveKeyWithValue(dataset.AnnotationDataset, longest), "the full name travels in an annotation")

		run := newBenchRun(ns, longest, longest, oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(len(found[0].Name)).To(BeNumerically("<=", 63))
		Expect(found[0].Annotations).To(HaveKeyWithValue(AnnotationBenchRun, longest))
		finishBenchJob(&found[0], runnerSummary("long", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("reports a query pod whose container cannot start, and stalls until it can", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "nosecret", "data", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		pod := testenv.CreateJobPod(&found[0], benchContainerName)
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
			g.Expect(testenv.KstatusOf(getRun(run))).To(Equal(status.FailedStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], runnerSummary("nosecret", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("starts no Job for an object that is being deleted", func() {
		hold := func(o client.Object) { o.SetFinalizers([]string{"test.pqcache.dev/hold"}) }
		ds := testenv.ReadyDataset(ns, "going", func(d *datav1alpha1.Dataset) { hold(d) })
		Expect(k8sClient.Delete(ctx, testenv.GetDataset(ds))).To(Succeed())
		Expect(testenv.GetDataset(ds).DeletionTimestamp).NotTo(BeNil())
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "while-deleting" })
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())

		// A run whose Dataset is being deleted waits rather than start.
		early := newBenchRun(ns, "early", "going", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, early)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(runCondition(g, early).Message).To(ContainSubstring("is being deleted")) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, early)).To(BeEmpty())

		// A run deleted while it waits for its Dataset starts nothing once the Dataset is Ready.
		other := testenv.NewDataset(ns, "other")
		Expect(k8sClient.Create(ctx, other)).To(Succeed())
		syncJob := testenv.WaitForJobs(other, 1)
		run := newBenchRun(ns, "going", "other", func(r *datav1alpha1.BenchRun) { oneConfigOneInput(r); hold(r) })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonWaitingForDataset)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(k8sClient.Delete(ctx, run)).To(Succeed())
		testenv.FinishJob(syncJob, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(other).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(benchJobsOf(g, run)).To(BeEmpty()) }).WithTimeout(2 * time.Second).Should(Succeed())
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.SetFinalizers(nil) })
		testenv.Update(getRun(run), func(r *datav1alpha1.BenchRun) { r.SetFinalizers(nil) })
	})

	It("pins the generation a run reads: its Jobs read that tree, and refreshes keep it until the run ends", func() {
		ds := testenv.NewDataset(ns, "pinned")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		rep := testenv.SuccessReport(8, 800)
		rep.Manifest.Generation = 7
		rep.Generations = &wire.GenerationSummary{Current: 7, Kept: []wire.GenerationInfo{{Generation: 7, Files: 8, Bytes: 800}, {Generation: 6, Files: 8, Bytes: 800}}, ExtraBytes: 100}
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: rep})
		Eventually(func(g Gomega) {
			st := testenv.GetDataset(ds).Status
			g.Expect(st.Generations).NotTo(BeNil())
			g.Expect(st.Generations.Kept).To(HaveLen(2))
			g.Expect(st.Manifest.Size).To(Equal("800"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		run := newBenchRun(ns, "pinning", "pinned", oneConfigOneInput)
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(getRun(run).Status.DatasetGeneration).To(Equal(int64(7))) }).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(found[0].Spec.Template.Spec.Containers[0].Args).To(ContainElements("--data", "/data/.pqcache/generations/7"))

		// A refresh while the run reads generation 7 must keep it.
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "refresh-during-run" })
		sync := testenv.WaitForJobs(ds, 2)
		Expect(sync.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--keep-generation", "7"))
		testenv.FinishJob(sync, testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		finishBenchJob(&found[0], runnerSummary("pinning", "answer"), false)
		Eventually(func(g Gomega) { g.Expect(runCondition(g, run).Reason).To(Equal(datav1alpha1.ReasonCompleted)) }).WithTimeout(10 * time.Second).Should(Succeed())

		// Once the run has finished, the next sync pins nothing.
		testenv.Update(testenv.GetDataset(ds), func(d *datav1alpha1.Dataset) { d.Spec.Refresh.Manual = "after-the-run" })
		next := testenv.WaitForJobs(ds, 3)
		Expect(next.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement("--keep-generation"))
		testenv.FinishJob(next, testenv.Finish{Report: testenv.SuccessReport(8, 800)})
	})

})
