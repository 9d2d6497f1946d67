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
	"cmp"
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datav1alpha1 "github.com/pqcache/pqcache/api/v1alpha1"
	"github.com/pqcache/pqcache/api/wire"
	"github.com/pqcache/pqcache/controllers/admission"
	"github.com/pqcache/pqcache/controllers/jobs"
)

// Reconciler runs a BenchRun: when its Dataset is Ready, one Job per configuration × input runs
// `pqcache bench`. Each Job's summary (its termination message) is recorded in status once, when the
// Job finishes; from then on the record is the truth, and the Job may be garbage-collected. A
// Succeeded condition ends the run. A BenchRun is one-shot: its spec cannot change, and a finished run
// is left as it is.
type Reconciler struct {
	client.Client
	// APIReader reads pods, events and Jobs uncached: pods only for a run's own Jobs, and Jobs to tell
	// a Job that is gone from one the cache has not seen yet.
	APIReader client.Reader
	Clock     clock.PassiveClock
	Worker    jobs.WorkerOptions
	// MaxConcurrentJobs caps bench Jobs running at once across the cluster (0: no cap); the Jobs
	// waiting longest start first, so one big run cannot starve the others, and measurements do not
	// fight over nodes more than the cap allows.
	MaxConcurrentJobs int
	// MaxJobsPerNode caps the unfinished bench pods on one node (0: no cap); with the cluster cap,
	// a Job is admitted only when one of the nodes it can run on has room (placement.go; controllers/admission).
	MaxJobsPerNode int
	// Namespaces are the watched namespaces (none: all), where the per-node admission counts pods.
	Namespaces []string
	// SweepInterval is how often the admission queue drops keys of runs that are gone (default 5m).
	SweepInterval time.Duration
	// Prices are the operator's prices (--prices-file); nil: the built-in list prices.
	Prices *Prices

	admission *admission.Queue
}

// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=data.pqcache.dev,resources=benchruns/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=list
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get

// Reconcile advances one BenchRun and writes its status once, if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var run datav1alpha1.BenchRun
	if err := r.Get(ctx, req.NamespacedName, &run); err != nil {
		if apierrors.IsNotFound(err) {
			r.admission.ForgetOwner(req.NamespacedName) // deleted, maybe while its Jobs waited for a slot
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := run.DeepCopy()
	result, err := r.reconcileRun(ctx, &run)
	run.Status.ObservedGeneration = run.Generation
	run.Status.Shape = fmt.Sprintf("%d×%d×%d", len(runEngines(&run)), len(run.Spec.Configs), len(run.Spec.Inputs))
	if run.Status.StartTime != nil {
		run.Status.Duration = wire.Duration(time.Duration(run.Status.DurationMillis) * time.Millisecond)
	}
	changed := !equality.Semantic.DeepEqual(orig.Status, run.Status)
	if written, res, werr := jobs.WriteStatus(ctx, r.Status(), orig, &run, changed, "benchrun", err); !written {
		return res, werr
	}
	if finished(&run) && !finished(orig) {
		// Once, when the status that says so is written.
		c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded)
		observeRunFinished(run.Namespace, c.Status == metav1.ConditionTrue, c.Reason)
		ctrl.LoggerFrom(ctx).Info("Bench run finished", "benchrun", klog.KObj(&run), "reason", c.Reason)
	}
	return result, err
}

// finished reports whether the run has ended (Succeeded is True or False).
func finished(run *datav1alpha1.BenchRun) bool {
	c := meta.FindStatusCondition(run.Status.Conditions, datav1alpha1.ConditionSucceeded)
	return c != nil && c.Status != metav1.ConditionUnknown
}

