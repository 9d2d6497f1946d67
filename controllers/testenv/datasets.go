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

package testenv

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// NewDataset builds a Dataset with credentials from a Secret; mutate adjusts it.
func NewDataset(ns, name string, mutate ...func(*datav1alpha1.Dataset)) *datav1alpha1.Dataset {
	ds := &datav1alpha1.Dataset{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: datav1alpha1.DatasetSpec{
			Source: datav1alpha1.DatasetSource{S3: datav1alpha1.S3Source{
				Bucket: "analytics", Prefix: "tpch/", Endpoint: "http://s3.example.test:9000", ForcePathStyle: true,
				Credentials: &datav1alpha1.S3Credentials{SecretRef: &datav1alpha1.SecretReference{Name: "s3-creds"}},
			}},
			Exclude: []string{"**/_SUCCESS"},
			Volume:  datav1alpha1.DatasetVolume{Capacity: ptr.To(resource.MustParse("5Gi")), StorageClassName: ptr.To("fast")},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

// GetDataset reads ds as the API server has it now.
func GetDataset(ds *datav1alpha1.Dataset) *datav1alpha1.Dataset {
	GinkgoHelper()
	out := &datav1alpha1.Dataset{}
	Expect(Client.Get(Ctx, client.ObjectKeyFromObject(ds), out)).To(Succeed())
	return out
}

// SyncJobsOf returns the Dataset's sync Jobs.
func SyncJobsOf(g Gomega, ds *datav1alpha1.Dataset) []batchv1.Job {
	var list batchv1.JobList
	g.Expect(Client.List(Ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{jobs.LabelDataset: datav1alpha1.LabelValue(ds.Name)})).To(Succeed())
	return list.Items
}

// WaitForJobs waits until the Dataset has n sync Jobs and returns the running one (or, if none runs,
// any: the tests ask for it right after a trigger).
func WaitForJobs(ds *datav1alpha1.Dataset, n int) *batchv1.Job {
	GinkgoHelper()
	var pick *batchv1.Job
	Eventually(func(g Gomega) {
		found := SyncJobsOf(g, ds)
		g.Expect(found).To(HaveLen(n))
		pick = &found[0]
		for i := range found {
			if !jobs.StateOf(&found[i]).Finished {
				pick = &found[i]
			}
		}
	}).WithTimeout(15 * time.Second).Should(Succeed())
	return pick
}

// WaitForSizeJob waits for the one claim-sizing Job in ns.
func WaitForSizeJob(ns string) batchv1.Job {
	GinkgoHelper()
	var size batchv1.Job
	Eventually(func(g Gomega) {
		var list batchv1.JobList
		g.Expect(Client.List(Ctx, &list, client.InNamespace(ns), client.MatchingLabels{jobs.LabelComponent: jobs.ComponentSize})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		size = list.Items[0]
	}).WithTimeout(10 * time.Second).Should(Succeed())
	return size
}

// Finish is how FinishJob ends a sync Job.
type Finish struct {
	Failed    bool
	JobReason string // reason of the Failed condition, e.g. DeadlineExceeded
	Report    *wire.SyncReport
	OOMKilled bool
}

// FinishJob does what the Job controller and kubelet would: a pod whose sync container terminated
// with the report as its termination message (or OOMKilled), and the Job's terminal conditions.
func FinishJob(job *batchv1.Job, f Finish) {
	GinkgoHelper()
	if f.Report != nil || f.OOMKilled {
		term := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
		if f.Report != nil {
			msg, err := f.Report.Compact(wire.TerminationMessageLimit)
			Expect(err).NotTo(HaveOccurred())
			term.Message = string(msg)
			if f.Report.Result == wire.ResultFailed {
				term.ExitCode, term.Reason = 1, "Error"
			}
		}
		if f.OOMKilled {
			term.ExitCode, term.Reason = 137, "OOMKilled"
		}
		CreateTerminatedPod(job, jobs.SyncContainerName, term, nil)
	}
	MarkJobFinished(job, f.Failed, f.JobReason)
}

// CreateTerminatedPod creates the pod of job as the kubelet leaves it: its container terminated as
// term and, if given, its init containers' statuses.
func CreateTerminatedPod(job *batchv1.Job, container string, term *corev1.ContainerStateTerminated, initStatuses []corev1.ContainerStatus) {
	GinkgoHelper()
	pod := CreateJobPod(job, container)
	term.FinishedAt = metav1.NewTime(Clock.Now())
	pod.Status.Phase = corev1.PodSucceeded
	if term.ExitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container, Image: WorkerImage, State: corev1.ContainerState{Terminated: term}}}
	pod.Status.InitContainerStatuses = initStatuses
	Expect(Client.Status().Update(Ctx, pod)).To(Succeed())
}

// CreateJobPod creates a pod of job, as the Job controller would, with one container.
func CreateJobPod(job *batchv1.Job, container string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, GenerateName: job.Name + "-", Labels: map[string]string{jobs.ControllerUIDLabel: string(job.UID)}},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: container, Image: WorkerImage}}},
	}
	Expect(Client.Create(Ctx, pod)).To(Succeed())
	return pod
}

