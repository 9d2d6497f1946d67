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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/pqcache/pqcache/api/syncspec"
	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/dataset"
	"github.com/pqcache/pqcache/controllers/jobs"
)

const (
	componentBench = "bench"
	// LabelBenchRun holds the BenchRun's name on its Jobs (shortened with a hash when longer than a label
	// value may be; AnnotationBenchRun has it whole).
	LabelBenchRun = "data.pqcache.dev/benchrun"
	// AnnotationBenchRun holds the BenchRun's whole name on its Jobs, which the label may only
	// abbreviate.
	AnnotationBenchRun = "data.pqcache.dev/benchrun-name"
	annotationEngine   = "data.pqcache.dev/engine"
	annotationConfig   = "data.pqcache.dev/config"
	annotationInput    = "data.pqcache.dev/input"
	benchContainerName = "bench"
)

const (
	stageContainerName = "stage"
	scratchPath        = "/scratch"
)

// withStageStep adds, for a mixed-staged input, an init container that stages the Dataset's fresh
// prefixes from S3 into a scratch volume (timed on its own, reported in its termination message),
// which the queries read for those prefixes (benchArgs points them there).
func withStageStep(spec *corev1.PodSpec, ds *datav1alpha1.Dataset, opts jobs.WorkerOptions) {
	bench := &spec.Containers[0]
	args := wire.StageArgs{Source: syncspec.SourceURL(ds), Dir: scratchPath, SyncOptions: jobs.SourceOptions(ds), Prefixes: ds.Spec.Fresh,
		// The scratch volume dies with the pod, so the copies need not be made durable.
		Ephemeral: true}
	args.Progress, args.ReportFile = "none", corev1.TerminationMessagePathDefault
	args.Parallel = int(max(ds.Spec.Sync.Parallelism, 1))
	// For a command engine, which reads its data itself: where the staged prefixes are.
	bench.Env = append(bench.Env,
		corev1.EnvVar{Name: wire.EnvFreshDir, Value: scratchPath},
		corev1.EnvVar{Name: wire.EnvFreshPrefixes, Value: strings.Join(ds.Spec.Fresh, ",")})
	bench.VolumeMounts = append(bench.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: scratchPath, ReadOnly: true})
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	stage := corev1.Container{
		Name: stageContainerName, Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy, Args: args.Args(),
		Env:             jobs.CredentialsEnv(ds),
		Resources:       bench.Resources,
		SecurityContext: bench.SecurityContext,
		VolumeMounts:    []corev1.VolumeMount{{Name: "scratch", MountPath: scratchPath}},
	}
	jobs.WithTerminationReport(&stage)
	jobs.WithCABundle(spec, opts.CABundle, &stage)
	jobs.WithAccessPolicy(spec, ds, opts.Access, &stage)
	spec.InitContainers = append(spec.InitContainers, stage)
}

