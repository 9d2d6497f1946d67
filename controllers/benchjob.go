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
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
)

const (
	componentBench = "bench"
	// LabelBenchRun holds the BenchRun's name on its Jobs (shortened with a hash when longer than a label
	// value may be; AnnotationBenchRun has it whole).
	LabelBenchRun      = "data.pqcache.dev/benchrun"
	AnnotationBenchRun = "data.pqcache.dev/benchrun-name"
	annotationEngine   = "data.pqcache.dev/engine"
	annotationConfig   = "data.pqcache.dev/config"
	annotationInput    = "data.pqcache.dev/input"
	benchContainerName = "bench"
)

// benchJob is one engine × configuration × input of a run.
type benchJob struct {
	engine datav1alpha1.BenchEngine
	config datav1alpha1.ResourceConfig
	input  datav1alpha1.BenchInput
	index  int // of the input, for the Job name
	// name is the Job's name, unique to the run (see benchJobName).
	name string
}

// engineLabel names an engine in status, reports and Job names: its label, else its name.
func engineLabel(e datav1alpha1.BenchEngine) string {
	if e.Label != "" {
		return e.Label
	}
	if e.Name == "" {
		return string(datav1alpha1.EngineDuckDB)
	}
	return string(e.Name)
}

// inputLabel names an input in status and reports: its type, and the claim for a claim input.
func inputLabel(in datav1alpha1.BenchInput) string {
	if in.Type == datav1alpha1.InputClaim {
		return "claim/" + in.ClaimName
	}
	return string(in.Type)
}

// readsS3 says whether an input reads (some of) its data straight from the bucket.
func readsS3(in datav1alpha1.BenchInput) bool {
	return in.Type == datav1alpha1.InputS3 || in.Type == datav1alpha1.InputMixedDirect
}

// canRead says whether an engine can read an input: the built-in DuckDB has no httpfs.
func canRead(e datav1alpha1.BenchEngine, in datav1alpha1.BenchInput) bool {
	return e.Name != datav1alpha1.EngineDuckDB && e.Name != "" || !readsS3(in)
}

// runEngines is the run's engines; none means the built-in DuckDB.
func runEngines(run *datav1alpha1.BenchRun) []datav1alpha1.BenchEngine {
	if len(run.Spec.Engines) == 0 {
		return []datav1alpha1.BenchEngine{{Name: datav1alpha1.EngineDuckDB}}
	}
	return run.Spec.Engines
}

// plannedJobs lists a run's Jobs: every engine × configuration × input the engine can read, and how
// many combinations it skips.
func plannedJobs(run *datav1alpha1.BenchRun) (jobs []benchJob, skipped int) {
	for _, e := range runEngines(run) {
		for _, c := range run.Spec.Configs {
			for i, in := range run.Spec.Inputs {
				if !canRead(e, in) {
					skipped++
					continue
				}
				j := benchJob{engine: e, config: c, input: in, index: i}
				j.name = benchJobName(run, j)
				jobs = append(jobs, j)
			}
		}
	}
	return jobs, skipped
}

// unsupportedWith says why the Dataset cannot serve the run's inputs, or "".
func unsupportedWith(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) string {
	for _, in := range run.Spec.Inputs {
		if (in.Type == datav1alpha1.InputMixedStaged || in.Type == datav1alpha1.InputMixedDirect) && len(ds.Spec.Fresh) == 0 {
			return fmt.Sprintf("input %s reads the Dataset's fresh prefixes apart, and Dataset %q has no spec.fresh", in.Type, ds.Name)
		}
	}
	return ""
}

const (
	stageContainerName = "stage"
	scratchPath        = "/scratch"
)

