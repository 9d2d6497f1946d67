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
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/bench"
	"github.com/pqcache/pqcache/bench/workload"
	"github.com/pqcache/pqcache/controllers/testenv"
)

func newBenchRun(ns, name, dataset string, mutate ...func(*datav1alpha1.BenchRun)) *datav1alpha1.BenchRun {
	run := &datav1alpha1.BenchRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: datav1alpha1.BenchRunSpec{
			DatasetRef: datav1alpha1.DatasetReference{Name: dataset},
			Queries:    []string{"q1", "q6"},
			Inputs:     []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}, {Type: datav1alpha1.InputClaim, ClaimName: "mountpoint-s3"}},
			Configs: []datav1alpha1.ResourceConfig{
				{Name: "small", CPU: resource.MustParse("1"), Memory: resource.MustParse("2Gi")},
				{Name: "large", CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi")},
			},
			Iterations:   2,
			NodeSelector: map[string]string{"topology.kubernetes.io/zone": "eu-west-1a"},
		},
	}
	for _, m := range mutate {
		m(run)
	}
	return run
}

func getRun(run *datav1alpha1.BenchRun) *datav1alpha1.BenchRun {
	GinkgoHelper()
	out := &datav1alpha1.BenchRun{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(run), out)).To(Succeed())
	return out
}

func benchJobsOf(g Gomega, run *datav1alpha1.BenchRun) []batchv1.Job {
	var list batchv1.JobList
	g.Expect(k8sClient.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{LabelBenchRun: datav1alpha1.LabelValue(run.Name)})).To(Succeed())
	return list.Items
}

// runnerSummary runs the real runner (bench.Run) with a shell engine whose answer to each query is
// answer, and returns the summary it leaves in a termination message. One iteration: a run of one has
// no spread, so the outcome these specs expect (Completed) does not depend on how busy this machine
// is; noisyRunnerSummary measures a spread.
func runnerSummary(label, answer string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	script := filepath.Join(dir, "engine.sh")
	Expect(os.WriteFile(script, []byte("#!/bin/sh\necho \"row-$1|"+answer+"\"\n"), 0o755)).To(Succeed())
	res, err := bench.Run(context.Background(), bench.Spec{
		Label: label, Engine: bench.CommandEngine{Args: []string{script, "{query}", "{data}"}}, Data: dir,
		Workload:   &workload.Resolved{Workload: "tpch", Queries: []workload.Query{{Name: "q1", SQL: "x"}, {Name: "q6", SQL: "x"}}},
		Iterations: 1, Warmups: 0, QueryTimeout: time.Minute,
	})
	Expect(err).NotTo(HaveOccurred())
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}

// noisyRunnerSummary runs the real runner, two iterations per query, with a shell engine whose own
// timer (the timing protocol) reports every other run at 400 ms instead of 30 ms (a neighbour's
// burst): each query's spread is 185 / 215 ms, 860 thousandths, whatever the machine's load adds to
// the processes' wall time (it once made a sleeping engine's 30 and 400 ms read as 751 and 913 ms).
func noisyRunnerSummary(label string) string {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	script := filepath.Join(dir, "engine.sh")
	Expect(os.WriteFile(script, []byte(`#!/bin/sh
n=$(cat "$2/count" 2>/dev/null || echo 0)
echo $((n + 1)) > "$2/count"
if [ $((n % 2)) -eq 0 ]; then ms=30; else ms=400; fi
echo "row-$1|answer"
echo "query_ms=$ms" >> "$PQCACHE_TIMING_FILE"
`), 0o755)).To(Succeed())
	res, err := bench.Run(context.Background(), bench.Spec{
		Label: label, Engine: bench.CommandEngine{Args: []string{script, "{query}", "{data}"}}, Data: dir,
		Workload:   &workload.Resolved{Workload: "tpch", Queries: []workload.Query{{Name: "q1", SQL: "x"}, {Name: "q6", SQL: "x"}}},
		Iterations: 2, Warmups: 0, QueryTimeout: time.Minute,
	})
	Expect(err).NotTo(HaveOccurred())
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}