// reconcileRun observes the run's Dataset and Jobs, records finished Jobs, starts the Jobs that may
// start, and sets the conditions. Each step is a function of what the previous ones found.
func (r *Reconciler) reconcileRun(ctx context.Context, run *datav1alpha1.BenchRun) (ctrl.Result, error) {
	owner := client.ObjectKeyFromObject(run)
	if finished(run) || !run.DeletionTimestamp.IsZero() {
		r.admission.ForgetOwner(owner)
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	ds, err := r.dataset(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	if run.Status.StartTime == nil {
		if res, started, err := r.start(ctx, run, ds, now); !started {
			return res, err
		}
	}

	owned, err := r.ownedJobs(ctx, run)
	if err != nil {
		return ctrl.Result{}, err
	}
	deadline := run.Status.StartTime.Add(parseDuration(run.Spec.Timeout, 6*time.Hour))
	planned := plannedJobs(run)
	views := observeJobs(planned, run.Status.Results, owned)
	round := &placementRound{read: r.readBenchNodes}
	for i := range views {
		if err := r.advance(ctx, run, ds, &views[i], round, deadline, now); err != nil {
			return ctrl.Result{}, err
		}
	}
	var dataBytes int64
	if ds != nil && ds.Status.Manifest != nil {
		dataBytes = ds.Status.Manifest.Bytes
	}
	facts, err := r.priceRun(ctx, run, ds)
	if err != nil {
		return ctrl.Result{}, err
	}
	refreshWait, err := r.ensureRefreshes(ctx, run, ds, views, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	sum := summarizeRun(run, views, dataBytes, !now.Before(deadline))
	applyRunSummary(run, sum, now)
	setCacheCosts(run, facts)
	if finished(run) {
		r.admission.ForgetOwner(owner)
		return ctrl.Result{}, nil
	}
	next := time.Minute
	if sum.starting || len(sum.stuck) > 0 || len(sum.conflicts) > 0 || len(sum.rejected) > 0 || placementHeld(views) {
		next = 10 * time.Second // what the scheduler and kubelet say is not a Job event: look again sooner
	}
	if refreshWait > 0 {
		next = min(next, refreshWait)
	}
	return ctrl.Result{RequeueAfter: max(time.Second, min(deadline.Sub(now), next))}, nil
}

// start starts a run whose Dataset and workload are ready: it records what the run reads (the
// Dataset's generation, the workload and its queries) and copies a user's workload for the Jobs.
// started is false when the run waits, or was refused: the reconcile ends with (res, err).
func (r *Reconciler) start(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, now time.Time) (res ctrl.Result, started bool, err error) {
	owner := client.ObjectKeyFromObject(run)
	g := startGate(run, ds, r.Worker.ReadersEndpoint)
	switch {
	case g.refuse != "":
		finishRun(run, datav1alpha1.ReasonUnsupported, g.refuse, now)
		r.admission.ForgetOwner(owner)
		return ctrl.Result{}, false, nil
	case g.wait != "":
		setWaiting(run, datav1alpha1.ReasonWaitingForDataset, g.wait)
		return ctrl.Result{}, false, nil // the Dataset's creation and status changes wake us
	}
	rw, g, err := r.loadWorkload(ctx, run)
	switch {
	case err != nil:
		return ctrl.Result{}, false, err
	case g.refuse != "":
		finishRun(run, wire.ReasonInvalidWorkload, g.refuse, now)
		r.admission.ForgetOwner(owner)
		return ctrl.Result{}, false, nil
	case g.wait != "":
		// A ConfigMap is not watched: look again shortly.
		setWaiting(run, datav1alpha1.ReasonWaitingForWorkload, g.wait)
		return ctrl.Result{RequeueAfter: 10 * time.Second}, false, nil
	}
	if err := r.copyWorkload(ctx, run, rw); err != nil {
		return ctrl.Result{}, false, err
	}
	run.Status.StartTime = &metav1.Time{Time: now}
	run.Status.Workload, run.Status.Queries = rw.w.Name, int32(len(rw.names))
	if ds.Status.Manifest != nil {
		run.Status.DatasetDigest = ds.Status.Manifest.Digest
		run.Status.DatasetGeneration = ds.Status.Manifest.Generation
	}
	return ctrl.Result{}, true, nil
}

// dataset is the run's Dataset, or nil when it does not exist.
func (r *Reconciler) dataset(ctx context.Context, run *datav1alpha1.BenchRun) (*datav1alpha1.Dataset, error) {
	var ds datav1alpha1.Dataset
	if err := r.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: run.Spec.DatasetRef.Name}, &ds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading dataset %s: %w", run.Spec.DatasetRef.Name, err)
	}
	return &ds, nil
}

// ownedJobs lists the Jobs the run controls, by name.
func (r *Reconciler) ownedJobs(ctx context.Context, run *datav1alpha1.BenchRun) (map[string]*batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(run.Namespace), client.MatchingLabels{LabelBenchRun: datav1alpha1.LabelValue(run.Name), jobs.LabelComponent: componentBench}); err != nil {
		return nil, fmt.Errorf("listing bench jobs: %w", err)
	}
	out := map[string]*batchv1.Job{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], run) {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out, nil
}