// buildBenchJob returns the Job that measures one engine × configuration × input: `pqcache bench` with
// requests equal to limits, the data mounted read-only, the run's placement, and a deadline at the end
// of the run's timeout. The built-in DuckDB runs in the operator's image; Polars in the operator's
// Polars image and a command engine in its own, each with pqcache's static runner copied in by an
// init container. Inputs that read S3 get the Dataset's endpoint, region, addressing, credentials and
// CA bundle.
func buildBenchJob(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, opts jobs.WorkerOptions, deadline time.Duration) *batchv1.Job {
	labels := map[string]string{jobs.LabelName: "pqcache", jobs.LabelComponent: componentBench, jobs.LabelManagedBy: "pqcache", LabelBenchRun: datav1alpha1.LabelValue(run.Name)}
	res := corev1.ResourceList{corev1.ResourceCPU: j.config.CPU, corev1.ResourceMemory: j.config.Memory}
	container := corev1.Container{
		Name: benchContainerName, Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy,
		Args:            benchArgs(run, ds, j, opts.ReadersEndpoint).Args(),
		Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
		SecurityContext: jobs.WorkerContainerSecurity(),
		// Engines spill and keep temporary files here; the root file system is read-only.
		VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
		Env:          []corev1.EnvVar{{Name: "TMPDIR", Value: "/tmp"}, {Name: "HOME", Value: "/tmp"}},
	}
	jobs.WithTerminationReport(&container)
	pod := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		// pqcache's own account unless the run names one (which the chart's admission policy admits
		// only from a user who may create pods); no API token either way: the runner needs none.
		ServiceAccountName:           benchServiceAccount(run, opts),
		AutomountServiceAccountToken: ptr.To(false),
		NodeSelector:                 run.Spec.NodeSelector,
		Affinity:                     run.Spec.Affinity,
		Tolerations:                  run.Spec.Tolerations,
		SecurityContext:              jobs.WorkerPodSecurity(),
		Volumes:                      []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	mountInput(&pod, &container, run, ds, j.input)
	mountWorkload(&pod, &container, run)
	switch j.engine.Name {
	case datav1alpha1.EngineCommand:
		injectRunner(&pod, &container, j.engine.Image, opts)
	case datav1alpha1.EnginePolars:
		injectRunner(&pod, &container, opts.PolarsImage, opts)
	case datav1alpha1.EngineSpark:
		injectRunner(&pod, &container, opts.SparkImage, opts)
	}
	container.Env = append(container.Env, j.engine.Env...)
	// A run during refreshes rewrites the Dataset's files in its bucket, whatever its input reads.
	bucket := readsS3(j.input) || run.Spec.DuringRefresh
	if bucket {
		withBucket(&container, ds, j.input)
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		withReadersEndpoint(&container, run, ds, opts.ReadersEndpoint)
	}
	if j.engine.Name == datav1alpha1.EngineSpark {
		withSparkDriver(&pod, &container, run, j)
	}
	pod.Containers = []corev1.Container{container}
	if bucket {
		jobs.WithCABundle(&pod, opts.CABundle)
		jobs.WithAccessPolicy(&pod, ds, opts.Access)
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		// Not the access policy: the endpoint is a Service of the cluster, which its denied ranges may hold.
		jobs.WithCABundle(&pod, readersCA)
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

// benchArgs are the runner's arguments for one engine × configuration × input: what it reads (the
// pinned generation of the volume, the bucket, or the bucket's URLs through the node's S3 endpoint
// for readers at endpoint), the queries and how often, and where it reports.
func benchArgs(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, j benchJob, endpoint string) wire.BenchArgs {
	a := wire.BenchArgs{Engine: string(j.engine.Name), Workload: workloadArg(run), Data: jobs.DataMountPath, Queries: strings.Join(run.Spec.Queries, ","),
		Iterations: int(max(run.Spec.Iterations, 1)), Warmups: int(ptr.Deref(run.Spec.Warmups, 1)),
		QueryTimeout: parseDuration(run.Spec.QueryTimeout, 30*time.Minute),
		Label:        engineLabel(j.engine) + " / " + j.config.Name + " / " + inputLabel(j.input), IOType: inputLabel(j.input),
		// The input's read throughput, measured after the queries: the volume, or the bucket (an s3
		// input, read by an engine that can: duckdb skips it).
		ProbeStreams: 8, ConfigName: j.config.Name, ReportFile: corev1.TerminationMessagePathDefault,
		Isolation: isolationArg(j.engine), Streams: int(max(run.Spec.Streams, 1))}
	if g := run.Status.DatasetGeneration; g > 0 && j.input.Type != datav1alpha1.InputClaim && generationKept(ds, g) {
		// Every Job of the run reads the generation recorded at its start, whatever refreshes happen.
		a.Data = generationDir(g)
	}
	if j.input.Type == datav1alpha1.InputS3 || j.input.Type == datav1alpha1.InputEndpoint {
		a.Data = syncspec.SourceURL(ds)
	}
	if readsS3(j.input) || run.Spec.DuringRefresh {
		a.S3Access = syncspec.S3Access(ds) // for the engine, and for the runner's own probe of the bucket
	}
	if j.input.Type == datav1alpha1.InputEndpoint {
		a.S3Access = readersAccess(endpoint)
	}
	if run.Spec.DuringRefresh {
		a.BenchRefresh = refreshArgs(run, ds)
	}
	// CPUs rounded up (1500m: 2 threads under a 1.5-CPU quota); at least one.
	threads := max(1, int(j.config.CPU.Value()))
	switch j.engine.Name {
	case datav1alpha1.EngineCommand:
		a.CommandArgs = j.engine.Command
	case datav1alpha1.EnginePolars:
		a.Threads, a.PolarsEngine, a.PolarsForceAsync = threads, j.engine.PolarsEngine, ptr.Deref(j.engine.ForceAsync, false)
	case datav1alpha1.EngineSpark:
		a.Threads = threads // the driver's; the executors' task slots are in its Spark configuration
	default:
		a.Engine, a.Threads = string(datav1alpha1.EngineDuckDB), threads
		for _, st := range j.engine.Settings {
			a.DuckDBSettings = append(a.DuckDBSettings, st.Name+"="+st.Value)
		}
		if m := j.engine.MemoryLimit; m == "None" {
			a.MemoryLimit = "none"
		} else if m != "Auto" {
			a.MemoryLimit = m // a size, or empty: the runner's default, auto
		}
	}
	switch {
	case j.input.Type == datav1alpha1.InputMixedStaged:
		a.FreshData, a.FreshPrefixes = scratchPath, ds.Spec.Fresh // withStageStep stages them there
	case j.input.Type == datav1alpha1.InputMixedDirect && j.engine.Name != datav1alpha1.EngineCommand:
		// Static tables from the volume; the fresh prefixes straight from the bucket (a command engine
		// learns where they are from its environment: withBucket).
		a.FreshData, a.FreshPrefixes = syncspec.SourceURL(ds), ds.Spec.Fresh
	}
	return a
}

// isolationArg is the engine's isolation for the runner's --isolation: process unless it says
// session (an object stored before the field existed has none).
func isolationArg(e datav1alpha1.BenchEngine) string {
	if e.Isolation == datav1alpha1.IsolationSession || e.Name == datav1alpha1.EngineSpark {
		return wire.IsolationSession
	}
	return wire.IsolationProcess
}

// refreshArgs tell a run during refreshes what to rewrite, where and how often.
func refreshArgs(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset) wire.BenchRefresh {
	a := wire.BenchRefresh{DuringRefresh: true, RefreshSource: syncspec.SourceURL(ds),
		RefreshPercent: wire.DefaultRefreshPercent, RefreshEvery: refreshEvery(run)}
	if rf := run.Spec.Refresh; rf != nil && rf.Percent != nil {
		a.RefreshPercent = int(*rf.Percent)
	}
	return a
}

// refreshEvery is the period of a run's rewrites and refresh requests.
func refreshEvery(run *datav1alpha1.BenchRun) time.Duration {
	if rf := run.Spec.Refresh; rf != nil {
		return parseDuration(rf.Every, wire.DefaultRefreshEvery)
	}
	return wire.DefaultRefreshEvery
}

// mountInput mounts the volume an input reads, read-only at /data: the Dataset's claim, another
// claim, or for a Dataset with per-node copies the node's copy of the pinned generation.
func mountInput(pod *corev1.PodSpec, c *corev1.Container, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, in datav1alpha1.BenchInput) {
	if in.Type == datav1alpha1.InputS3 {
		return
	}
	if in.Type == datav1alpha1.InputEndpoint {
		placeOnCopies(pod, run, ds) // it reads its node's copy by S3, with nothing mounted
		return
	}
	if readsCopies(ds, in) {
		mountCopy(pod, c, run, ds)
		return
	}
	claim := inputClaim(ds, in)
	c.VolumeMounts = append([]corev1.VolumeMount{{Name: "data", MountPath: jobs.DataMountPath, ReadOnly: true}}, c.VolumeMounts...)
	pod.Volumes = append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true}}}}, pod.Volumes...)
}

