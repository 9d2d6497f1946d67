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
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
)

// What only a real cluster shows: the garbage collector deleting what an object owned, a kubelet
// refusing to start a container, the operator's cap on bench Jobs (one, in this suite) shared by runs
// that come and go.
var _ = Describe("Objects that come and go on a real cluster", Ordered, Serial, func() {
	var (
		ns       string
		endpoint string
	)
	const lifePrefix = "life/sf0.01/"

	dataset := func(name, extra string) *datav1alpha1.Dataset {
		var ds datav1alpha1.Dataset
		fromYAML(&ds, `
apiVersion: data.pqcache.dev/v1alpha1
kind: Dataset
metadata: {name: %s, namespace: %s}
spec:
  source:
    s3: {bucket: %s, prefix: %s, endpoint: %s, forcePathStyle: true, credentials: {secretRef: {name: %s}}}
  volume: {capacity: 1Gi%s}
`, name, ns, bucket, lifePrefix, endpoint, s3Secret, extra)
		return &ds
	}
	run := func(name, configs string) *datav1alpha1.BenchRun {
		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: %s, namespace: %s}
spec:
  datasetRef: {name: base}
  queries: [q1, q6]
  inputs: [{type: volume}]
  configs: %s
  iterations: 1
  warmups: 0
  timeout: 10m
`, name, ns, configs)
		return &br
	}
	get := func(obj client.Object) client.Object {
		GinkgoHelper()
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj
	}
	jobsOf := func(br *datav1alpha1.BenchRun) []batchv1.Job {
		var list batchv1.JobList
		Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var out []batchv1.Job
		for _, j := range list.Items {
			if metav1.IsControlledBy(&j, br) {
				out = append(out, j)
			}
		}
		return out
	}
	succeeded := func(br *datav1alpha1.BenchRun, timeout time.Duration) {
		GinkgoHelper()
		waitBenchRun(br, timeout)
		cond := meta.FindStatusCondition(br.Status.Conditions, datav1alpha1.ConditionSucceeded)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Reason).To(Equal(datav1alpha1.ReasonCompleted), "%s: %s", br.Name, conditionsString(br.Status.Conditions))
	}

	BeforeAll(func() {
		ns = newNamespace("pqcache-life-")
		endpoint = startS3(ns)
		runJob(ns, "load",
			pqcacheContainer("datagen", "datagen", "--scale", "0.01", "--out", "/work/tpch"),
			pqcacheContainer("upload", "s3", "put", "/work/tpch", "s3://"+bucket+"/"+lifePrefix, "--endpoint", endpoint, "--path-style"),
		)
		base := dataset("base", "")
		Expect(c.Create(ctx, base)).To(Succeed())
		waitReady(base, 3*time.Minute)
	})

	It("gives the queue back when a run is deleted while its Jobs wait", func() {
		// Two configurations no node can hold: the first takes the one bench slot and waits for room,
		// the second waits for the slot.
		hog := run("hog", `[{name: huge-a, cpu: "64", memory: 1Gi}, {name: huge-b, cpu: "64", memory: 1Gi}]`)
		Expect(c.Create(ctx, hog)).To(Succeed())
		Eventually(func(g Gomega) {
			get(hog)
			g.Expect(hog.Status.Jobs).NotTo(BeNil())
			g.Expect(hog.Status.Jobs.Active).To(Equal(int32(1)))
			g.Expect(hog.Status.Jobs.Queued).To(Equal(int32(1)))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		victim := run("victim", `[{name: small, cpu: "1", memory: 1Gi}]`)
		Expect(c.Create(ctx, victim)).To(Succeed())
		Eventually(func(g Gomega) {
			get(victim)
			g.Expect(victim.Status.Jobs).NotTo(BeNil())
			g.Expect(victim.Status.Jobs.Queued).To(Equal(int32(1)))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		By("deleting the run that holds the slot and the oldest place in the queue")
		Expect(c.Delete(ctx, hog)).To(Succeed())
		succeeded(victim, 3*time.Minute)
		Expect(jobsOf(hog)).To(BeEmpty(), "the garbage collector deleted the deleted run's Jobs")
	})

	It("keeps the result of a Job that was collected, and measures nothing twice", func() {
		br := run("collected", `[{name: first, cpu: "1", memory: 1Gi}, {name: second, cpu: 500m, memory: 1Gi}]`)
		Expect(c.Create(ctx, br)).To(Succeed())
		var first datav1alpha1.BenchResult
		Eventually(func(g Gomega) {
			get(br)
			for _, r := range br.Status.Results {
				if r.CompletionTime != nil {
					first = r
				}
			}
			g.Expect(first.CompletionTime).NotTo(BeNil())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("deleting Job " + first.JobName + " as its TTL would")
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.JobName}}
		Expect(c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		succeeded(br, 3*time.Minute)
		Expect(br.Status.Results).To(HaveLen(2))
		for _, r := range br.Status.Results {
			if r.JobName == first.JobName {
				Expect(r).To(Equal(first), "the recorded result changed after its Job went")
			}
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(job), job)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the collected Job was created again: %v", err)
	})

	It("gives runs whose names and configurations run together Jobs of their own", func() {
		a := run("x-a", `[{name: b, cpu: "1", memory: 1Gi}]`)
		b := run("x", `[{name: a-b, cpu: "1", memory: 1Gi}]`)
		Expect(c.Create(ctx, a)).To(Succeed())
		Expect(c.Create(ctx, b)).To(Succeed())
		succeeded(a, 3*time.Minute)
		succeeded(b, 3*time.Minute)
		Expect(a.Status.Results[0].JobName).NotTo(Equal(b.Status.Results[0].JobName))
	})

	It("keeps the data when reclaim turns to Retain, and deletes it when it turns to Delete", func() {
		claimOf := func(name string) *corev1.PersistentVolumeClaim {
			return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-cache"}}
		}
		flip := func(ds *datav1alpha1.Dataset, to datav1alpha1.ReclaimPolicy) {
			GinkgoHelper()
			get(ds)
			patch := client.MergeFrom(ds.DeepCopy())
			ds.Spec.Volume.Reclaim = to
			Expect(c.Patch(ctx, ds, patch)).To(Succeed())
		}
		deleteAndWait := func(ds *datav1alpha1.Dataset) {
			GinkgoHelper()
			Expect(c.Delete(ctx, ds)).To(Succeed())
			Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ds), ds)) }).
				WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue())
		}

		keep := dataset("keep", ", reclaim: Delete")
		Expect(c.Create(ctx, keep)).To(Succeed())
		waitReady(keep, 3*time.Minute)
		flip(keep, datav1alpha1.ReclaimRetain)
		Eventually(func(g Gomega) {
			g.Expect(get(claimOf("keep")).GetOwnerReferences()).To(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		deleteAndWait(keep)
		Consistently(func() error { return c.Get(ctx, client.ObjectKeyFromObject(claimOf("keep")), claimOf("keep")) }).
			WithTimeout(20*time.Second).WithPolling(2*time.Second).Should(Succeed(), "the garbage collector deleted a retained claim")
		Expect(c.Delete(ctx, claimOf("keep"))).To(Succeed())

		drop := dataset("drop", ", reclaim: Retain")
		Expect(c.Create(ctx, drop)).To(Succeed())
		waitReady(drop, 3*time.Minute)
		Expect(get(claimOf("drop")).GetOwnerReferences()).To(BeEmpty())
		flip(drop, datav1alpha1.ReclaimDelete)
		Eventually(func(g Gomega) {
			g.Expect(metav1.IsControlledBy(get(claimOf("drop")), get(drop))).To(BeTrue())
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		deleteAndWait(drop)
		Eventually(func() bool {
			return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(claimOf("drop")), claimOf("drop")))
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the claim of a Delete Dataset outlived it")
	})

	It("refuses a second writer on a Dataset's volume and names the first", func() {
		intruder := dataset("intruder", "")
		intruder.Spec.Volume = datav1alpha1.DatasetVolume{ExistingClaim: "base-cache"}
		Expect(c.Create(ctx, intruder)).To(Succeed())
		Eventually(func(g Gomega) {
			get(intruder)
			stalled := meta.FindStatusCondition(intruder.Status.Conditions, datav1alpha1.ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(datav1alpha1.ReasonClaimInUse))
			g.Expect(stalled.Message).To(ContainSubstring("already holds the cache of Dataset base"))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		var jobs batchv1.JobList
		Expect(c.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{"data.pqcache.dev/dataset": "intruder"})).To(Succeed())
		Expect(jobs.Items).To(BeEmpty())
		Expect(c.Delete(ctx, intruder)).To(Succeed())
	})

	It("reports, in the kubelet's words, a worker pod whose container cannot start", func() {
		nosecret := dataset("nosecret", "")
		nosecret.Spec.Source.S3.Credentials.SecretRef.Name = "no-such-secret"
		Expect(c.Create(ctx, nosecret)).To(Succeed())
		Eventually(func(g Gomega) {
			get(nosecret)
			syncing := meta.FindStatusCondition(nosecret.Status.Conditions, datav1alpha1.ConditionSyncing)
			g.Expect(syncing).NotTo(BeNil())
			g.Expect(syncing.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting), "%s", conditionsString(nosecret.Status.Conditions))
			g.Expect(syncing.Message).To(ContainSubstring("CreateContainerConfigError"))
			g.Expect(syncing.Message).To(ContainSubstring(`secret "no-such-secret" not found`))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(c.Delete(ctx, nosecret)).To(Succeed())

		var br datav1alpha1.BenchRun
		fromYAML(&br, `
apiVersion: data.pqcache.dev/v1alpha1
kind: BenchRun
metadata: {name: noimage, namespace: %s}
spec:
  datasetRef: {name: base}
  queries: [q1]
  engines: [{name: command, image: pqcache.local/no-such-engine:1, command: [engine, "{query}", "{data}"]}]
  configs: [{name: small, cpu: "1", memory: 1Gi}]
  timeout: 10m
`, ns)
		Expect(c.Create(ctx, &br)).To(Succeed())
		Eventually(func(g Gomega) {
			get(&br)
			cond := meta.FindStatusCondition(br.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(datav1alpha1.ReasonPodNotStarting), "%s", conditionsString(br.Status.Conditions))
			g.Expect(cond.Message).To(MatchRegexp(`ErrImagePull|ImagePullBackOff`))
			g.Expect(cond.Message).To(ContainSubstring("pqcache.local/no-such-engine:1"))
		}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(c.Delete(ctx, &br)).To(Succeed()) // its Job holds the suite's one bench slot
	})
})