// sessionRunnerSummary runs the real runner in session isolation with a shell engine that runs
// {queries} in one process and reports its ready time and each query's time (docs/bench.md,
// "Timing protocol"), and returns the summary it leaves in a termination message.
func sessionRunnerSummary(label string) string {
	GinkgoHelper()
	script := `sleep 0.02; echo "ready_unix_ns=$(date +%s%N)" >> "$PQCACHE_TIMING_FILE"
IFS=,
for q in $1; do
  sleep 0.01
  echo "row-$q|same"
  printf '\036pqcache:end-of-query\n'
  echo "query=$q query_ms=1.5" >> "$PQCACHE_TIMING_FILE"
done`
	res, err := bench.Run(context.Background(), bench.Spec{
		Label: label, Engine: bench.CommandEngine{Args: []string{"sh", "-c", script, "sh", "{queries}"}}, Data: GinkgoT().TempDir(),
		Workload:   &workload.Resolved{Workload: "tpch", Queries: []workload.Query{{Name: "q1", SQL: "x"}, {Name: "q6", SQL: "x"}}},
		Iterations: 2, Warmups: 0, QueryTimeout: time.Minute, Isolation: wire.IsolationSession,
	})
	Expect(err).NotTo(HaveOccurred())
	enc, err := wire.EncodeBenchSummary(res, wire.TerminationMessageLimit)
	Expect(err).NotTo(HaveOccurred())
	return string(enc)
}

// finishBenchJob completes a bench Job with a pod whose termination message is message (or which
// was OOM-killed without one), after a stage step that reported stageReport, if given.
func finishBenchJob(job *batchv1.Job, message string, oomKilled bool, stageReport ...string) {
	GinkgoHelper()
	term := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: message}
	if oomKilled {
		term.ExitCode, term.Reason = 137, "OOMKilled"
	}
	var inits []corev1.ContainerStatus
	for _, rep := range stageReport {
		inits = append(inits, corev1.ContainerStatus{Name: stageContainerName, Image: testWorkerImage,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: rep, FinishedAt: metav1.Now()}}})
	}
	testenv.CreateTerminatedPod(job, benchContainerName, term, inits)
	testenv.MarkJobFinished(job, oomKilled, "")
}