// withStageStep adds, for a mixed-staged input, an init container that stages the Dataset's fresh
// prefixes from S3 into a scratch volume (timed on its own, reported in its termination message), and
// points the queries at it for those prefixes.
func withStageStep(spec *corev1.PodSpec, ds *datav1alpha1.Dataset, opts WorkerOptions) {
	bench := &spec.Containers[0]
	s3 := ds.Spec.Source.S3
	// --ephemeral: the scratch volume dies with the pod, so the copies need not be made durable.
	args := []string{"stage", "s3://" + s3.Bucket + "/" + s3.Prefix, scratchPath, "--progress", "none", "--ephemeral",
		"--parallel", strconv.Itoa(int(max(ds.Spec.Sync.Parallelism, 1))), "--report-file", corev1.TerminationMessagePathDefault}
	for _, p := range ds.Spec.Fresh {
		args = append(args, "--prefix", p)
		bench.Args = append(bench.Args, "--fresh-prefix", p)
	}
	args = append(args, sourceFlags(ds)...)
	bench.Args = append(bench.Args, "--fresh-data", scratchPath)
	// For a command engine, which reads its data itself: where the staged prefixes are.
	bench.Env = append(bench.Env,
		corev1.EnvVar{Name: wire.EnvFreshDir, Value: scratchPath},
		corev1.EnvVar{Name: wire.EnvFreshPrefixes, Value: strings.Join(ds.Spec.Fresh, ",")})
	bench.VolumeMounts = append(bench.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: scratchPath, ReadOnly: true})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	stage := corev1.Container{
		Name: stageContainerName, Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy, Args: args,
		Env:                      syncEnv(ds),
		Resources:                bench.Resources,
		SecurityContext:          bench.SecurityContext,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		VolumeMounts:             []corev1.VolumeMount{{Name: "scratch", MountPath: scratchPath}},
	}
	withCABundle(spec, opts.CABundle, &stage)
	spec.InitContainers = append(spec.InitContainers, stage)
	if c := s3.Credentials; c != nil && c.ServiceAccountName != "" {
		spec.ServiceAccountName = c.ServiceAccountName
	}
}

// benchJobName names one Job of a run: the run's, engine's and configuration's names for people, and
// a hash of the run's UID, the engine, the configuration and the input, so that no two runs (nor two
// inputs of one run) share a name, whatever their names: "x-a" with config "b" and "x" with config
// "a-b" differ. The default engine, duckdb, is left out of the readable part.
func benchJobName(run *datav1alpha1.BenchRun, j benchJob) string {
	suffix := "-" + hashOf(8, string(run.UID), engineLabel(j.engine), j.config.Name, strconv.Itoa(j.index), inputLabel(j.input))
	base := run.Name + "-" + j.config.Name
	if l := engineLabel(j.engine); l != string(datav1alpha1.EngineDuckDB) {
		base = run.Name + "-" + l + "-" + j.config.Name
	}
	return fitName(base, suffix, maxJobName)
}

// queryList renders spec.queries for the runner; empty means all 22.
func queryList(qs []int32) string {
	if len(qs) == 0 {
		return "1-22"
	}
	parts := make([]string, len(qs))
	for i, q := range qs {
		parts[i] = strconv.Itoa(int(q))
	}
	return strings.Join(parts, ",")
}