// inputClaim is the PersistentVolumeClaim a Job of input in mounts: the Dataset's, or the claim input's
// own; "" for an input that mounts none (s3, per-node copies).
func inputClaim(ds *datav1alpha1.Dataset, in datav1alpha1.BenchInput) string {
	switch {
	case in.Type == datav1alpha1.InputS3 || in.Type == datav1alpha1.InputEndpoint || readsCopies(ds, in):
		return ""
	case in.Type == datav1alpha1.InputClaim:
		return in.ClaimName
	}
	return dataset.ClaimName(ds)
}

// injectRunner runs the bench container in another image, with the static runner injected: an init
// container in pqcache's image copies it into a shared volume, and the runner starts the engine per
// query.
func injectRunner(pod *corev1.PodSpec, c *corev1.Container, image string, opts jobs.WorkerOptions) {
	c.Image, c.ImagePullPolicy = image, corev1.PullIfNotPresent
	c.Command = []string{runnerDir + "/" + "pqcache-runner"}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "pqcache-runner", MountPath: runnerDir, ReadOnly: true})
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "pqcache-runner", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name: "install-runner", Image: opts.Image, ImagePullPolicy: opts.ImagePullPolicy,
		Args:            []string{"install-runner", runnerDir},
		SecurityContext: c.SecurityContext,
		Resources:       c.Resources,
		VolumeMounts:    []corev1.VolumeMount{{Name: "pqcache-runner", MountPath: runnerDir}},
	})
}

// withBucket gives a container that reads the bucket the Dataset's credentials and endpoint, as the
// standard AWS environment variables (which a command engine reads too), and for a mixed-direct input
// where its fresh prefixes are. A Dataset that reads its bucket as a ServiceAccount lends it to no
// BenchRun: the run names it itself (benchServiceAccount, refusedAccount).
func withBucket(c *corev1.Container, ds *datav1alpha1.Dataset, in datav1alpha1.BenchInput) {
	s3 := ds.Spec.Source.S3
	c.Env = append(c.Env, jobs.CredentialsEnv(ds)...)
	if s3.Endpoint != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: "AWS_ENDPOINT_URL", Value: s3.Endpoint})
	}
	if s3.Region != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: "AWS_REGION", Value: s3.Region})
	}
	if in.Type == datav1alpha1.InputMixedDirect {
		c.Env = append(c.Env,
			corev1.EnvVar{Name: wire.EnvFreshURL, Value: syncspec.SourceURL(ds)},
			corev1.EnvVar{Name: wire.EnvFreshPrefixes, Value: strings.Join(ds.Spec.Fresh, ",")})
	}
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