// gate says whether a run that has not started may: refuse is why it never can, wait why not yet.
type gate struct{ refuse, wait string }

// startGate decides, before the first Job, whether the run can start: its Dataset must exist, serve
// its inputs (an endpoint input through the readers' endpoint, "" if none is served), and be Ready.
func startGate(run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, endpoint string) gate {
	if ds == nil {
		return gate{wait: fmt.Sprintf("Dataset %q does not exist", run.Spec.DatasetRef.Name)}
	}
	if why := cmp.Or(unsupportedWith(run, ds), endpointUnsupported(run, ds, endpoint)); why != "" {
		return gate{refuse: why}
	}
	if !ds.DeletionTimestamp.IsZero() {
		return gate{wait: fmt.Sprintf("Dataset %q is being deleted", ds.Name)}
	}
	if !meta.IsStatusConditionTrue(ds.Status.Conditions, datav1alpha1.ConditionReady) {
		return gate{wait: fmt.Sprintf("Waiting for Dataset %q to be Ready", ds.Name)}
	}
	return gate{}
}

// jobPhase is where one planned Job stands. It is derived each time from status and the Jobs seen,
// never stored.
type jobPhase int

const (
	// jobNotCreated: no record and no Job; it starts when admitted.
	jobNotCreated jobPhase = iota
	// jobRunning: the Job exists and has not finished.
	jobRunning
	// jobFinished: the Job finished and its result is not recorded yet.
	jobFinished
	// jobRecorded: its result is in status; the Job may be gone.
	jobRecorded
	// jobUnseen: status says it was created, but the cache has no such Job: not seen yet, or gone.
	jobUnseen
	// jobQueued: not created, waiting for a slot under the cap.
	jobQueued
	// jobNeverRan: not created, and the run's deadline has passed.
	jobNeverRan
	// jobConflict: a Job of that name exists and belongs to something else.
	jobConflict
	// jobRejected: the API server refused to create it; tried again at the next reconcile.
	jobRejected
)

// jobView is one planned Job with what is known of it.
type jobView struct {
	plan   benchJob
	phase  jobPhase
	job    *batchv1.Job
	record *datav1alpha1.BenchResult // its entry in status.results, if any
	// result is the entry to keep in status for this Job (recorded, or recorded now).
	result *datav1alpha1.BenchResult
	// pods, for a running Job: whether some pod has not started, and what keeps it from running.
	podState   jobs.PodState
	podProblem jobs.PodProblem
	conflict   string
	// rejected, for a Job the API server refused, is what it said.
	rejected string
	// waitFor, for a queued Job, is what it waits for other than a slot under the cap.
	waitFor string
	// waitNode, for a Job queued by the per-node admission, is why no node it can run on has room
	// (empty when it waits for a slot, or for a Job admitted before it to be placed).
	waitNode string
	// placementHeld: queued while an admitted Job waits for a node, which a pod placement (not a Job
	// event) releases.
	placementHeld bool
}

// placementHeld says whether some Job waits on the per-node admission: a pod placed elsewhere, which
// no Job event announces, may release it, so the run looks again soon.
func placementHeld(views []jobView) bool {
	for _, v := range views {
		if v.phase == jobQueued && v.placementHeld {
			return true
		}
	}
	return false
}