// buildBenchJob returns the Job that measures one engine × configuration × input: `pqcache bench` with
// requests equal to limits, the data mounted read-only, the run's placement, and a deadline at the end
// of the run's timeout. The built-in DuckDB runs in the operator's image; Polars in the operator's
// Polars image and a command engine in its own, each with pqcache's static runner copied in by an
// init container. Inputs that read S3 get the Dataset's endpoint, region, addressing, credentials and
// CA bundle.
func buildBenchJob(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, opts WorkerOptions, deadline time.Duration) *batchv1.Job {
	labels := map[string]string{labelName: "pqcache", LabelComponent: componentBench, labelManagedBy: "pqcache", LabelBenchRun: labelValue(run.Name)}
	res := corev1.ResourceList{corev1.ResourceCPU: j.config.CPU, corev1.ResourceMemory: j.config.Memory}
	warmups := int32(1)
	if run.Spec.Warmups != nil {
		warmups = *run.Spec.Warmups
	}
	s3 := ds.Spec.Source.S3
	bucketURL := "s3://" + s3.Bucket + "/" + s3.Prefix
	readsVolume := j.input.Type != datav1alpha1.InputS3
	data := dataMountPath
	if g := run.Status.DatasetGeneration; g > 0 && j.input.Type != datav1alpha1.InputClaim && generationKept(ds, g) {
		// Every Job of the run reads the generation recorded at its start, whatever refreshes happen.
		data = generationDir(g)
	}
	if !readsVolume {
		data = bucketURL
	}
	threads := max(1, int(j.config.CPU.Value())) // CPUs rounded up (1500m: 2 threads under a 1.5-CPU quota); at least one
	common := []string{"--data", data, "--queries", queryList(run.Spec.Queries),
		"--iterations", strconv.Itoa(int(max(run.Spec.Iterations, 1))), "--warmups", strconv.Itoa(int(warmups)),
		"--query-timeout", parseDuration(run.Spec.QueryTimeout, 30*time.Minute).String(),
		"--label", engineLabel(j.engine) + " / " + j.config.Name + " / " + inputLabel(j.input), "--io-type", inputLabel(j.input),
		"--report-file", corev1.TerminationMessagePathDefault,
	}
	// The input's read throughput, measured after the queries: the volume, or the bucket (an s3 input,
	// read by an engine that can: duckdb skips it).
	common = append(common, "--probe-streams", "8", "--config-name", j.config.Name)
	security := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), RunAsNonRoot: ptr.To(true),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	container := corev1.Container{
		Name: benchContainerName, Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy,
		Resources:                corev1.ResourceRequirements{Requests: res, Limits: res},
		SecurityContext:          security,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		// Engines spill and keep temporary files here; the root file system is read-only.
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		Env:          []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}, {Name: "HOME", Value: "/tmp"}},
	}
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		NodeSelector:                 run.Spec.NodeSelector,
		Affinity:                     run.Spec.Affinity,
		Tolerations:                  run.Spec.Tolerations,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](workerUID), RunAsGroup: ptr.To[int64](workerUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	if readsVolume {
		claim := claimName(ds)
		if j.input.Type == datav1alpha1.InputClaim {
			claim = j.input.ClaimName
		}
		container.VolumeMounts = append([]corev1.VolumeMount{{Name: "data", MountPath: dataMountPath, ReadOnly: true}}, container.VolumeMounts...)
		pod.Volumes = append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}}}, pod.Volumes...)
	}

	injectRunner := func(image string) {
		// Another image, with the static runner injected: an init container in pqcache's image copies
		// it into a shared volume, and the runner starts the engine per query.
		container.Image, container.ImagePullPolicy = image, corev1.PullIfNotPresent
		container.Command = []string{runnerDir + "/" + "pqcache-runner"}
		container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: "pqcache-runner", MountPath: runnerDir, ReadOnly: true})
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "pqcache-runner", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		pod.InitContainers = append(pod.InitContainers, corev1.Container{
			Name: "install-runner", Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy,
			Args:            []string{"install-runner", runnerDir},
			SecurityContext: security,
			Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
			VolumeMounts:    []corev1.VolumeMount{{Name: "pqcache-runner", MountPath: runnerDir}},
		})
	}
	switch j.engine.Name {
	case datav1alpha1.EngineCommand:
		injectRunner(j.engine.Image)
		container.Args = []string{"bench", "--engine", "command"}
		for _, a := range j.engine.Command {
			container.Args = append(container.Args, "--command-arg", a)
		}
		container.Args = append(container.Args, common...)
		if readsS3(j.input) {
			container.Args = append(container.Args, s3Flags(ds)...) // for the runner's own probe of the bucket
		}
	case datav1alpha1.EnginePolars:
		injectRunner(opts.PolarsImage)
		container.Args = append([]string{"bench", "--engine", "polars", "--threads", strconv.Itoa(threads)}, common...)
		if ptr.Deref(j.engine.Streaming, false) {
			container.Args = append(container.Args, "--polars-streaming")
		}
		if readsS3(j.input) {
			container.Args = append(container.Args, s3Flags(ds)...)
		}
		if j.input.Type == datav1alpha1.InputMixedDirect {
			// Static tables from the volume; the fresh prefixes straight from the bucket.
			container.Args = append(container.Args, "--fresh-data", bucketURL)
			for _, p := range ds.Spec.Fresh {
				container.Args = append(container.Args, "--fresh-prefix", p)
			}
		}
	default:
		container.Args = append([]string{"bench", "--engine", "duckdb", "--threads", strconv.Itoa(threads)}, common...)
		switch m := j.engine.MemoryLimit; m {
		case "", "Auto":
		case "None":
			container.Args = append(container.Args, "--memory-limit", "none")
		default:
			container.Args = append(container.Args, "--memory-limit", m) // a size
		}
	}
	container.Env = append(container.Env, j.engine.Env...)
	if readsS3(j.input) {
		// The Dataset's credentials and endpoint, as the standard AWS environment variables (which a
		// command engine reads too).
		container.Env = append(container.Env, syncEnv(ds)...)
		if s3.Endpoint != "" {
			container.Env = append(container.Env, corev1.EnvVar{Name: "AWS_ENDPOINT_URL", Value: s3.Endpoint})
		}
		if s3.Region != "" {
			container.Env = append(container.Env, corev1.EnvVar{Name: "AWS_REGION", Value: s3.Region})
		}
		if c := s3.Credentials; c != nil && c.ServiceAccountName != "" {
			pod.ServiceAccountName = c.ServiceAccountName // IRSA and Pod Identity mount their own tokens
		}
		if j.input.Type == datav1alpha1.InputMixedDirect {
			container.Env = append(container.Env,
				corev1.EnvVar{Name: wire.EnvFreshURL, Value: bucketURL},
				corev1.EnvVar{Name: wire.EnvFreshPrefixes, Value: strings.Join(ds.Spec.Fresh, ",")})
		}
	}
	pod.Containers = []corev1.Container{container}
	if readsS3(j.input) {
		withCABundle(&pod, opts.CABundle)
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: j.name, Namespace: run.Namespace, Labels: labels,
			Annotations: map[string]string{annotationEngine: engineLabel(j.engine), annotationConfig: j.config.Name,
				annotationInput: inputLabel(j.input), AnnotationBenchRun: run.Name},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			ActiveDeadlineSeconds:   ptr.To(max(int64(deadline.Seconds()), 1)),
			TTLSecondsAfterFinished: ptr.To(int32(opts.TTLAfterFinished.Seconds())),
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
	if j.input.Type == datav1alpha1.InputMixedStaged {
		withStageStep(&job.Spec.Template.Spec, ds, opts)
	}
	return job
}