var _ = Describe("BenchRun controller", func() {
	var ns string
	BeforeEach(func() { ns = testenv.NewNamespace() })

	It("waits for its Dataset, then runs one Job per configuration × input and records the runner's results", func() {
		run := newBenchRun(ns, "tpch", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Pricing = &datav1alpha1.Pricing{CoreSecond: "0.00001", GiBSecond: "0.000001"}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonWaitingForDataset))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Expect(benchJobsOf(Default, run)).To(BeEmpty())

		testenv.ReadyDataset(ns, "data")
		// The suite's operator allows 3 bench Jobs at once: the fourth waits for a slot.
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(3))
			jobsStatus := getRun(run).Status.Jobs
			g.Expect(jobsStatus).NotTo(BeNil(), "no status of its Jobs yet")
			g.Expect(jobsStatus.Queued).To(Equal(int32(1)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(benchJobsOf(g, run)).To(HaveLen(3)) }).WithTimeout(time.Second).Should(Succeed())
		first := found[0]
		finishBenchJob(&first, runnerSummary(first.Annotations[annotationConfig]+" / "+first.Annotations[annotationInput], "same answer"), false)
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(4), "a finished Job frees a slot for the queued one")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			cur := getRun(run)
			g.Expect(cur.Status.DatasetDigest).To(Equal("sha256:abc"), "the run records the data it read")
			g.Expect(cur.Status.Progress).To(Equal("1/4 jobs"))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.InProgressStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		for _, j := range found {
			pod := j.Spec.Template.Spec
			c := pod.Containers[0]
			Expect(c.Resources.Requests).To(Equal(c.Resources.Limits), "requests equal limits")
			Expect(pod.NodeSelector).To(HaveKeyWithValue("topology.kubernetes.io/zone", "eu-west-1a"))
			Expect(c.VolumeMounts[0].ReadOnly).To(BeTrue())
			Expect(pod.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeTrue())
			Expect(c.Args).To(ContainElements("--queries", "q1,q6", "--iterations", "2", "--report-file", "/dev/termination-log"))
			claim := pod.Volumes[0].PersistentVolumeClaim.ClaimName
			if j.Annotations[annotationInput] == "volume" {
				Expect(claim).To(Equal("data-cache"))
			} else {
				Expect(claim).To(Equal("mountpoint-s3"))
			}
			if j.Annotations[annotationConfig] == "large" {
				Expect(c.Args).To(ContainElements("--threads", "4"))
				Expect(c.Resources.Limits.Memory().String()).To(Equal("8Gi"))
			}
			Expect(*j.Spec.ActiveDeadlineSeconds).To(BeNumerically("<=", 6*3600))
		}

		for _, j := range found {
			if j.Name == first.Name {
				continue
			}
			finishBenchJob(&j, runnerSummary(j.Annotations[annotationConfig]+" / "+j.Annotations[annotationInput], "same answer"), false)
		}
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonCompleted))
			g.Expect(cur.Status.Results).To(HaveLen(4))
			g.Expect(cur.Status.Progress).To(Equal("4/4 jobs"))
			r := cur.Status.Results[0]
			g.Expect(r.Queries).To(HaveLen(2))
			g.Expect(r.Queries[0].Status).To(Equal(datav1alpha1.QuerySucceeded))
			g.Expect(r.Queries[0].Digest).NotTo(BeEmpty())
			g.Expect(r.Queries[0].Rows).To(Equal(int64(1)))
			g.Expect(r.Queries[0].MedianMillis).To(BeNumerically(">=", 0))
			g.Expect(cur.Status.CompletionTime).NotTo(BeNil())
			g.Expect(r.CostMicros).NotTo(BeNil(), "pricing gives each result a cost")
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.CurrentStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("marks different answers on different inputs as ResultMismatch, and an OOM-killed runner as OOMKilled", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "mismatch", "data", func(r *datav1alpha1.BenchRun) { r.Spec.Configs = r.Spec.Configs[:1] })
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], runnerSummary("a", "one answer"), false)
		finishBenchJob(&found[1], runnerSummary("b", "another answer"), false)
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonResultMismatch))
			g.Expect(c.Message).To(ContainSubstring("q1"))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.FailedStatus))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		oom := newBenchRun(ns, "oom", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = r.Spec.Inputs[:1]
		})
		Expect(k8sClient.Create(ctx, oom)).To(Succeed())
		Eventually(func(g Gomega) { found = benchJobsOf(g, oom); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], "", true)
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRun(oom).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonOOMKilled))
			g.Expect(c.Message).To(ContainSubstring("memory limit 2Gi"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("says when a query pod fits no node, and goes back to Running once it is scheduled", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "too-big", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[1:] // large: 4 CPUs
			r.Spec.Inputs = r.Spec.Inputs[:1]
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())

		pod := testenv.CreateUnschedulablePod(&found[0], benchContainerName, "0/1 nodes are available: 1 Insufficient cpu.")
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnschedulable))
			g.Expect(c.Message).To(Equal("1 of 1 Jobs cannot be scheduled and wait for a node with room until spec.timeout " +
				"(duckdb/large/volume: 0/1 nodes are available: 1 Insufficient cpu.)"))
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.InProgressStatus))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// Scheduled and running: the reason goes back to Running.
		pod.Status.Phase = corev1.PodRunning
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonRunning))
		}).WithTimeout(20 * time.Second).Should(Succeed())

		// Finish it: an unfinished Job would hold one of the suite's bench Job slots for good.
		finishBenchJob(&found[0], runnerSummary("large", "answer"), false)
		Eventually(func(g Gomega) {
			g.Expect(getRun(run).Status.CompletionTime).NotTo(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("refuses what this release cannot run, at once and plainly", func() {
		expectUnsupported := func(run *datav1alpha1.BenchRun, says string) {
			GinkgoHelper()
			Expect(k8sClient.Create(ctx, run)).To(Succeed())
			Eventually(func(g Gomega) {
				c := meta.FindStatusCondition(getRun(run).Status.Conditions, datav1alpha1.ConditionSucceeded)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonUnsupported))
				g.Expect(c.Message).To(ContainSubstring(says))
			}).WithTimeout(10 * time.Second).Should(Succeed())
			Expect(benchJobsOf(Default, run)).To(BeEmpty())
		}
		testenv.ReadyDataset(ns, "nofresh")
		expectUnsupported(newBenchRun(ns, "staged", "nofresh", func(r *datav1alpha1.BenchRun) {
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputMixedStaged}}
		}), "has no spec.fresh")
		expectUnsupported(newBenchRun(ns, "session", "nofresh", func(r *datav1alpha1.BenchRun) {
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineCommand, Label: "mine", Image: "example.test/e:1",
				Command: []string{"e", "{query}"}, Isolation: datav1alpha1.IsolationSession}}
		}), "engine mine runs in session isolation, and its command has no {queries}")
	})

	It("runs a command engine in its own image, with pqcache's static runner injected, reading S3 or the volume", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "polars", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineCommand, Image: "example.test/polars:1.0",
				Command: []string{"python", "/app/run query.py", "{query}", "{data}"},
				Env:     []corev1.EnvVar{{Name: "POLARS_MAX_THREADS", Value: "1"}}}}
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputS3}, {Type: datav1alpha1.InputVolume}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		for _, j := range found {
			pod := j.Spec.Template.Spec
			Expect(pod.InitContainers).To(HaveLen(1))
			Expect(pod.InitContainers[0].Image).To(Equal(testWorkerImage))
			Expect(pod.InitContainers[0].Args).To(Equal([]string{"install-runner", "/pqcache"}))
			c := pod.Containers[0]
			Expect(c.Image).To(Equal("example.test/polars:1.0"))
			Expect(c.Command).To(Equal([]string{"/pqcache/pqcache-runner"}))
			Expect(c.Args).To(ContainElements("--engine", "command", "--command-arg", "/app/run query.py", "--command-arg", "{data}"))
			Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "POLARS_MAX_THREADS", Value: "1"}))
			switch j.Annotations[annotationInput] {
			case "s3":
				Expect(c.Args).To(ContainElements("--data", "s3://analytics/tpch/"))
				Expect(c.Args).To(ContainElements("--probe-streams", "--endpoint"), "the runner probes the bucket")
				Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "AWS_ENDPOINT_URL", Value: "http://s3.example.test:9000"}))
				var secretKeys []string
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
						secretKeys = append(secretKeys, e.ValueFrom.SecretKeyRef.Key)
					}
				}
				Expect(secretKeys).To(ContainElement(wire.EnvAccessKeyID))
				for _, v := range pod.Volumes {
					Expect(v.PersistentVolumeClaim).To(BeNil(), "an s3 input mounts no claim")
				}
			case "volume":
				Expect(c.Args).To(ContainElements("--data", "/data", "--probe-streams"))
				Expect(pod.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeTrue())
				for _, e := range c.Env {
					Expect(e.Name).NotTo(Equal("AWS_ACCESS_KEY_ID"), "a volume input needs no bucket credentials")
				}
			default:
				Fail("unexpected input " + j.Annotations[annotationInput])
			}
		}
		// Finish them: unfinished Jobs would hold the suite's bench Job slots for good.
		for i := range found {
			finishBenchJob(&found[i], runnerSummary(found[i].Name, "answer"), false)
		}
		Eventually(func(g Gomega) { g.Expect(getRun(run).Status.CompletionTime).NotTo(BeNil()) }).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("passes each engine's isolation to its Job and records it with the timing figures", func() {
		ds := testenv.NewDataset(ns, "iso")
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		run := newBenchRun(ns, "isolations", "iso", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs, r.Spec.Inputs = r.Spec.Configs[:1], r.Spec.Inputs[:1]
			r.Spec.Engines = []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineDuckDB},
				{Name: datav1alpha1.EngineDuckDB, Label: "duckdb-session", Isolation: datav1alpha1.IsolationSession}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		Expect(getRun(run).Spec.Engines[0].Isolation).To(BeEmpty(), "unset: the engine's default, process for duckdb")
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(2)) }).WithTimeout(10 * time.Second).Should(Succeed())
		for i := range found {
			args, summary := found[i].Spec.Template.Spec.Containers[0].Args, runnerSummary(found[i].Name, "same")
			if found[i].Annotations[annotationEngine] == "duckdb-session" {
				Expect(args).To(ContainElements("--isolation", "session"))
				summary = sessionRunnerSummary(found[i].Name)
			} else {
				Expect(args).To(ContainElements("--isolation", "process"))
			}
			finishBenchJob(&found[i], summary, false)
		}
		Eventually(func(g Gomega) {
			results := getRun(run).Status.Results
			g.Expect(results).To(HaveLen(2))
			for _, r := range results {
				g.Expect(r.CompletionTime).NotTo(BeNil())
				g.Expect(r.WallGeometricMeanMillis).To(BeNumerically(">", 0), r.Engine)
				q := r.Queries[0]
				if r.Engine == "duckdb-session" {
					g.Expect(r.Isolation).To(Equal(datav1alpha1.IsolationSession))
					g.Expect(r.Timing).To(Equal(datav1alpha1.TimingEngine), "the session engine reports its query times")
					g.Expect(q.MedianMillis).To(BeNumerically("<=", 2))
					g.Expect(r.StartupMillis).To(BeNumerically(">=", 20), "the session's start-up")
				} else {
					g.Expect(r.Isolation).To(Equal(datav1alpha1.IsolationProcess))
					g.Expect(r.Timing).To(Equal(datav1alpha1.TimingWall), "an engine that reports nothing keeps the wall time, labelled")
					g.Expect(r.StartupMillis).To(BeZero(), "nor its start-up")
				}
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("runs each engine on every input, Polars in its image, and names both engines when answers differ", func() {
		ds := testenv.NewDataset(ns, "both", func(d *datav1alpha1.Dataset) { d.Spec.Fresh = []string{"lineitem/"} })
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		run := newBenchRun(ns, "engines", "both", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Engines = []datav1alpha1.BenchEngine{
				{Name: datav1alpha1.EngineDuckDB, Settings: []datav1alpha1.DuckDBSetting{{Name: "prefetch_all_parquet_files", Value: "true"}, {Name: "threads", Value: "8"}}},
				{Name: datav1alpha1.EnginePolars, PolarsEngine: "streaming", ForceAsync: ptr.To(true)}}
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputVolume}, {Type: datav1alpha1.InputS3}, {Type: datav1alpha1.InputMixedDirect}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) {
			found = benchJobsOf(g, run)
			g.Expect(found).To(HaveLen(3), "the cap of 3")
			jobsStatus := getRun(run).Status.Jobs
			g.Expect(jobsStatus).NotTo(BeNil(), "no status of its Jobs yet")
			g.Expect(jobsStatus.Total).To(Equal(int32(6)), "both engines read every input: 2 × 3")
		}).WithTimeout(10 * time.Second).Should(Succeed())
		byKind := map[string]batchv1.Job{}
		finishAll := func() {
			for i := range found {
				j := found[i]
				if _, done := byKind[j.Annotations[annotationEngine]+"/"+j.Annotations[annotationInput]]; done {
					continue
				}
				byKind[j.Annotations[annotationEngine]+"/"+j.Annotations[annotationInput]] = j
				answer := "same"
				if j.Annotations[annotationEngine] == "polars" && j.Annotations[annotationInput] == "s3" {
					answer = "polars reads s3 differently"
				}
				finishBenchJob(&j, runnerSummary(j.Name, answer), false)
			}
		}
		finishAll()
		// 30 s: with other suites on the 2 cores, the last of the next Jobs once came after 10 s.
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(6)) }).WithTimeout(30 * time.Second).Should(Succeed())
		finishAll()
		Expect(byKind).To(HaveLen(6))
		for kind, j := range byKind {
			c := j.Spec.Template.Spec.Containers[0]
			if j.Annotations[annotationEngine] == "duckdb" {
				Expect(c.Image).To(Equal(testWorkerImage))
				Expect(c.Args).To(ContainElements("--duckdb-setting", "prefetch_all_parquet_files=true", "--duckdb-setting", "threads=8"), kind)
			} else {
				Expect(c.Image).To(Equal("pqcache-polars:dev"), kind)
				Expect(c.Command).To(Equal([]string{"/pqcache/pqcache-runner"}), kind)
				Expect(c.Args).To(ContainElements("--engine", "polars", "--threads", "1", "--polars-engine", "streaming", "--polars-force-async"), kind)
			}
			switch j.Annotations[annotationInput] {
			case "s3":
				Expect(c.Args).To(ContainElements("--data", "s3://analytics/tpch/", "--endpoint", "http://s3.example.test:9000", "--path-style"), kind)
				Expect(c.Env).To(ContainElement(HaveField("Name", wire.EnvAccessKeyID)), kind)
			case "mixed-direct":
				Expect(c.Args).To(ContainElements("--data", "/data", "--fresh-data", "s3://analytics/tpch/", "--fresh-prefix", "lineitem/"), kind)
				Expect(c.Env).To(ContainElement(HaveField("Name", wire.EnvAccessKeyID)), kind)
			case "volume":
				Expect(c.Args).To(ContainElements("--data", "/data"), kind)
				Expect(c.Env).NotTo(ContainElement(HaveField("Name", wire.EnvAccessKeyID)), "a volume input needs no bucket credentials")
			}
		}
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := runCondition(g, run)
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonResultMismatch))
			g.Expect(c.Message).To(ContainSubstring("polars / small / s3"))
			g.Expect(c.Message).To(ContainSubstring("duckdb / small / mixed-direct"))
			g.Expect(cur.Status.Results).To(HaveLen(6))
			g.Expect(cur.Status.Results[0].Engine).To(Equal("duckdb"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("stages the fresh prefixes before the queries of a mixed-staged input, and records the staging", func() {
		ds := testenv.NewDataset(ns, "fresh", func(d *datav1alpha1.Dataset) { d.Spec.Fresh = []string{"lineitem/batch=7/"} })
		Expect(k8sClient.Create(ctx, ds)).To(Succeed())
		testenv.FinishJob(testenv.WaitForJobs(ds, 1), testenv.Finish{Report: testenv.SuccessReport(8, 800)})
		run := newBenchRun(ns, "staged", "fresh", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = []datav1alpha1.BenchInput{{Type: datav1alpha1.InputMixedStaged}}
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		pod := found[0].Spec.Template.Spec
		Expect(pod.InitContainers).To(HaveLen(1))
		stage := pod.InitContainers[0]
		Expect(stage.Args[:3]).To(Equal([]string{"stage", "s3://analytics/tpch/", "/scratch"}))
		Expect(stage.Args).To(ContainElements("--prefix", "lineitem/batch=7/", "--endpoint", "http://s3.example.test:9000", "--ephemeral"))
		Expect(stage.Env[0].ValueFrom.SecretKeyRef.Name).To(Equal("s3-creds"))
		Expect(pod.Containers[0].Args).To(ContainElements("--fresh-data", "/scratch", "--fresh-prefix", "lineitem/batch=7/"))
		Expect(pod.Containers[0].VolumeMounts[0].ReadOnly).To(BeTrue(), "the cache volume stays read-only")

		// The pod as the kubelet leaves it: the stage step's report, then the runner's summary.
		j := found[0]
		rep, _ := json.Marshal(map[string]any{"result": "Succeeded", "bytesCopied": 123456789, "durationMillis": 4321})
		finishBenchJob(&j, runnerSummary("small / mixed-staged", "same"), false, string(rep))
		Eventually(func(g Gomega) {
			cur := getRun(run)
			g.Expect(cur.Status.Results).To(HaveLen(1))
			g.Expect(cur.Status.Results[0].StagedBytes).To(Equal(int64(123456789)))
			g.Expect(cur.Status.Results[0].StageMillis).To(Equal(int64(4321)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	It("says a completed run whose times vary by more than 15% is Noisy, with the figure, and still succeeded", func() {
		testenv.ReadyDataset(ns, "data")
		run := newBenchRun(ns, "noisy", "data", func(r *datav1alpha1.BenchRun) {
			r.Spec.Configs = r.Spec.Configs[:1]
			r.Spec.Inputs = r.Spec.Inputs[:1]
		})
		Expect(k8sClient.Create(ctx, run)).To(Succeed())
		var found []batchv1.Job
		Eventually(func(g Gomega) { found = benchJobsOf(g, run); g.Expect(found).To(HaveLen(1)) }).WithTimeout(10 * time.Second).Should(Succeed())
		finishBenchJob(&found[0], noisyRunnerSummary("small / volume"), false)
		Eventually(func(g Gomega) {
			cur := getRun(run)
			c := meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionSucceeded)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "a noisy run completed")
			g.Expect(c.Reason).To(Equal(datav1alpha1.ReasonNoisy))
			g.Expect(c.Message).To(MatchRegexp(`above 15\.0% on duckdb / small / volume [0-9]+\.[0-9]%`))
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, datav1alpha1.ConditionStalled)).To(BeNil())
			g.Expect(testenv.KstatusOf(cur)).To(Equal(status.CurrentStatus))
			g.Expect(cur.Status.Results).To(HaveLen(1))
			for _, q := range cur.Status.Results[0].Queries {
				g.Expect(q.SpreadPermille).NotTo(BeNil(), "two iterations have a spread in status")
				g.Expect(*q.SpreadPermille).To(BeNumerically(">", wire.NoisyPermille), "query %s: %d ms to %d ms", q.Name, q.MinMillis, q.MaxMillis)
			}
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

// The status of the largest run the API allows (64 Jobs: engines × configs × inputs, each with every
// field at its longest and 32 queries with the longest names) must stay far below etcd's 1.5 MiB
// object limit.
var _ = It("keeps the largest BenchRun status well under etcd's object limit", func() {
	var st datav1alpha1.BenchRunStatus
	now := metav1.Now()
	long := func(prefix string, n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	for e := range 2 {
		for c := range 4 {
			for i := range 8 {
				r := datav1alpha1.BenchResult{Engine: long(fmt.Sprintf("engine-%d", e), 16), Config: long(fmt.Sprintf("config-%02d", c), 32),
					Input: "claim/" + long(fmt.Sprintf("mount-%d", i), 253), JobName: long(fmt.Sprintf("job-%d-%02d-%d", e, c, i), 63),
					StartTime: &now, CompletionTime: &now, WallMillis: 123456789, ReadBytesPerSecond: 1234567890, StagedBytes: 12345678901,
					StageMillis: 1234567, NetworkReadBytes: 123456789012, GeometricMeanMillis: 123456, CostMicros: ptr.To[int64](123456789),
					Message: long("the longest message a result keeps: ", 1024), Isolation: datav1alpha1.IsolationSession, Timing: datav1alpha1.TimingEngine,
					StartupMillis: 123456789, WallGeometricMeanMillis: 123456789,
					Streams: 1, QueriesPerHour: 123456789,
					// A Spark result's figures at their largest.
					Spark: &datav1alpha1.SparkUsage{Executors: 64, DriverPeakBytes: 123456789012, ExecutorPeakMaxBytes: 123456789012,
						PeakBytesSum: 123456789012345, S3ReadBytes: 123456789012, ExecutorSeconds: 123456789, CoreSeconds: 123456789012, GiBSeconds: 123456789012}}
				for q := 1; q <= 32; q++ {
					name := long(fmt.Sprintf("query-%02d-", q), 63)
					r.Queries = append(r.Queries, datav1alpha1.QueryResult{Name: name, Status: datav1alpha1.QueryOOMKilled, QueryMeasurements: wire.QueryMeasurements{MedianMillis: 123456789, MinMillis: 123456789, MaxMillis: 123456789, PeakMemoryBytes: 123456789012,
						PeakAnonBytes: 123456789012, PeakFileBytes: 123456789012, NetworkReadBytes: 123456789012, Rows: 123456789,
						Digest: "0123456789abcdef-123456789", SpreadPermille: ptr.To[int64](123456)}})
					r.FailedQueries = append(r.FailedQueries, name)
				}
				st.Results = append(st.Results, r)
			}
		}
	}
	Expect(st.Results).To(HaveLen(64), "the most Jobs the API lets a run have")
	for _, t := range []string{datav1alpha1.ConditionSucceeded, datav1alpha1.ConditionReconciling, datav1alpha1.ConditionStalled} {
		st.Conditions = append(st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: datav1alpha1.ReasonOOMKilled,
			Message: long("a long condition message ", 1024), LastTransitionTime: now})
	}
	data, err := json.Marshal(st)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("largest BenchRun status: %d bytes\n", len(data))
	AddReportEntry("largest BenchRun status (bytes)", len(data))
	Expect(len(data)).To(BeNumerically("<", 1<<20))

	// And the API server stores it.
	ns := testenv.NewNamespace()
	run := newBenchRun(ns, "largest", "whatever")
	Expect(k8sClient.Create(ctx, run)).To(Succeed())
	var stored datav1alpha1.BenchRun
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controller writes its status too
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(run), run); err != nil {
			return err
		}
		run.Status = st
		if err := k8sClient.Status().Update(ctx, run); err != nil {
			return err
		}
		return k8sClient.Get(ctx, client.ObjectKeyFromObject(run), &stored)
	})).To(Succeed())
	Expect(stored.Status.Results).To(HaveLen(64))
	Expect(stored.Status.Results[63].Message).To(Equal(st.Results[63].Message))
})