// observeJobs matches the planned Jobs with their records in status and the Jobs that exist.
func observeJobs(planned []benchJob, results []datav1alpha1.BenchResult, owned map[string]*batchv1.Job) []jobView {
	records := map[string]*datav1alpha1.BenchResult{}
	for i := range results {
		records[results[i].JobName] = &results[i]
	}
	views := make([]jobView, len(planned))
	for i, p := range planned {
		v := jobView{plan: p, record: records[p.name], job: owned[p.name]}
		switch {
		case v.record != nil && v.record.CompletionTime != nil:
			v.phase, v.result = jobRecorded, v.record
		case v.job != nil && jobs.StateOf(v.job).Finished:
			v.phase = jobFinished
		case v.job != nil:
			v.phase = jobRunning
		case v.record != nil:
			v.phase = jobUnseen
		default:
			v.phase = jobNotCreated
		}
		views[i] = v
	}
	return views
}

// advance does what one Job's phase asks: record a finished Job, look at a running Job's pods, tell a
// vanished Job from one the cache has not seen yet, or start one.
func (r *Reconciler) advance(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, v *jobView, round *placementRound, deadline, now time.Time) error {
	key := benchKey(run, v.plan)
	switch v.phase {
	case jobFinished:
		r.admission.Running(key)
		r.admission.Placed(key)
		pods, err := jobs.ListJobPods(ctx, r.APIReader, v.job)
		if err != nil {
			return err
		}
		res := benchResultFrom(v.job, jobs.StateOf(v.job), pods)
		res.StartTime, res.CompletionTime = &v.job.CreationTimestamp, &metav1.Time{Time: now}
		placeResult(&res, pods, func(node string) string { return r.zoneOf(ctx, node) })
		v.result = &res
	case jobRunning:
		r.admission.Running(key)
		pods, err := jobs.ListJobPods(ctx, r.APIReader, v.job)
		if err != nil {
			return err
		}
		if placed(pods) {
			r.admission.Placed(key)
		}
		if pods, err = r.withSparkExecutors(ctx, run, v.plan, pods); err != nil {
			return err
		}
		if v.podState, v.podProblem, err = jobs.JobPodProblem(ctx, r.APIReader, v.job, pods, now); err != nil {
			return err
		}
	case jobUnseen:
		var j batchv1.Job
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: run.Namespace, Name: v.plan.name}, &j)
		switch {
		case err == nil && metav1.IsControlledBy(&j, run):
			v.phase, v.job = jobRunning, &j // the cache has not caught up yet; the next Job event wakes us
		case err == nil || apierrors.IsNotFound(err):
			v.phase = jobRecorded
			v.result = lostResult(v.record, now)
		default:
			return fmt.Errorf("reading job %s: %w", v.plan.name, err)
		}
	case jobNotCreated:
		if !now.Before(deadline) {
			v.phase = jobNeverRan
			return nil
		}
		if ds == nil {
			// Deleted after the run started: the Jobs that have not started never will.
			v.phase = jobNeverRan
			return nil
		}
		if why := generationHeldNowhere(run, ds, v.plan.input); why != "" {
			v.phase, v.waitFor = jobQueued, why // the Dataset's status changes wake us
			return nil
		}
		ok, avoid, err := r.admitBench(ctx, run, ds, v, round, now)
		if err != nil || !ok {
			v.phase = jobQueued
			return err
		}
		return r.create(ctx, run, ds, v, avoid, deadline.Sub(now), now)
	}
	return nil
}