// s3Flags are the bench runner's flags to reach the Dataset's bucket: endpoint, region, addressing.
func s3Flags(ds *datav1alpha1.Dataset) []string {
	s3 := ds.Spec.Source.S3
	var args []string
	if s3.Endpoint != "" {
		args = append(args, "--endpoint", s3.Endpoint)
	}
	if s3.Region != "" {
		args = append(args, "--region", s3.Region)
	}
	if s3.ForcePathStyle {
		args = append(args, "--path-style")
	}
	return args
}

// runnerDir is where the injected runner lives in an engine's container.
const runnerDir = "/pqcache"

// parseDuration reads a duration the API server has validated, or returns def when it is empty.
func parseDuration(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	return def
}

// benchResultFrom turns a finished bench Job into its status entry: the runner's summary from the
// termination message, or, when the runner itself died, why.
func benchResultFrom(j *batchv1.Job, js jobState, pods []corev1.Pod) datav1alpha1.BenchResult {
	r := datav1alpha1.BenchResult{Engine: j.Annotations[annotationEngine], Config: j.Annotations[annotationConfig], Input: j.Annotations[annotationInput], JobName: j.Name}
	// The stage step's own report: what it copied, and how long that took.
	for _, p := range pods {
		for _, cs := range p.Status.InitContainerStatuses {
			if t := cs.State.Terminated; cs.Name == stageContainerName && t != nil && t.Message != "" {
				var rep wire.SyncReport
				if json.Unmarshal([]byte(t.Message), &rep) == nil {
					r.StagedBytes, r.StageMillis = rep.BytesCopied, rep.DurationMillis
				}
			}
		}
	}
	var term *corev1.ContainerStateTerminated
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; cs.Name == benchContainerName && t != nil && (term == nil || t.FinishedAt.After(term.FinishedAt.Time)) {
				term = t
			}
		}
	}
	if term != nil && term.Message != "" {
		if res, err := wire.DecodeBenchSummary(term.Message); err == nil {
			fillBenchResult(&r, res)
			return r
		}
	}
	// No summary: the runner did not finish. Say why on every query, as NotRun or OOMKilled.
	status := datav1alpha1.QueryNotRun
	if term != nil && term.Reason == "OOMKilled" {
		status = datav1alpha1.QueryOOMKilled
	}
	if js.Reason == batchv1.JobReasonDeadlineExceeded {
		status = datav1alpha1.QueryTimeout
	}
	r.Queries = []datav1alpha1.QueryResult{{Query: 0, Status: status}}
	return r
}

