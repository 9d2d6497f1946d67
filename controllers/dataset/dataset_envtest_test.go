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
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
	"github.com/pqcache/pqcache/controllers/testenv"
	"github.com/pqcache/pqcache/worker/podprogress"
)

// statusWriteCounter counts status writes made through it.
type statusWriteCounter struct {
	client.Client
	writes atomic.Int64
}

func (c *statusWriteCounter) Status() client.SubResourceWriter {
	return &countingStatusWriter{SubResourceWriter: c.Client.Status(), n: &c.writes}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	n *atomic.Int64
}

func (w *countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w *countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.n.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// seriesOf counts the pqcache metric series of one Dataset.
func seriesOf(ns, name string) int {
	GinkgoHelper()
	return len(seriesNamesOf(ns, name))
}

// seriesNamesOf names the metric of each series pqcache serves for the Dataset, one entry per series.
func seriesNamesOf(ns, name string) []string {
	GinkgoHelper()
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "pqcache_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["namespace"] == ns && labels["dataset"] == name {
				names = append(names, f.GetName())
			}
		}
	}
	return names
}

var _ = Describe("Dataset controller", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("creates an owned claim and a restricted worker Job that runs pqcache sync with the Secret's keys", func() {
		ds := testenv.NewDataset(ns, "tpch")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)

		var pvc corev1.PersistentVolumeClaim
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tpch-cache"}, &pvc)).To(Succeed())
		Expect(metav1.IsControlledBy(&pvc, testenv.GetDataset(ds))).To(BeTrue())
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("5Gi"))
		Expect(pvc.Spec.StorageClassName).To(Equal(ptr.To("fast")))
		Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))

		Expect(metav1.IsControlledBy(job, testenv.GetDataset(ds))).To(BeTrue())
		Expect(job.Annotations).To(HaveKeyWithValue(AnnotationTrigger, TriggerInitial))
		Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](0)))
		Expect(job.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](6 * 3600)))
		Expect(job.Spec.TTLSecondsAfterFinished).To(Equal(ptr.To[int32](3600)))
		pod := job.Spec.Template.Spec
		Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(pod.SecurityContext.FSGroup).To(Equal(ptr.To[int64](jobs.WorkerUID)))
		Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(pod.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("tpch-cache"))
		c := pod.Containers[0]
		Expect(c.Image).To(Equal(testWorkerImage))
		Expect(c.Args).To(Equal([]string{"sync", "s3://analytics/tpch/", "/data", "--parallel", "8", "--progress", "json", "--log-level", "info",
			"--report-file", "/dev/termination-log", "--part-size", "16Mi", "--generations", "2", "--exclude", "**/_SUCCESS",
			"--endpoint", "http://s3.example.test:9000", "--path-style"}))
		Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
		Expect(c.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
		Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
		Expect(c.VolumeMounts).To(ConsistOf(corev1.VolumeMount{Name: "data", MountPath: "/data"}))
		Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
		secretKeys := []string{}
		for _, e := range c.Env {
			Expect(e.Value).To(BeEmpty(), "credentials must be passed by reference")
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				Expect(ref.Name).To(Equal("s3-creds"))
				secretKeys = append(secretKeys, ref.Key)
			} else {
				Expect(e.ValueFrom.FieldRef.FieldPath).To(BeElementOf("metadata.name", "metadata.namespace"))
			}
		}
		Expect(secretKeys).To(ConsistOf(wire.EnvAccessKeyID, wire.EnvSecretAccessKey, wire.EnvSessionToken))

		// During the first sync: not Ready, Syncing, and kstatus reads InProgress.
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionSyncing)).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.InProgressStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("turns the worker's report into status, Ready, and Current for kstatus", func() {
		ds := testenv.NewDataset(ns, "ok")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(12, 3000)})

		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
			ls := cur.Status.LastSync
			g.Expect(ls).NotTo(BeNil())
			g.Expect(ls.Result).To(Equal(datav1alpha1.SyncSucceeded))
			g.Expect(ls.JobName).To(Equal(job.Name))
			g.Expect(ls.Trigger).To(Equal(TriggerInitial))
			g.Expect(ls.FilesCopied).To(Equal(int64(12)))
			g.Expect(ls.BytesCopied).To(Equal(int64(3000)))
			g.Expect(ls.GetRequests).To(Equal(int64(12)))
			g.Expect(cur.Status.Manifest.Files).To(Equal(int64(12)))
			g.Expect(cur.Status.Manifest.Digest).To(Equal("sha256:abc"))
			g.Expect(cur.Status.Layout.Advice).To(Equal([]string{"small groups"}))
			g.Expect(cur.Status.CapacityBytes).To(Equal(int64(5 << 30)))
			g.Expect(cur.Status.LastSuccessfulSyncTime).NotTo(BeNil())
			g.Expect(meta.IsStatusConditionFalse(cur.Status.Conditions, datav1alpha1.ConditionSyncing)).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(cur.Status.Conditions, datav1alpha1.ConditionDegraded)).To(BeTrue())
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.CurrentStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())

		// The counters alerts take increase() of exist before their first increment (read before
		// ToFloat64 below, which would create them).
		Expect(seriesNamesOf(ns, "ok")).To(ContainElements("pqcache_sync_failures_total", "pqcache_dataset_changes_found_by_listing_total"))
		l := prometheus.Labels{"namespace": ns, "dataset": "ok"}
		Expect(testutil.ToFloat64(syncFailures.With(l))).To(BeZero())
		Expect(testutil.ToFloat64(syncFilesCopied.With(l))).To(Equal(12.0))
		Expect(testutil.ToFloat64(syncBytesCopied.With(l))).To(Equal(3000.0))
		Expect(testutil.ToFloat64(cacheBytes.With(l))).To(Equal(3000.0))
		Expect(testutil.ToFloat64(outOfSync.With(l))).To(Equal(0.0))
		Expect(testutil.ToFloat64(lastSuccessfulSync.With(l))).To(BeNumerically(">", 0))

		// Deleting the Dataset drops its series.
		Expect(k8sClient.Delete(ctx, testenv.GetDataset(ds))).To(Succeed())
		Eventually(func() int { return seriesOf(ns, "ok") }).WithTimeout(10 * time.Second).Should(BeZero())
	})

	It("backs off after a failure, says why, and a later success clears the error", func() {
		ds := testenv.NewDataset(ns, "denied")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		testenv.FinishJob(job, testenv.Finish{Failed: true, Report: &wire.SyncReport{Result: wire.ResultFailed, Reason: wire.ReasonAccessDenied, Message: "listing s3://analytics/tpch/: AccessDenied"}})

		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			d := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionDegraded)
			g.Expect(d).NotTo(BeNil())
			g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(d.Reason).To(Equal(wire.ReasonAccessDenied))
			g.Expect(cur.Status.FailedAttempts).To(Equal(int32(1)))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionStalled)).To(BeTrue())
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// Within the backoff nothing starts, even when something wakes the controller.
		testenv.Touch(ds)
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())

		// After it, a retry starts; its success clears Degraded and Stalled.
		fakeClock.Step(retryBackoff(1) + time.Second)
		testenv.Touch(ds)
		retry := testenv.WaitForJobs(ds, 2)
		Expect(retry.Annotations).To(HaveKeyWithValue(AnnotationTrigger, TriggerRetry))
		testenv.FinishJob(retry, testenv.Finish{Report: testenv.SuccessReport(3, 30)})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(meta.IsStatusConditionFalse(cur.Status.Conditions, datav1alpha1.ConditionDegraded)).To(BeTrue())
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionStalled)).To(BeNil())
			g.Expect(cur.Status.FailedAttempts).To(BeZero())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("reports a Job stopped by its deadline as DeadlineExceeded, and an OOM-killed worker plainly", func() {
		ds := testenv.NewDataset(ns, "slow")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Failed: true, JobReason: batchv1.JobReasonDeadlineExceeded})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.LastSync).NotTo(BeNil())
			g.Expect(cur.Status.LastSync.Reason).To(Equal(datav1alpha1.ReasonDeadlineExceeded))
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionDegraded).Reason).To(Equal(datav1alpha1.ReasonDeadlineExceeded))
			// A retryable failure keeps the Dataset in progress for kstatus, not failed.
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.InProgressStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		fakeClock.Step(retryBackoff(1) + time.Second)
		testenv.Touch(ds)
		testenv.FinishJob(testenv.WaitForJobs(ds, 2), testenv.Finish{Failed: true, OOMKilled: true})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.FailedAttempts).To(Equal(int32(2)))
			g.Expect(cur.Status.LastSync.Message).To(ContainSubstring("OOMKilled"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("waits when onCreate is false, runs one sync per new manual token, and records the token", func() {
		ds := testenv.NewDataset(ns, "manual", func(d *datav1alpha1.Dataset) { d.Spec.Refresh.OnCreate = ptr.To(false) })
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			r := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.Reason).To(Equal(datav1alpha1.ReasonNotSynced))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(BeEmpty()) }).WithTimeout(time.Second).Should(Succeed())

		cur := testenv.GetDataset(ds)
		cur.Spec.Refresh.Manual = "2026-12-02T10:00"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		Expect(job.Annotations).To(HaveKeyWithValue(AnnotationTrigger, TriggerManual))
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 1)})
		Eventually(func(g Gomega) {
			g.Expect(testenv.GetDataset(ds).Status.LastManualSync).To(Equal("2026-12-02T10:00"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		testenv.Touch(ds)
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("holds every trigger while suspended", func() {
		ds := testenv.NewDataset(ns, "held", func(d *datav1alpha1.Dataset) {
			d.Spec.Refresh.Suspend = true
			d.Spec.Refresh.Manual = "now"
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			s := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(s).NotTo(BeNil())
			g.Expect(s.Reason).To(Equal(datav1alpha1.ReasonSuspended))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(BeEmpty()) }).WithTimeout(time.Second).Should(Succeed())
	})

	It("runs a schedule once when it is due, and shows the next time", func() {
		ds := testenv.NewDataset(ns, "hourly", func(d *datav1alpha1.Dataset) {
			d.Spec.Refresh.Schedule = "@every 1h"
			d.Spec.Refresh.OnCreate = ptr.To(false)
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.NextSyncTime).NotTo(BeNil())
			g.Expect(cur.Status.NextSyncTime.Time).To(BeTemporally("~", cur.CreationTimestamp.Add(time.Hour), time.Second))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(BeEmpty()) }).WithTimeout(time.Second).Should(Succeed())

		Expect(seriesNamesOf(ns, "hourly")).To(ContainElement("pqcache_dataset_next_sync_timestamp_seconds"))

		// Three hours later (the operator was down): one sync, not three.
		fakeClock.Step(3 * time.Hour)
		testenv.Touch(ds)
		job := testenv.WaitForJobs(ds, 1)
		Expect(job.Annotations).To(HaveKeyWithValue(AnnotationTrigger, TriggerScheduled))
		// While the listing that was due runs, it is not overdue: the next-listing series is withdrawn.
		Eventually(func() []string { return seriesNamesOf(ns, "hourly") }).WithTimeout(10 * time.Second).
			ShouldNot(ContainElement("pqcache_dataset_next_sync_timestamp_seconds"))
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 1)})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.LastSync).NotTo(BeNil())
			g.Expect(cur.Status.NextSyncTime.Time).To(BeTemporally(">", time.Now().Add(50*time.Minute)))
			g.Expect(seriesNamesOf(ns, "hourly")).To(ContainElement("pqcache_dataset_next_sync_timestamp_seconds"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(1)) }).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("copies the progress a worker publishes on its pod into status, and clears it after", func() {
		ds := testenv.NewDataset(ns, "busy")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		// The worker's side, through the same publisher it uses.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name + "-abcde", Labels: map[string]string{jobs.ControllerUIDLabel: string(job.UID)}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: jobs.SyncContainerName, Image: testWorkerImage}}},
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		pub := podprogress.New(cs, ns, pod.Name, time.Hour, nil)
		pub.Publish(ctx, wire.SyncProgress{Listing: true, FilesDone: 3, FilesTotal: 10, BytesDone: 300, BytesTotal: 1000, BytesPerSecond: 100, RemainingMillis: 7000, Time: time.Now()}, true)
		pub.Publish(ctx, wire.SyncProgress{FilesDone: 4}, false) // within the interval: not sent
		testenv.Touch(ds)
		Eventually(func(g Gomega) {
			p := testenv.GetDataset(ds).Status.Progress
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.FilesDone).To(Equal(int64(3)))
			g.Expect(p.Listing).To(BeTrue(), "totals that still grow say so")
			g.Expect(p.BytesTotal).To(Equal(int64(1000)))
			g.Expect(p.RemainingMillis).To(Equal(int64(7000)))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(10, 1000)})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.LastSync).NotTo(BeNil())
			g.Expect(cur.Status.Progress).To(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// A publisher without a pod to write to turns itself off after one failure.
		var warnings []error
		gone := podprogress.New(cs, ns, "no-such-pod", 0, func(err error) { warnings = append(warnings, err) })
		gone.Publish(ctx, wire.SyncProgress{}, true)
		gone.Publish(ctx, wire.SyncProgress{}, true)
		Expect(warnings).To(HaveLen(1), "one warning, then silence")
		Expect(warnings[0].Error()).To(ContainSubstring("no-such-pod"))
	})

	It("ships a worker progress policy that the API server accepts", func() {
		f := testenv.LoadFixture(testenv.Path("config", "rbac", "worker_progress.yaml"))
		for _, u := range f.Objects {
			u.SetResourceVersion("")
			Expect(k8sClient.Create(ctx, u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
		}
	})

	It("sizes an omitted capacity from a listing Job, then syncs", func() {
		ds := testenv.NewDataset(ns, "sized", func(d *datav1alpha1.Dataset) { d.Spec.Volume.Capacity = nil })
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		size := testenv.WaitForSizeJob(ns)
		c := size.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--dry-run", "/plan", "--exclude", "**/_SUCCESS"))
		Expect(size.Spec.Template.Spec.Volumes[0].EmptyDir).NotTo(BeNil(), "listing needs no claim")
		Eventually(func(g Gomega) {
			r := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)
			g.Expect(r).NotTo(BeNil())
			g.Expect(r.Reason).To(Equal(datav1alpha1.ReasonSizingVolume))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(testenv.SyncJobsOf(Default, ds)).To(HaveLen(1), "only the sizing Job until the claim exists")

		testenv.FinishJob(&size, testenv.Finish{Report: &wire.SyncReport{Result: wire.ResultSucceeded, DryRun: true, Plan: wire.PlanSummary{Copies: 40, CopyBytes: 10 << 30}}})
		var pvc corev1.PersistentVolumeClaim
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sized-cache"}, &pvc)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("14Gi"), "10 GiB + 25% + 1 GiB, rounded up")
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.CapacityNote).To(ContainSubstring("sized 14Gi from the listing (40 objects"))
			g.Expect(cur.Status.CapacityBytes).To(Equal(int64(14 << 30)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			var list batchv1.JobList
			g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{jobs.LabelComponent: jobs.ComponentSync})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("reports a sizing listing that is denied like a failed sync", func() {
		ds := testenv.NewDataset(ns, "sizedenied", func(d *datav1alpha1.Dataset) { d.Spec.Volume.Capacity = nil })
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		size := testenv.WaitForSizeJob(ns)
		testenv.FinishJob(&size, testenv.Finish{Failed: true, Report: &wire.SyncReport{Result: wire.ResultFailed, Reason: wire.ReasonNoSuchBucket, Message: "NoSuchBucket: analytics"}})
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.LastSync).NotTo(BeNil())
			g.Expect(cur.Status.LastSync.Trigger).To(Equal(TriggerSizing))
			d := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionDegraded)
			g.Expect(d.Reason).To(Equal(wire.ReasonNoSuchBucket))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		var pvcs corev1.PersistentVolumeClaimList
		Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns))).To(Succeed())
		Expect(pvcs.Items).To(BeEmpty())
	})

	It("grows an expandable claim after a sync is refused for lack of room", func() {
		// The API server only lets a claim grow when its StorageClass allows expansion.
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable-" + ns}, Provisioner: "example.test/csi", AllowVolumeExpansion: ptr.To(true)}
		Expect(k8sClient.Create(ctx, sc)).To(Succeed())
		ds := testenv.NewDataset(ns, "grow", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume.AllowExpansion = ptr.To(true)
			d.Spec.Volume.StorageClassName = ptr.To(sc.Name)
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		// The claim is bound at 5Gi, as a provisioner would leave it.
		var pvc corev1.PersistentVolumeClaim
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow-cache"}, &pvc)).To(Succeed())
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}
		Expect(k8sClient.Status().Update(ctx, &pvc)).To(Succeed())

		testenv.FinishJob(job, testenv.Finish{Failed: true, Report: &wire.SyncReport{
			Result: wire.ResultFailed, Reason: wire.ReasonInsufficientCapacity, Message: "insufficient capacity",
			Space: &wire.Space{NeedBytes: 8 << 30, FreeBytes: 4 << 30, TotalBytes: 5 << 30},
		}})
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow-cache"}, &pvc)).To(Succeed())
			// 5Gi now + 4Gi missing, +25% and 1Gi, rounded up.
			g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("13Gi"), "conditions: %+v", testenv.GetDataset(ds).Status.Conditions)
			cur := testenv.GetDataset(ds)
			g.Expect(cur.Status.LastSync.NeededBytes).To(Equal(int64(4 << 30)))
			g.Expect(cur.Status.CapacityNote).To(ContainSubstring("grown from 5Gi to 13Gi"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// While the resize is in progress the request does not grow again.
		testenv.Touch(ds)
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "grow-cache"}, &pvc)).To(Succeed())
			g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("13Gi"))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("re-plans at once when the source changes, and is not Ready until it has", func() {
		ds := testenv.NewDataset(ns, "moved")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(5, 50)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		cur := testenv.GetDataset(ds)
		cur.Spec.Source.S3.Prefix = "tpch-v2/"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		job := testenv.WaitForJobs(ds, 2)
		Expect(job.Annotations).To(HaveKeyWithValue(AnnotationTrigger, TriggerSourceChanged))
		Expect(job.Spec.Template.Spec.Containers[0].Args[1]).To(Equal("s3://analytics/tpch-v2/"))
		Eventually(func(g Gomega) {
			r := meta.FindStatusCondition(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)
			g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(r.Reason).To(Equal(datav1alpha1.ReasonSyncInProgress))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// A schedule change is not a source change: no sync, and Ready stays as it is.
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(5, 50)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		cur = testenv.GetDataset(ds)
		cur.Spec.Refresh.Schedule = "0 3 * * *"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(testenv.SyncJobsOf(g, ds)).To(HaveLen(2))
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("writes status only when it changes", func() {
		ds := testenv.NewDataset(ns, "quiet")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(2, 20)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// A second reconciler, sharing nothing but the API server, reconciles the settled Dataset.
		counting := &statusWriteCounter{Client: k8sClient}
		r := &Reconciler{Client: counting, APIReader: k8sClient, Clock: fakeClock, Worker: jobs.DefaultWorkerOptions()}
		req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ds)}
		for range 5 {
			_, err := r.Reconcile(ctx, req)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(counting.writes.Load()).To(BeZero(), "a reconcile with nothing new wrote status")
		Expect(testenv.SyncJobsOf(Default, ds)).To(HaveLen(1))
	})

	It("says when its sync pod fits no node", func() {
		ds := testenv.NewDataset(ns, "nowhere")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		testenv.CreateUnschedulablePod(job, jobs.SyncContainerName, "0/1 nodes are available: 1 Insufficient memory.")
		want := "Job " + job.Name + " cannot be scheduled and waits for a node with room until sync.timeout: 0/1 nodes are available: 1 Insufficient memory."
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			for _, t := range []string{datav1alpha1.ConditionSyncing, datav1alpha1.ConditionReady, datav1alpha1.ConditionReconciling} {
				c := meta.FindStatusCondition(cur.Status.Conditions, t)
				g.Expect(c).NotTo(BeNil(), t)
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnschedulable), t)
				g.Expect(c.Message).To(Equal(want), t)
			}
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.InProgressStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// Once the sync finishes, the Dataset is Ready as usual.
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(1, 10)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("counts a finished Job once, even when a reconcile starts from a stale copy", func() {
		ds := testenv.NewDataset(ns, "stale")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		job := testenv.WaitForJobs(ds, 1)
		stale := testenv.GetDataset(ds) // as a lagging cache would still show it: the Job not yet recorded
		testenv.FinishJob(job, testenv.Finish{Report: testenv.SuccessReport(5, 500)})
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(testenv.GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// The metrics are observed just after the status write lands, so a reader can see Ready first.
		l := prometheus.Labels{"namespace": ns, "dataset": "stale"}
		Eventually(func() float64 { return testutil.ToFloat64(syncFilesCopied.With(l)) }).WithTimeout(10 * time.Second).Should(Equal(5.0))
		recorded := testenv.GetDataset(ds)

		// A second reconciler reads the stale copy: it sees the same finished Job as news.
		r := &Reconciler{Client: &staleReader{Client: k8sClient, stale: stale}, APIReader: k8sClient, Clock: fakeClock, Worker: jobs.DefaultWorkerOptions()}
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ds)})
		Expect(err).NotTo(HaveOccurred())
		Expect(testutil.ToFloat64(syncFilesCopied.With(l))).To(Equal(5.0), "the Job was counted twice")
		after := testenv.GetDataset(ds)
		Expect(after.ResourceVersion).To(Equal(recorded.ResourceVersion), "the stale reconcile wrote status")
		Expect(testenv.SyncJobsOf(Default, ds)).To(HaveLen(1))
	})

	It("keeps a retained claim without an owner, and owns a deletable one", func() {
		kept := testenv.NewDataset(ns, "kept", func(d *datav1alpha1.Dataset) { d.Spec.Volume.Reclaim = datav1alpha1.ReclaimRetain })
		Expect(k8sClient.Create(ctx, kept)).To(Succeed())
		var pvc corev1.PersistentVolumeClaim
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kept-cache"}, &pvc)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(pvc.OwnerReferences).To(BeEmpty())
		job := testenv.WaitForJobs(kept, 1)
		Expect(metav1.IsControlledBy(job, testenv.GetDataset(kept))).To(BeTrue(), "Jobs always go with their Dataset")
	})

	It("stalls with ClaimNotFound when the existing claim is missing", func() {
		ds := testenv.NewDataset(ns, "noclaim", func(d *datav1alpha1.Dataset) {
			d.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "missing"}
		})
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			cur := testenv.GetDataset(ds)
			s := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionStalled)
			g.Expect(s).NotTo(BeNil())
			g.Expect(s.Reason).To(Equal(datav1alpha1.ReasonClaimNotFound))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(testenv.SyncJobsOf(Default, ds)).To(BeEmpty())
	})
})

// staleReader answers Gets of one Dataset with an old copy, as an informer cache that has not seen the
// latest write yet would.
type staleReader struct {
	client.Client
	stale *datav1alpha1.Dataset
}

func (c *staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if ds, ok := obj.(*datav1alpha1.Dataset); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(ds)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