// CreateUnschedulablePod creates the pod of job as the scheduler leaves it when no node has room:
// Pending, PodScheduled False with reason Unschedulable and the scheduler's message.
func CreateUnschedulablePod(job *batchv1.Job, container, message string) *corev1.Pod {
	GinkgoHelper()
	pod := CreateJobPod(job, container)
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: message, LastTransitionTime: metav1.Now(),
	}}
	Expect(Client.Status().Update(Ctx, pod)).To(Succeed())
	return pod
}

// MarkJobFinished sets the terminal conditions the Job controller would: Complete, or Failed with
// reason (BackoffLimitExceeded by default). The times come from the controller's (fake) clock, as they
// would from the one clock of a real cluster.
func MarkJobFinished(job *batchv1.Job, failed bool, reason string) {
	GinkgoHelper()
	now := metav1.NewTime(Clock.Now())
	Expect(Client.Get(Ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	start := metav1.NewTime(now.Add(-5 * time.Second))
	job.Status.StartTime = &start
	if failed {
		if reason == "" {
			reason = batchv1.JobReasonBackoffLimitExceeded
		}
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "Job failed", LastTransitionTime: now},
		}
	} else {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	Expect(Client.Status().Update(Ctx, job)).To(Succeed())
}

// SuccessReport is a successful sync's report of files and bytes copied.
func SuccessReport(files, bytes int64) *wire.SyncReport {
	return &wire.SyncReport{
		Result: wire.ResultSucceeded, FilesCopied: files, BytesCopied: bytes, BytesPerSecond: bytes, DurationMillis: 1000,
		Requests: wire.RequestCounts{List: 1, Get: files},
		Manifest: wire.ManifestSummary{Files: files, Bytes: bytes, Generation: 1, Digest: "sha256:abc"},
		Layout:   wire.Layout{ParquetFiles: files, RowGroups: 2 * files, MinRowsPerGroup: 1000, MaxRowsPerGroup: 4000, Advice: []string{"small groups"}},
	}
}

// KstatusOf computes what Flux (kstatus) reads from the object.
func KstatusOf(obj runtime.Object) status.Status {
	GinkgoHelper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	Expect(err).NotTo(HaveOccurred())
	res, err := status.Compute(&unstructured.Unstructured{Object: m})
	Expect(err).NotTo(HaveOccurred())
	return res.Status
}

// Touch changes an annotation to make the controller reconcile now (after the fake clock moved).
func Touch(ds *datav1alpha1.Dataset) {
	GinkgoHelper()
	// A merge patch, not an update: the controller writes status meanwhile, and a touch needs no lock.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test/touched":%q}}}`, time.Now().Format(time.RFC3339Nano))
	Expect(Client.Patch(Ctx, GetDataset(ds), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// ReadyDataset creates a Dataset and completes its first sync, so that runs can start.
func ReadyDataset(ns, name string, mutate ...func(*datav1alpha1.Dataset)) *datav1alpha1.Dataset {
	GinkgoHelper()
	ds := NewDataset(ns, name, mutate...)
	Expect(Client.Create(Ctx, ds)).To(Succeed())
	FinishJob(WaitForJobs(ds, 1), Finish{Report: SuccessReport(8, 800)})
	Eventually(func(g Gomega) {
		g.Expect(meta.IsStatusConditionTrue(GetDataset(ds).Status.Conditions, datav1alpha1.ConditionReady)).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	return ds
}