func fillBenchResult(r *datav1alpha1.BenchResult, res *wire.BenchResult) {
	r.WallMillis = res.WallMillis
	r.GeometricMeanMillis = res.GeometricMeanMillis
	r.NetworkReadBytes = res.NetworkReadBytes
	if res.Probe != nil {
		r.ReadBytesPerSecond = res.Probe.BytesPerSecond
	}
	for _, q := range res.FailedQueries {
		r.FailedQueries = append(r.FailedQueries, int32(q))
	}
	for _, q := range res.Queries {
		r.Queries = append(r.Queries, datav1alpha1.QueryResult{
			Query: int32(q.Query), Status: datav1alpha1.QueryStatus(q.Status),
			MedianMillis: q.MedianMillis, MinMillis: q.MinMillis, MaxMillis: q.MaxMillis,
			PeakMemoryBytes: q.PeakMemoryBytes, PeakAnonBytes: q.PeakAnonBytes, PeakFileBytes: q.PeakFileBytes,
			NetworkReadBytes: q.NetworkReadBytes, Rows: q.Rows, Digest: q.Digest,
		})
	}
}

// runOutcome decides a finished run's Succeeded condition from its results; memory maps a
// configuration to its memory limit, named in OOMKilled messages.
func runOutcome(results []datav1alpha1.BenchResult, timedOut bool, memory map[string]string) (reason, message string) {
	if timedOut {
		return datav1alpha1.ReasonTimeout, "the run passed spec.timeout"
	}
	oom, failed := []string{}, []string{}
	digests := map[int32]map[string][]string{}
	for _, r := range results {
		for _, q := range r.Queries {
			where := r.Config + " / " + r.Input
			if r.Engine != "" {
				where = r.Engine + " / " + where
			}
			switch q.Status {
			case datav1alpha1.QueryOOMKilled:
				what := fmt.Sprintf("q%d", q.Query)
				if q.Query == 0 {
					what = "the runner"
				}
				oom = append(oom, fmt.Sprintf("%s on %s (memory limit %s)", what, where, memory[r.Config]))
			case datav1alpha1.QuerySucceeded:
				if digests[q.Query] == nil {
					digests[q.Query] = map[string][]string{}
				}
				digests[q.Query][q.Digest] = append(digests[q.Query][q.Digest], where)
			default:
				failed = append(failed, fmt.Sprintf("q%d on %s: %s", q.Query, where, q.Status))
			}
		}
	}
	if len(oom) > 0 {
		return datav1alpha1.ReasonOOMKilled, "out of memory: " + strings.Join(limit(oom, 8), ", ")
	}
	var qs []int32
	for q, byDigest := range digests {
		if len(byDigest) > 1 {
			qs = append(qs, q)
		}
	}
	slices.Sort(qs)
	if len(qs) > 0 {
		// Name, per query, one place of each of two answers: which engines (or inputs) disagree.
		var mismatched []string
		for _, q := range qs {
			var sides []string
			for _, where := range digests[q] {
				slices.Sort(where)
				sides = append(sides, where[0])
			}
			slices.Sort(sides)
			mismatched = append(mismatched, fmt.Sprintf("q%d (%s vs %s)", q, sides[0], sides[1]))
		}
		return datav1alpha1.ReasonResultMismatch, "different answers for the same query: " + strings.Join(limit(mismatched, 8), ", ")
	}
	if len(failed) > 0 {
		return datav1alpha1.ReasonQueriesFailed, strings.Join(limit(failed, 8), "; ")
	}
	return datav1alpha1.ReasonCompleted, fmt.Sprintf("%d runs completed", len(results))
}