// create starts one Job. A Job of the same name that the run controls (created by an earlier
// reconcile the cache has not caught up with) is taken as started; one that belongs to something else
// is a conflict the user must see.
func (r *Reconciler) create(ctx context.Context, run *datav1alpha1.BenchRun, ds *datav1alpha1.Dataset, v *jobView, avoid []string, budget time.Duration, now time.Time) error {
	if v.plan.engine.Name == datav1alpha1.EngineSpark {
		if err := r.ensureSparkDriver(ctx, run, ds, v.plan); err != nil {
			return err
		}
	} else if err := r.ensureBenchAccount(ctx, run); err != nil {
		return err
	}
	job := buildBenchJob(run, ds, v.plan, r.Worker, budget)
	withBenchPlacement(job, run.Spec.Exclusive, r.MaxJobsPerNode, avoid)
	if err := controllerutil.SetControllerReference(run, job, r.Scheme()); err != nil {
		return err
	}
	err := r.Create(ctx, job)
	if apierrors.IsAlreadyExists(err) {
		var existing batchv1.Job
		if gerr := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), &existing); gerr != nil {
			return fmt.Errorf("reading existing %s: %w", jobs.Describe(job), gerr)
		}
		if !metav1.IsControlledBy(&existing, run) {
			v.phase, v.conflict = jobConflict, fmt.Sprintf("Job %s already exists and does not belong to this BenchRun; delete or rename it", job.Name)
			r.admission.Forget(types.NamespacedName{Namespace: run.Namespace, Name: run.Name + "/" + v.plan.name})
			return nil
		}
		job, err = &existing, nil
	}
	if err != nil {
		r.admission.Forget(types.NamespacedName{Namespace: run.Namespace, Name: run.Name + "/" + v.plan.name})
		if refusedByAPIServer(err) {
			// Retrying as an error would say it only in the manager's log: the user must see it.
			v.phase, v.rejected = jobRejected, fmt.Sprintf("the API server refused %s: %v", jobs.Describe(job), err)
			return nil
		}
		return fmt.Errorf("creating bench %s: %w", jobs.Describe(job), err)
	}
	v.phase, v.job = jobRunning, job
	v.result = &datav1alpha1.BenchResult{Engine: engineLabel(v.plan.engine), Config: v.plan.config.Name, Input: inputLabel(v.plan.input), JobName: job.Name, StartTime: &metav1.Time{Time: now}}
	return nil
}

// refusedByAPIServer says the API server answered a create with a refusal of the object (a quota, a
// policy, a webhook's denial, an invalid field), not with a failure of its own that a retry may clear.
func refusedByAPIServer(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// zoneOf is a node's zone, or "" when the node is gone or has none.
func (r *Reconciler) zoneOf(ctx context.Context, node string) string {
	var n corev1.Node
	if err := r.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return ""
	}
	return n.Labels[corev1.LabelTopologyZone]
}

// lostResult records a Job that vanished before its result was recorded: none of its queries ran as
// far as the run can tell.
func lostResult(started *datav1alpha1.BenchResult, now time.Time) *datav1alpha1.BenchResult {
	r := *started
	r.CompletionTime = &metav1.Time{Time: now}
	r.Queries = []datav1alpha1.QueryResult{{Name: wire.WholeRun, Status: datav1alpha1.QueryNotRun}}
	r.Message = fmt.Sprintf("Job %s was deleted before its result was recorded", r.JobName)
	return &r
}

// SetupWithManager registers the reconciler; it watches its Jobs and the Datasets runs wait for, and
// sweeps the admission queue of runs that are gone.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.admission = admission.NewQueue(r.MaxConcurrentJobs)
	sweep := admission.NewSweeper(r.admission, r.SweepInterval, func() client.Object { return &datav1alpha1.BenchRun{} })
	if err := sweep.Add(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&datav1alpha1.BenchRun{}).
		Owns(&batchv1.Job{}).
		Watches(&datav1alpha1.Dataset{}, handler.EnqueueRequestsFromMapFunc(r.runsOfDataset)).
		// When any bench Job finishes or goes, a slot frees up: wake the runs with Jobs queued for one.
		Watches(&batchv1.Job{}, admission.SlotFreed(r.admission, componentBench)).
		WatchesRawSource(sweep.Source()).
		Named("benchrun").
		Complete(r)
}

// runsOfDataset wakes the unfinished runs that read a Dataset when it changes.
func (r *Reconciler) runsOfDataset(ctx context.Context, obj client.Object) []reconcile.Request {
	var runs datav1alpha1.BenchRunList
	if err := r.List(ctx, &runs, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, run := range runs.Items {
		if run.Spec.DatasetRef.Name == obj.GetName() && run.Status.CompletionTime == nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&run)})
		}
	}
	return reqs
}