func limit(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// costMicros estimates what one engine × configuration × input cost, in millionths of the pricing
// currency: (cores × coreSecond + GiB × gibSecond) × wall seconds × placementMultiplier, plus
// transferGB for every GB read from the bucket: the staged bytes and readBytes, what the queries read
// from S3 (the cache volume itself costs no transfer). Prices are decimal strings (validated by the API),
// computed exactly with rationals. nil without pricing.
func costMicros(p *datav1alpha1.Pricing, cfg datav1alpha1.ResourceConfig, r datav1alpha1.BenchResult, readBytes int64) *int64 {
	if p == nil {
		return nil
	}
	rat := func(s, def string) *big.Rat {
		if s == "" {
			s = def
		}
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			return new(big.Rat)
		}
		return v
	}
	seconds := new(big.Rat).SetFrac64(r.WallMillis+r.StageMillis, 1000)
	cores := new(big.Rat).SetFrac64(cfg.CPU.MilliValue(), 1000)
	gib := new(big.Rat).SetFrac64(cfg.Memory.Value(), 1<<30)
	compute := new(big.Rat).Add(new(big.Rat).Mul(cores, rat(p.CoreSecond, "0")), new(big.Rat).Mul(gib, rat(p.GiBSecond, "0")))
	compute.Mul(compute, seconds)
	compute.Mul(compute, rat(p.PlacementMultiplier, "1"))
	transfer := new(big.Rat).Mul(new(big.Rat).SetFrac64(r.StagedBytes+readBytes, 1_000_000_000), rat(p.TransferGB, "0"))
	total := new(big.Rat).Add(compute, transfer)
	return roundMicros(total.Mul(total, big.NewRat(1_000_000, 1)))
}

// roundMicros rounds a non-negative amount to the nearest integer, exactly; nil when it does not fit
// in an int64 (no estimate is better than a wrapped one).
func roundMicros(v *big.Rat) *int64 {
	q, rem := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).CmpAbs(v.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return nil
	}
	n := q.Int64()
	return &n
}

// breakEvenRuns is how many runs it takes for the cache to pay for itself: filling it costs the data
// set's transfer once (syncBytes × transferGB), after which each run on the volume saves the difference
// between its cost on S3 and on the volume. It compares the volume and s3 results of the first
// engine × configuration that has both; nil when none has, or when the volume run is not cheaper.
func breakEvenRuns(p *datav1alpha1.Pricing, results []datav1alpha1.BenchResult, syncBytes int64) *int64 {
	if p == nil {
		return nil
	}
	byConfig := map[string]map[string]*int64{}
	var configs []string
	for _, r := range results {
		if r.CostMicros == nil {
			continue
		}
		key := r.Engine + "/" + r.Config
		if byConfig[key] == nil {
			byConfig[key] = map[string]*int64{}
			configs = append(configs, key)
		}
		byConfig[key][r.Input] = r.CostMicros
	}
	sort.Strings(configs)
	for _, c := range configs {
		vol, s3 := byConfig[c][string(datav1alpha1.InputVolume)], byConfig[c][string(datav1alpha1.InputS3)]
		if vol == nil || s3 == nil {
			continue
		}
		if *s3 <= *vol {
			return nil
		}
		saving := new(big.Int).Sub(big.NewInt(*s3), big.NewInt(*vol))
		price, ok := new(big.Rat).SetString(p.TransferGB)
		if !ok {
			price = new(big.Rat)
		}
		// runs = ceil(fill / saving), in exact arithmetic: fill (in micros) = bytes / 1e9 × price × 1e6.
		fill := new(big.Rat).Mul(new(big.Rat).SetFrac64(syncBytes, 1_000), price)
		n, rem := new(big.Int).QuoRem(fill.Num(), new(big.Int).Mul(fill.Denom(), saving), new(big.Int))
		if rem.Sign() > 0 {
			n.Add(n, big.NewInt(1))
		}
		if !n.IsInt64() {
			return nil
		}
		return ptr.To(max(1, n.Int64()))
	}
	return nil
}

// generationDir is where a generation of the data is on the mounted volume (see docs/sync.md).
func generationDir(g int64) string {
	return dataMountPath + "/.pqcache/generations/" + strconv.FormatInt(g, 10)
}

// generationKept says whether the Dataset's volume holds generation g as a tree readers can open.
func generationKept(ds *datav1alpha1.Dataset, g int64) bool {
	if ds.Status.Generations == nil {
		return false
	}
	for _, k := range ds.Status.Generations.Kept {
		if k.Generation == g {
			return true
		}
	}
	return false
}
